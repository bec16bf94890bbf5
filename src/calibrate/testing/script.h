// The stand-in libcuda.so.1's script: what the fake GPUs are and how fast
// their copies run. Named by the environment variable
// GPULENS_FAKE_CUDA_SCRIPT; one directive per line, '#' starts a comment,
// tokens may be "double quoted". Devices are CUDA ordinals.
//
//   init NO_DEVICE                         # cuInit fails with this code
//   device 0 uuid=GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52 pci=0000:18:00.0
//            name="NVIDIA H100 80GB HBM3" mem=85899345920
//   bandwidth 0 h2d 1048576=2e10 67108864=5.2e10   # bytes/s by copy size
//   bandwidth 0 d2h 67108864=5.0e10                # (largest size <= the copy)
//   bandwidth 0 bidir_h2d 67108864=4.0e10          # while the other direction runs
//   jitter 0 h2d 1 1 0.5                           # per-copy time factor, cycling
//   peer 0 1 bandwidth=2.5e10                      # 0 and 1 may access each other;
//                                                  # copies 0 -> 1 at 25 GB/s
//   error 0 mem_alloc OUT_OF_MEMORY               # every cuMemAlloc on device 0
//   fail 0 after=40 code=UNKNOWN                   # from the 41st copy on, every call
//
// Without a bandwidth line a direction runs at 1e10 bytes/s; bidirectional
// directions fall back to the unidirectional figure.
//
// Thread-safety: parsed once; the fake guards its state with a mutex.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpulens::fake_cuda {

struct Device {
  std::string uuid;  // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  std::string pci;   // dddd:bb:dd.f
  std::string name = "NVIDIA H100 80GB HBM3";
  unsigned long long mem = 85899345920ull;
  std::map<std::string, std::map<unsigned long long, double>> bandwidth;  // direction -> size -> bytes/s
  std::map<std::string, std::vector<double>> jitter;                      // direction -> factors
  std::map<int, double> peers;                                            // peer -> bytes/s to it
  std::map<std::string, int> errors;                                      // call -> CUresult
  long fail_after = -1;  // copies before the device fails; -1 never
  int fail_code = 999;
};

struct Script {
  int init_error = 0;
  int driver_version = 12060;
  std::vector<Device> devices;
};

// Parses `text`; on error returns false and sets `error` to "line N: why".
bool parse_script(const std::string& text, Script& out, std::string& error);
// CUresult for "OUT_OF_MEMORY" or "CUDA_ERROR_OUT_OF_MEMORY"; -1 if unknown.
int error_code(const std::string& name);

}  // namespace gpulens::fake_cuda
