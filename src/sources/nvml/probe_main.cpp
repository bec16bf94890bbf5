// gpulens-nvml-probe: opens the NVML source on this machine and prints, once
// per interval, every value of every GPU as "<metric>{<labels>} <value>"
// lines, followed by "# collection_us <n>" (the cost of that collection);
// "# gpus <n>" first. Used by tools/device-check.sh on real hardware; needs
// no agent. An empty library means the driver's; calibration names a file
// written by `gpulens calibrate`; slow_interval_ms is
// source.nvml.slow_interval (0: every field every collection).
//
//   gpulens-nvml-probe [seconds=5] [interval_ms=1000] [library] [calibration] [slow_interval_ms=10000]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "sources/nvml/nvml_source.h"

int main(int argc, char** argv) {
  using namespace gpulens;
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5;
  const int interval = argc > 2 ? std::atoi(argv[2]) : 1000;
  NvmlOptions o;
  if (argc > 3 && argv[3][0] != '\0') o.library = argv[3];
  if (argc > 4) o.calibration_file = argv[4];
  if (argc > 5) o.slow_interval_ms = std::atoll(argv[5]);
  NvmlSource src(o);
  SeriesRegistry reg;
  if (Status s = src.open(reg); !s) {
    std::fprintf(stderr, "nvml: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("# gpus %d\n", reg.gpu_count());
  Frame frame(reg);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  while (std::chrono::steady_clock::now() < end) {
    frame.clear(0);
    const auto t0 = std::chrono::steady_clock::now();
    Status s = src.sample(frame);
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count();
    if (!s) std::fprintf(stderr, "sample: %s\n", s.message().c_str());
    std::lock_guard lock(reg.mutex());
    for (const auto& v : frame.values()) {
      const Series& se = reg.series(v.slot);
      std::printf("%s{gpu=\"%d\"%s%s} %.17g\n", std::string(field(se.field).name).c_str(), se.gpu,
                  se.extra.empty() ? "" : ",", se.extra.render().c_str(), v.value);
    }
    std::printf("# collection_us %lld\n", static_cast<long long>(us));
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(interval));
  }
  for (const auto& n : src.notices()) std::printf("# notice %s\n", n.c_str());
  return 0;
}
