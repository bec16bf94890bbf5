// The stand-in NVML's script: what the fake GPUs report, call by call.
//
// A script is a text file, one directive per line, '#' starts a comment,
// tokens are separated by blanks and may be "double quoted". GPU indices are
// numbers or '*' (every GPU). Call counts are 1-based and kept per GPU and
// per key, so "the 3rd power read of GPU 1" is well defined.
//
//   gpu 0 name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaa arch=9 pci=00000000:18:00.0 gpm=on
//   value * power_mw 350000 360000      # 1st call 350 W, then 360 W for ever
//   value 0 field.138.0 1000 3000       # NVLink link 0 TX KiB counter
//   error 0 temp NOT_SUPPORTED          # every call
//   error 1 gpm_sample NO_PERMISSION from=2
//   lost 1 at=3                         # from the 3rd utilisation read on
//   hang 0 power_mw 3000 times=1        # the first such call sleeps 3 s
//   process 0 pid=4242 mem=1073741824 sm=37
//   topology 0 1 NODE                   # common ancestor level
//   nvlink 0 link=0 peer=1              # link 0 of GPU 0 is up, to GPU 1
//   xid 0 79                            # delivered by the event API
//   value 0 recovery_action 0 1          # NVML field 230: none, then GPU reset
//   value 0 nvlink_recovery_failed 0 2   # NVML field 214 over all links (also _successful, _events)
//   value 0 repair_channel 1             # nvmlDeviceGetRepairStatus (also repair_tpc)
//   init DRIVER_NOT_LOADED              # nvmlInit_v2 fails
//   cuda 12040                          # CUDA driver version (0: no libcuda)
//   mig 0 mode=on pending=on            # MIG mode (absent: MIG not supported)
//   instance 0 gi=7 ci=0 profile=1g.10gb mem=10737418240 used=1048576
//   process 0 pid=4243 mem=1048576 gi=7 ci=0   # runs in that MIG instance
//
// Calls on a MIG device handle count and look up their keys with the
// prefix "mig.<gi>.<ci>." ("value 0 mig.7.0.mem_used 10 20", "error 0
// mig.7.0.gpm_sample NO_PERMISSION"); GPM metrics of an instance fall back
// to the GPU's own ("gpm.2"). With MIG mode on, the whole-GPU utilisation,
// per-process utilisation and row-remapping calls answer NOT_SUPPORTED, as
// a real driver does.
//
// Keys of `value`/`error`/`hang` are listed in docs/nvml.md (stand-in
// section) and are the names used in fake_nvml.cpp.
//
// Thread-safety: parsed once; the fake guards its state with a mutex.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpulens::fake {

struct Rule {
  int code = 0;     // NVML error code
  long from = 1;    // first call it applies to
};

struct Process {
  unsigned pid = 0;
  unsigned long long mem = 0;
  unsigned sm = 0;
  int gi = -1, ci = -1;  // MIG instance, -1: none
};

struct MigDevice {
  int parent = 0;        // GPU index
  unsigned gi = 0, ci = 0;
  std::string profile = "1g.10gb";
  std::string uuid;
  unsigned long long mem = 10737418240ULL, used = 0;
  std::string prefix() const { return "mig." + std::to_string(gi) + "." + std::to_string(ci) + "."; }
};

struct Gpu {
  std::string name = "NVIDIA H100 80GB HBM3";
  std::string uuid;
  std::string pci;
  std::string serial;
  unsigned arch = 9;
  bool gpm = true;
  long lost_at = 0;  // 0: never
  std::map<std::string, std::vector<double>> values;
  std::map<std::string, Rule> errors;
  std::map<std::string, std::pair<long, long>> hang_ms;  // key -> (ms, calls; 0 = all)
  std::vector<Process> processes;
  std::map<int, int> nvlink_peer;  // link -> peer GPU index (-1: up, no GPU peer)
  std::map<int, unsigned> topology;  // peer -> level
  std::vector<unsigned long long> xids;
  int mig_mode = -1, mig_pending = -1;  // -1: MIG not supported
  std::vector<MigDevice> migs;          // in MIG device index order
};

struct Script {
  int init_error = 0;
  std::vector<Gpu> gpus;
  std::string driver = "550.54.15";
  int cuda = 12040;  // nvmlSystemGetCudaDriverVersion_v2; 0: LIBRARY_NOT_FOUND (no libcuda)
};

// Parses `text`; on error returns false and sets `error` to "line N: why".
bool parse_script(const std::string& text, Script& out, std::string& error);
// NVML error code for a name like "GPU_IS_LOST" or "NVML_ERROR_GPU_IS_LOST"; -1 if unknown.
int error_code(const std::string& name);

}  // namespace gpulens::fake
