// What reading exposition text costs each of its readers, on one large
// dcgm-exporter page (tests/data/dcgm-exporter/golden.prom's series for 64
// nodes' GPUs, about 1 MiB):
//   - the push route's body parser (every line's labels parsed and kept);
//   - the scrape source's page mapping (a fresh parser: every series new,
//     mapped onto the catalog);
//   - replay of the page as a recording, 10 timestamps (series looked up by
//     their text after the first, as a long recording reads).
// Only interfaces that predate the shared parser, so the same file measures
// the readers before and after it (docs/PERFORMANCE.md, "Exposition parsing").
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>
#include <string>

#include "diagnose/replay_input.h"
#include "push/push_body.h"
#include "sources/scrape/catalog_targets.h"

namespace {

constexpr int kNodes = 64;

// golden.prom's sample lines, each GPU renamed per node, without comments
// (a push may carry a family's # TYPE once).
std::string big_page() {
  std::ifstream in(GPULENS_SOURCE_DIR "/tests/data/dcgm-exporter/golden.prom");
  std::string line, out;
  std::vector<std::string> samples;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') samples.push_back(line);
  }
  for (int n = 0; n < kNodes; ++n) {
    const std::string node = "GPU-n" + std::to_string(n) + "-";
    for (std::string s : samples) {
      if (const size_t u = s.find("UUID=\"GPU-"); u != std::string::npos) s.replace(u + 6, 4, node);
      out += s;
      out += '\n';
    }
  }
  return out;
}

const std::string& page() {
  static const std::string p = big_page();
  return p;
}

// The page with a timestamp on every sample, `steps` times 15 s apart.
std::string recording(int steps) {
  std::string out;
  for (int i = 0; i < steps; ++i) {
    const std::string ts = " " + std::to_string(1'764'639'600 + 15 * i) + "\n";
    std::istringstream in(page());
    std::string line;
    while (std::getline(in, line)) out += line + ts;
  }
  return out + "# EOF\n";
}

void BM_PushTextBody(benchmark::State& state) {
  gpulens::push::PushLimits limits;
  limits.max_series_per_push = 1'000'000;
  limits.max_body_bytes = 1u << 30;
  for (auto _ : state) {
    auto r = gpulens::push::parse_text_body(page(), limits);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * page().size()));
}
BENCHMARK(BM_PushTextBody)->Unit(benchmark::kMillisecond);

void BM_ScrapeMapPage(benchmark::State& state) {
  for (auto _ : state) {
    auto r = gpulens::scrape::map_page(page(), "http://127.0.0.1:9400/metrics");
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * page().size()));
}
BENCHMARK(BM_ScrapeMapPage)->Unit(benchmark::kMillisecond);

void BM_ReplayRecording(benchmark::State& state) {
  static const std::string rec = recording(10);
  for (auto _ : state) {
    gpulens::diagnose::ReplayInfo info;
    auto r = gpulens::diagnose::load_replay_text(rec, "bench.om", info);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * rec.size()));
}
BENCHMARK(BM_ReplayRecording)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
