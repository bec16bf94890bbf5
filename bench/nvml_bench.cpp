// Cost of one full NVML collection with the stand-in libnvidia-ml.so.1:
// 8 GPUs, 8 compute processes each (PID -> pod through fixture procfs),
// NVLink, GPM, topology. Reports time per collection and per GPU, and the
// process RSS after the run.
//
//   build/bench/nvml_bench --benchmark_min_time=2
//
// /0 reads every field every collection (as before tiering), /10000 the
// default slow tier; BM_NvmlCollect8GpusMig7 the same GPUs split 7x1g.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "sources/nvml/nvml_source.h"

namespace {

// CPU seconds of the whole process (the worker thread and the stand-in
// included): stable on a loaded machine, where wall time is not.
double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return 0;
}

// 8 GPUs x 8 processes; with `mig` instances per GPU (7: 7x1g), MIG mode on
// and the processes spread over the instances.
void collect_8_gpus(benchmark::State& state, int64_t slow_interval_ms, int mig) {
  using namespace gpulens;
  const std::string script = "/tmp/gpulens_nvml_bench_script.txt";
  {
    std::ofstream s(script);
    for (int g = 0; g < 8; ++g) {
      s << "gpu " << g << " name=\"NVIDIA H100 80GB HBM3\" arch=9 gpm=on\n";
      if (mig > 0) s << "mig " << g << " mode=on\n";
      for (int i = 0; i < mig; ++i) s << "instance " << g << " gi=" << 7 + i << " ci=0 profile=1g.10gb\n";
      for (int p = 0; p < 8; ++p) {
        s << "process " << g << " pid=4242 mem=" << (1 << 30) << " sm=" << p * 10;
        if (mig > 0) s << " gi=" << 7 + p % mig << " ci=0";
        s << "\n";
      }
      for (int l = 0; l < 4; ++l) s << "nvlink " << g << " link=" << l << " peer=" << (g ^ 1) << "\n";
      s << "value " << g << " field.138 1000\nvalue " << g << " field.139 1000\n";
    }
  }
  setenv("GPULENS_FAKE_NVML_SCRIPT", script.c_str(), 1);
  NvmlOptions o;
  o.slow_interval_ms = slow_interval_ms;
  o.library = GPULENS_FAKE_NVML;
  o.proc_root = std::string(GPULENS_SOURCE_DIR) + "/tests/data/nvml/proc";
  o.kubelet_root = std::string(GPULENS_SOURCE_DIR) + "/tests/data/nvml/kubelet";
  NvmlSource src(o);
  SeriesRegistry reg;
  if (Status st = src.open(reg); !st) {
    state.SkipWithError(st.message().c_str());
    return;
  }
  Frame frame(reg);
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    frame.clear(0);
    benchmark::DoNotOptimize(src.sample(frame));
  }
  state.counters["values"] = static_cast<double>(frame.values().size());
  // Seconds per GPU per collection (printed with an SI prefix, e.g. 12.3u).
  state.counters["per_gpu"] = benchmark::Counter(static_cast<double>(state.iterations()) * 8,
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  // Process CPU per GPU per collection, microseconds; the slow tier (every
  // source.nvml.slow_interval) is amortised over the collections it skips.
  state.counters["cpu_us_per_gpu"] =
      (process_cpu_seconds() - cpu0) * 1e6 / (static_cast<double>(state.iterations()) * 8);
  state.counters["rss_mib"] = rss_kib() / 1024.0;
}
void BM_NvmlCollect8Gpus(benchmark::State& state) { collect_8_gpus(state, state.range(0), 0); }
// The same GPUs in MIG mode, 7x1g each: 56 instances, memory and GPM per instance.
void BM_NvmlCollect8GpusMig7(benchmark::State& state) { collect_8_gpus(state, state.range(0), 7); }
// Argument: source.nvml.slow_interval in ms (0: every field every collection).
BENCHMARK(BM_NvmlCollect8Gpus)->Arg(0)->Arg(10000)->Unit(benchmark::kMicrosecond)->UseRealTime();  // work runs on the worker thread
BENCHMARK(BM_NvmlCollect8GpusMig7)->Arg(10000)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
