// Diagnosis of a day: a 24 h recording of 8 GPUs at 15 s in dcgm-exporter +
// node_exporter (32 CPUs x 8 modes) + vLLM form, generated here, replayed and
// diagnosed end to end. Target: <= 2 s and <= 200 MiB (docs/PERFORMANCE.md).
//
//   diagnose_bench                      # generates into $TMPDIR, runs
//   diagnose_bench --write FILE         # only writes the recording (for the
//                                       # promtool comparison script)
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "diagnose/engine.h"
#include "diagnose/replay_input.h"

namespace {

using namespace gpulens::diagnose;

constexpr int kGpus = 8;
constexpr int kCpus = 32;
constexpr int64_t kStart = 1764410400;
constexpr int kStep = 15;
constexpr int kPoints = 24 * 3600 / kStep;

// Writes one series, all of its points, family by family (valid OpenMetrics).
template <typename F>
void series(FILE* f, const char* name, const std::string& labels, F value) {
  char line[512];
  for (int i = 0; i < kPoints; ++i) {
    const int n = std::snprintf(line, sizeof line, "%s{%s} %.6g %lld\n", name, labels.c_str(), value(i),
                                static_cast<long long>(kStart + i * kStep));
    std::fwrite(line, 1, static_cast<size_t>(n), f);
  }
}

void write_recording(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  // The day: healthy, then the input pipeline starves GPUs 0-3 for 6 hours.
  auto starving = [](int gpu, int i) { return gpu < 4 && i > kPoints / 2 && i < kPoints / 2 + 1440; };
  auto wave = [](int i, double a) { return a * std::sin(i * 0.01); };
  struct Gauge {
    const char* name;
    double (*v)(int gpu, int i, bool starved);
  };
  const Gauge gauges[] = {
      {"DCGM_FI_DEV_GPU_UTIL", [](int, int, bool s) { return s ? 45.0 : 96.0; }},
      {"DCGM_FI_DEV_FB_USED", [](int, int, bool) { return 60000.0; }},
      {"DCGM_FI_DEV_FB_FREE", [](int, int, bool) { return 21559.0; }},
      {"DCGM_FI_DEV_GPU_TEMP", [](int, int, bool) { return 66.0; }},
      {"DCGM_FI_DEV_POWER_USAGE", [](int, int, bool s) { return s ? 300.0 : 600.0; }},
      {"DCGM_FI_DEV_SM_CLOCK", [](int, int, bool) { return 1980.0; }},
      {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", [](int, int, bool) { return 0.0; }},
      {"DCGM_FI_DEV_XID_ERRORS", [](int, int, bool) { return 0.0; }},
      {"DCGM_FI_DEV_PCIE_LINK_GEN", [](int, int, bool) { return 5.0; }},
      {"DCGM_FI_DEV_PCIE_MAX_LINK_GEN", [](int, int, bool) { return 5.0; }},
      {"DCGM_FI_DEV_PCIE_LINK_WIDTH", [](int, int, bool) { return 16.0; }},
      {"DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", [](int, int, bool) { return 16.0; }},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", [](int, int, bool s) { return s ? 0.45 : 0.95; }},
      {"DCGM_FI_PROF_SM_ACTIVE", [](int, int, bool s) { return s ? 0.2 : 0.8; }},
      {"DCGM_FI_PROF_SM_OCCUPANCY", [](int, int, bool s) { return s ? 0.15 : 0.5; }},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", [](int, int, bool s) { return s ? 0.1 : 0.5; }},
      {"DCGM_FI_PROF_DRAM_ACTIVE", [](int, int, bool) { return 0.4; }},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", [](int, int, bool) { return 1e9; }},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", [](int, int, bool) { return 2e9; }},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES", [](int, int, bool) { return 5e10; }},
      {"DCGM_FI_PROF_NVLINK_RX_BYTES", [](int, int, bool) { return 5e10; }},
  };
  for (const Gauge& g : gauges) {
    std::fprintf(f, "# TYPE %s gauge\n", g.name);
    for (int gpu = 0; gpu < kGpus; ++gpu) {
      const std::string labels = "gpu=\"" + std::to_string(gpu) + "\",UUID=\"GPU-" + std::to_string(gpu) +
                                 "\",device=\"nvidia" + std::to_string(gpu) +
                                 "\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node1\"";
      series(f, g.name, labels, [&](int i) { return g.v(gpu, i, starving(gpu, i)) + wave(i, 0.001); });
    }
  }
  const std::string inst = "instance=\"node1:9100\",job=\"node\"";
  auto busy = [&](int i) { return starving(0, i) ? 0.97 : 0.3; };
  std::fprintf(f, "# TYPE node_cpu_seconds counter\n");
  const char* modes[] = {"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"};
  for (int cpu = 0; cpu < kCpus; ++cpu) {
    for (const char* mode : modes) {
      const std::string labels = "cpu=\"" + std::to_string(cpu) + "\"," + inst + ",mode=\"" + mode + "\"";
      double acc = 1e5;
      series(f, "node_cpu_seconds_total", labels, [&](int i) {
        const double b = busy(i);
        const double share = std::strcmp(mode, "idle") == 0 ? 1 - b : std::strcmp(mode, "user") == 0 ? b * 0.8
                           : std::strcmp(mode, "system") == 0 ? b * 0.2 : 0.0;
        acc += share * kStep;
        return acc;
      });
    }
  }
  struct Counter {
    const char* family;
    const char* name;
    std::string labels;
    double rate;
  };
  const Counter counters[] = {
      {"node_pressure_cpu_waiting_seconds", "node_pressure_cpu_waiting_seconds_total", inst, 0.05},
      {"node_pressure_io_waiting_seconds", "node_pressure_io_waiting_seconds_total", inst, 0.01},
      {"node_disk_io_time_seconds", "node_disk_io_time_seconds_total", "device=\"nvme0n1\"," + inst, 0.1},
      {"node_disk_read_bytes", "node_disk_read_bytes_total", "device=\"nvme0n1\"," + inst, 1e8},
      {"node_network_receive_bytes", "node_network_receive_bytes_total", "device=\"eth0\"," + inst, 1e8},
      {"node_network_transmit_bytes", "node_network_transmit_bytes_total", "device=\"eth0\"," + inst, 1e8},
      {"node_infiniband_port_data_received_bytes", "node_infiniband_port_data_received_bytes_total",
       "device=\"mlx5_0\",port=\"1\"," + inst, 5e9},
      {"node_infiniband_port_data_transmitted_bytes", "node_infiniband_port_data_transmitted_bytes_total",
       "device=\"mlx5_0\",port=\"1\"," + inst, 5e9},
  };
  for (const Counter& c : counters) {
    std::fprintf(f, "# TYPE %s counter\n", c.family);
    double acc = 1e6;
    series(f, c.name, c.labels, [&](int) { return acc += c.rate * kStep; });
  }
  std::fprintf(f, "# TYPE node_network_speed_bytes gauge\n");
  series(f, "node_network_speed_bytes", "device=\"eth0\"," + inst, [](int) { return 3.125e9; });
  std::fprintf(f, "# TYPE vllm:e2e_request_latency_seconds histogram\n");
  const double les[] = {0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5};
  for (int b = 0; b <= 7; ++b) {
    char le[32];
    if (b == 7) std::snprintf(le, sizeof le, "+Inf"); else std::snprintf(le, sizeof le, "%g", les[b]);
    const std::string labels = "instance=\"node1:8000\",model_name=\"llama\",le=\"" + std::string(le) + "\"";
    double acc = 0;
    series(f, "vllm:e2e_request_latency_seconds_bucket", labels, [&](int) { return acc += (b >= 2 ? 50 : 5) * kStep; });
  }
  std::fprintf(f, "# EOF\n");
  std::fclose(f);
}

std::string recording_path() {
  static const std::string path = [] {
    const std::string p = (std::filesystem::temp_directory_path() / "gpulens_diagnose_24h_8gpu_15s.om").string();
    if (!std::filesystem::exists(p)) write_recording(p);
    return p;
  }();
  return path;
}

void BM_Diagnose24h8Gpus15s(benchmark::State& state) {
  const std::string path = recording_path();
  const double bytes = static_cast<double>(std::filesystem::file_size(path));
  size_t samples = 0, findings = 0;
  for (auto _ : state) {
    ReplayInfo info;
    auto set = load_replay(path, info);
    if (!set) {
      state.SkipWithError(set.status().message().c_str());
      return;
    }
    const Report r = diagnose(*set, Thresholds{});
    samples = info.stats.samples + info.stats.ignored_samples;
    findings = 0;
    for (const auto& h : r.hosts) {
      for (const auto& g : h.gpus) findings += g.findings.size();
    }
    benchmark::DoNotOptimize(r);
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  state.counters["file_MiB"] = bytes / (1 << 20);
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["findings"] = static_cast<double>(findings);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}
BENCHMARK(BM_Diagnose24h8Gpus15s)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--write") {
    write_recording(argv[2]);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
