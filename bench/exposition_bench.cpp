// Cost of rendering /metrics for an 8-GPU node with every field the
// simulator fills (the target: median <= 100 us), per format, with
// gzip, and the cost of one full simulated collection.
#include <benchmark/benchmark.h>

#include "export/exposition.h"
#include "server/gzip.h"
#include "sources/sim/sim_source.h"

namespace gpulens {
namespace {

struct Node {
  SeriesRegistry reg;
  LiveStore live;
  std::unique_ptr<Source> sim;
  int src = live.add_source("sim", true);

  Node() {
    auto s = sim::load_scenario("healthy-training", std::string(GPULENS_SOURCE_DIR) + "/scenarios");
    sim = make_sim_source(std::move(*s), 1, 1.0);
    (void)sim->open(reg);
    Frame f(reg);
    for (int i = 0; i < 3; ++i) {
      f.clear(1'700'000'000'000 + i * 1000);
      (void)sim->sample(f);
      live.publish(src, f);
    }
  }
};

void BM_RenderText(benchmark::State& state) {
  Node n;
  Renderer r;
  const RenderOptions o{.format = Format::kText004, .dcgm_names = state.range(0) != 0};
  size_t bytes = 0;
  for (auto _ : state) bytes = r.render(n.reg, n.live, o).size();
  state.counters["series"] = static_cast<double>(n.live.present_count());
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_RenderText)->Arg(0)->Arg(1)->ArgName("dcgm_names");

void BM_RenderOpenMetrics(benchmark::State& state) {
  Node n;
  Renderer r;
  for (auto _ : state) benchmark::DoNotOptimize(r.render(n.reg, n.live, {.format = Format::kOpenMetrics}).size());
}
BENCHMARK(BM_RenderOpenMetrics);

void BM_RenderAndGzip(benchmark::State& state) {
  Node n;
  Renderer r;
  Gzipper gz;
  std::string out;
  for (auto _ : state) {
    gz.compress(r.render(n.reg, n.live, {}), out);
    benchmark::DoNotOptimize(out.size());
  }
  state.counters["gzip_bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_RenderAndGzip);

void BM_SimCollection(benchmark::State& state) {
  Node n;
  Frame f(n.reg);
  int64_t t = 1'700'000'010'000;
  for (auto _ : state) {
    f.clear(t += 1000);
    (void)n.sim->sample(f);
    n.live.publish(n.src, f);
  }
}
BENCHMARK(BM_SimCollection);

}  // namespace
}  // namespace gpulens

BENCHMARK_MAIN();
