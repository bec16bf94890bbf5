// `gpulens calibrate`: measures every selected GPU's host link (and its
// peer links) with copy engines, so that PCIe utilisation is judged against
// what the link really carries instead of its nominal rate.
//
// The run, per GPU: find it in NVML (identity, link generation/width,
// processes, CPU affinity) and in CUDA, joined by UUID or else by PCI
// domain/bus/device (never by index: CUDA ordinals follow
// CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES); refuse when another process
// uses the GPU unless forced (the result is then marked under_load); pin
// the thread to the GPU's CPUs; sweep host->device, device->host and both
// at once (bandwidth.h); then peer copies for every selected pair that
// allows peer access.
//
//   CalibrateOptions o;  o.gpus = {"0", "GPU-8f2c..."};
//   Result<CalibrationRun> run = run_calibration(o);
//   write_file(path, render_calibration_json(*run));
//
// Thread-safety: run_calibration() changes the calling thread's CPU
// affinity while it runs and restores it before returning.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "calibrate/bandwidth.h"
#include "util/status.h"

namespace gpulens {

struct CalibrateOptions {
  std::string cuda_library = "libcuda.so.1";
  std::string nvml_library = "libnvidia-ml.so.1";
  std::vector<std::string> gpus;  // NVML index, UUID or PCI bus id; empty: all
  bool force = false;             // measure even when other processes use a GPU
  bool peers = true;
  bool bidirectional = true;
  SweepOptions sweep;
  std::function<void(const std::string&)> progress;  // one line per GPU; may be empty
};

struct PeerResult {
  std::string uuid;  // the destination GPU
  int index = 0;     // its NVML index
  double bytes_per_second = 0;
};

struct GpuCalibration {
  int index = 0;  // NVML index
  int cuda_ordinal = 0;
  std::string uuid, name, pci_bus_id;
  unsigned link_gen = 0, link_width = 0;          // current, at calibration
  unsigned link_gen_max = 0, link_width_max = 0;  // what the link can do
  std::string cpus;                               // "0-31": where the thread ran
  std::vector<unsigned> other_pids;               // processes seen on the GPU
  bool under_load = false;                        // measured with --force despite them
  DirectionSweep h2d, d2h, bidir_h2d, bidir_d2h;
  std::vector<PeerResult> peers;
  Status status;  // why this GPU has no result
};

struct CalibrationRun {
  std::string date;          // ISO 8601 UTC
  std::string tool_version;  // gpulens version
  std::string driver;        // NVML driver version
  int cuda_driver = 0;       // cuDriverGetVersion, 1000 x major + 10 x minor
  std::vector<GpuCalibration> gpus;
  bool any_failed() const;
};

// Runs the calibration. Fails as a whole when a library cannot be loaded,
// there is no GPU, a --gpus entry names no GPU, or a GPU is in use and
// `force` is off; a GPU that fails mid-run has its `status` set and the
// others carry on.
Result<CalibrationRun> run_calibration(const CalibrateOptions& options, const std::string& tool_version);

// "1-3,8" for a CPU mask; "" when empty.
std::string cpu_list(const std::vector<unsigned long>& mask);

}  // namespace gpulens
