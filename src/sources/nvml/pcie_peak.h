// The per-direction PCIe peak that PCIe utilisation is measured against.
//
// The article behind gpulens insists on the *measured* peak: 80 % of a
// theoretical Gen5 x16 figure is never reached by real DMA. So the peak is
// chosen in this order, and the basis is exported with it
// (gpu_pcie_peak_bytes_per_second{basis="calibrated|link|model"}):
//   1. calibrated: a calibration file (JSON) names the GPU by UUID or model;
//   2. link: max link generation x max width, per-lane figures after line
//      encoding (PCIe 1-2: 8b/10b, 3-5: 128b/130b, 6: FLIT);
//   3. model: a table of known models (x16 at the model's generation).
//
// Calibration file (written by `gpulens calibrate`, see calibrate/report.h,
// which adds link_gen, link_width, date, tool_version, under_load and more;
// unknown keys are ignored):
//   {"gpus": [{"uuid": "GPU-8f2c...", "pcie_rx_bytes_per_second": 5.3e10,
//              "pcie_tx_bytes_per_second": 5.1e10, "link_gen": 5, "link_width": 16},
//             {"name": "NVIDIA H100 80GB HBM3", "pcie_rx_bytes_per_second": 5.2e10, ...}]}
//
// Thread-safety: pure functions and plain values.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/pcie.h"
#include "util/status.h"

namespace gpulens {


struct PcieCalibration {
  struct Entry {
    std::string uuid, name;
    double rx = 0, tx = 0;  // bytes/s, host->device and device->host
    // As written by `gpulens calibrate`; 0 / empty in hand-written files.
    unsigned link_gen = 0, link_width = 0;  // the link at calibration time
    std::string date, tool_version;
    bool under_load = false;  // measured while other processes used the GPU
  };
  std::vector<Entry> entries;
  const Entry* find(std::string_view uuid, std::string_view name) const;
};

// Parses the calibration JSON; errors name the file and the problem.
Result<PcieCalibration> parse_pcie_calibration(std::string_view json, std::string_view origin);
Result<PcieCalibration> load_pcie_calibration(const std::string& path);

struct PciePeak {
  double rx = 0, tx = 0;  // bytes/s; 0 when nothing is known
  std::string_view basis;  // "calibrated", "link", "model" or empty
};

// gen_max / width_max are 0 when NVML could not tell.
PciePeak choose_pcie_peak(const PcieCalibration* cal, std::string_view uuid, std::string_view name,
                          unsigned gen_max, unsigned width_max);

}  // namespace gpulens
