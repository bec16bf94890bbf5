// What `gpulens calibrate` writes and prints: the calibration file the
// agent reads (source.nvml.calibration, parsed by sources/nvml/pcie_peak.h),
// the table beside the nominal link peak, and the --check comparison.
//
// File (one object per GPU; the agent needs uuid and the two peaks, the
// rest records the conditions of the measurement):
//   {"tool": "gpulens calibrate", "tool_version": "0.1.0",
//    "date": "2026-12-01T10:00:00Z", "driver": "550.54.15", "cuda_driver": 12060,
//    "gpus": [{"uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3",
//              "pci_bus_id": "00000000:18:00.0", "link_gen": 5, "link_width": 16,
//              "pcie_rx_bytes_per_second": 5.6e10,   // host->device peak
//              "pcie_tx_bytes_per_second": 5.5e10,   // device->host peak
//              "bidir_rx_bytes_per_second": 4.9e10, "bidir_tx_bytes_per_second": 4.8e10,
//              "under_load": false, "date": "...", "tool_version": "0.1.0",
//              "sweep": [{"bytes": 4194304, "rx": 5.1e10, "tx": 5.0e10}, ...],
//              "peers": [{"uuid": "GPU-...", "bytes_per_second": 3.7e11}]}]}
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "calibrate/calibrate.h"
#include "sources/nvml/pcie_peak.h"

namespace gpulens {

std::string render_calibration_json(const CalibrationRun& run);
// Per GPU and direction: measured, nominal link peak (max generation x max
// width), ratio; then peers and failures.
std::string render_calibration_table(const CalibrationRun& run);

// A link that lost bandwidth (or link generation/width) since calibration.
struct CheckProblem {
  std::string uuid;
  std::string what;  // "GPU 0 (GPU-...) host->device: 25.1 GB/s now, 52.3 GB/s at calibration (2026-...)"
};

// Compares a short re-measurement with the recorded file: a direction
// below (1 - tolerance) x its recorded peak, or a link trained below the
// generation/width it had at calibration, is a problem. A GPU measured now
// but absent from the file is a problem too (the file is stale).
std::vector<CheckProblem> check_calibration(const PcieCalibration& recorded, const CalibrationRun& now,
                                            double tolerance);

}  // namespace gpulens
