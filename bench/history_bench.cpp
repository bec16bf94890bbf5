// History: append cost, bytes per stored value and the full-window read,
// compressed chunks against the plain float rings they replaced, on the
// series of OpenMetrics recordings (`gpulens record`, tests/data/recordings).
//
//   history_bench FILE.om [FILE.om ...] [--benchmark_* flags]
//
// Every recording's series go into one History, record by record (counters
// as counters: History keeps their rates), as the agent's recorder would.
// It prints bytes per stored value, then times:
//   BM_Append        History::record of every series, per value
//   BM_ReadPlain     every series over the whole window, from float rings
//                    (the previous History::read, kept here as the baseline)
//   BM_ReadChunks    the same from the compressed chunks, a call per value
//   BM_ReadBatches   the same a chunk at a time (History::read_batches), as
//                    the diagnosis reads its window
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "store/history.h"

namespace {

using namespace gpulens;

struct Data {
  std::vector<int64_t> times;            // the record grid
  std::vector<std::vector<double>> rows; // per record, per series; NaN absent
  std::vector<bool> counter;             // per series
};

// Series "name{labels}" -> values by time, from OpenMetrics text.
bool load(const std::string& path, Data& d, size_t& series_base) {
  std::ifstream in(path);
  if (!in) return false;
  std::set<std::string> counters;
  std::map<std::string, size_t> index;
  std::map<int64_t, std::map<size_t, double>> by_time;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      const size_t a = 7, b = line.find(' ', a);
      if (b != std::string::npos && line.compare(b + 1, std::string::npos, "counter") == 0) {
        counters.insert(line.substr(a, b - a));
      }
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    const size_t ts = line.rfind(' ');
    const size_t vs = ts == std::string::npos ? ts : line.rfind(' ', ts - 1);
    if (vs == std::string::npos) continue;
    const std::string key = line.substr(0, vs);
    const double v = std::strtod(line.c_str() + vs + 1, nullptr);
    const int64_t t = std::llround(std::strtod(line.c_str() + ts + 1, nullptr) * 1000);
    auto [it, added] = index.emplace(key, series_base + index.size());
    by_time[t][it->second] = v;
    if (added) {
      const std::string name = key.substr(0, key.find('{'));
      const bool c = counters.count(name) > 0 || (name.size() > 6 && counters.count(name.substr(0, name.size() - 6)));
      d.counter.push_back(c);
    }
  }
  // Merge onto the grid: recordings are laid side by side (their own times
  // shifted onto record numbers), each its own series.
  std::vector<std::map<size_t, double>> rows;
  for (auto& [t, m] : by_time) rows.push_back(std::move(m));
  if (d.rows.size() < rows.size()) {
    const int64_t step = by_time.size() > 1 ? std::next(by_time.begin())->first - by_time.begin()->first : 1000;
    while (d.times.size() < rows.size()) {
      d.times.push_back(d.times.empty() ? 1'000'000 : d.times.back() + step);
      d.rows.emplace_back();
    }
  }
  series_base += index.size();
  for (auto& r : d.rows) r.resize(series_base, std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < rows.size(); ++i) {
    for (auto& [s, v] : rows[i]) d.rows[i][s] = v;
  }
  return true;
}

// The previous History storage: a float per series per record in rings.
class PlainRings {
 public:
  explicit PlainRings(size_t capacity) : capacity_(capacity), times_(capacity, 0) {}
  void add(int64_t t, const std::vector<float>& row) {
    if (rings_.size() < row.size()) rings_.resize(row.size(), std::vector<float>(capacity_, NAN));
    for (size_t s = 0; s < row.size(); ++s) rings_[s][head_] = row[s];
    times_[head_] = t;
    head_ = (head_ + 1) % capacity_;
    if (count_ < capacity_) ++count_;
  }
  void read(uint32_t slot, int64_t from_ms, int64_t to_ms, const std::function<void(int64_t, float)>& visit) const {
    if (slot >= rings_.size() || rings_[slot].empty()) return;
    const auto& ring = rings_[slot];
    const size_t start = (head_ + capacity_ - count_) % capacity_;
    for (size_t i = 0; i < count_; ++i) {
      const size_t pos = (start + i) % capacity_;
      const int64_t t = times_[pos];
      if (t < from_ms || t > to_ms || std::isnan(ring[pos])) continue;
      visit(t, ring[pos]);
    }
  }

 private:
  size_t capacity_;
  std::vector<int64_t> times_;
  std::vector<std::vector<float>> rings_;
  size_t head_ = 0, count_ = 0;
};

struct Setup {
  Data data;
  SeriesRegistry reg;
  LiveStore live;
  int src = live.add_source("recording", false);
  std::vector<uint32_t> slots;
  std::unique_ptr<History> history;
  std::unique_ptr<PlainRings> plain;

  void publish(size_t r) {
    Frame f(reg);
    f.clear(data.times[r]);
    for (size_t s = 0; s < slots.size(); ++s) {
      if (!std::isnan(data.rows[r][s])) f.set_slot(slots[s], data.rows[r][s]);
    }
    live.publish(src, f);
  }

  void build() {
    for (size_t s = 0; s < data.counter.size(); ++s) {
      const Labels extra{{"series", std::to_string(s)}};
      slots.push_back(reg.slot(data.counter[s] ? FieldId::kGpuPcieRxBytes : FieldId::kGpuPower, 0, extra));
    }
    history = std::make_unique<History>(data.times.size());
    for (size_t r = 0; r < data.times.size(); ++r) {
      publish(r);
      history->record(reg, live, data.times[r]);
    }
    // The plain rings hold exactly what History holds.
    plain = std::make_unique<PlainRings>(data.times.size());
    std::vector<std::map<int64_t, float>> got(slots.size());
    for (size_t s = 0; s < slots.size(); ++s) {
      history->read(slots[s], 0, std::numeric_limits<int64_t>::max(), [&](int64_t t, float v) { got[s][t] = v; });
    }
    for (int64_t t : history->times(0, std::numeric_limits<int64_t>::max())) {
      std::vector<float> row(slots.size(), NAN);
      for (size_t s = 0; s < slots.size(); ++s) {
        if (auto it = got[s].find(t); it != got[s].end()) row[s] = it->second;
      }
      plain->add(t, row);
    }
  }
};

Setup* g_setup = nullptr;

void BM_Append(benchmark::State& state) {
  Setup& g = *g_setup;
  History h(g.data.times.size());
  size_t r = 0;
  for (auto _ : state) {
    state.PauseTiming();
    g.publish(r);
    state.ResumeTiming();
    h.record(g.reg, g.live, g.data.times[r]);
    r = (r + 1) % g.data.times.size();
  }
  state.counters["ns_per_value"] =
      benchmark::Counter(static_cast<double>(state.iterations() * g.slots.size()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <typename Store>
void read_all(benchmark::State& state, const Store& store) {
  Setup& g = *g_setup;
  size_t values = 0;
  for (auto _ : state) {
    double sum = 0;
    for (uint32_t slot : g.slots) {
      store.read(slot, 0, std::numeric_limits<int64_t>::max(), [&](int64_t, float v) {
        sum += v;
        ++values;
      });
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["ns_per_value"] =
      benchmark::Counter(static_cast<double>(values), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_ReadPlain(benchmark::State& state) { read_all(state, *g_setup->plain); }
void BM_ReadChunks(benchmark::State& state) { read_all(state, *g_setup->history); }
// What the diagnosis reads a window with (diagnose/live_input.cpp): a call
// per chunk, the values looped over in place.
void BM_ReadBatches(benchmark::State& state) {
  Setup& g = *g_setup;
  size_t values = 0;
  for (auto _ : state) {
    double sum = 0;
    for (uint32_t slot : g.slots) {
      g.history->read_batches(slot, 0, std::numeric_limits<int64_t>::max(),
                              [&](std::span<const int64_t> ts, std::span<const float> vs) {
                                for (size_t i = 0; i < ts.size(); ++i) sum += vs[i];
                                values += vs.size();
                              });
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["ns_per_value"] =
      benchmark::Counter(static_cast<double>(values), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

BENCHMARK(BM_Append)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReadPlain)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadChunks)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadBatches)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  Setup setup;
  size_t base = 0;
  for (int i = 1; i < argc; ++i) {
    if (!load(argv[i], setup.data, base)) {
      std::fprintf(stderr, "history_bench: cannot read %s\n", argv[i]);
      return 2;
    }
  }
  if (setup.data.times.empty()) {
    std::fprintf(stderr, "usage: history_bench FILE.om [FILE.om ...] [--benchmark_* flags]\n");
    return 2;
  }
  setup.build();
  g_setup = &setup;
  const History::Usage u = setup.history->usage();
  size_t present = 0;
  for (const auto& row : setup.data.rows) {
    for (double v : row) present += !std::isnan(v);
  }
  std::printf("%zu series x %zu records (%zu values present); history %zu bytes for %zu stored values: "
              "%.3f bytes per stored value, %.3f per present value (plain rings: 4 + 8 / series)\n",
              setup.slots.size(), setup.data.times.size(), present, u.bytes, u.samples,
              static_cast<double>(u.bytes) / static_cast<double>(u.samples),
              static_cast<double>(u.bytes) / static_cast<double>(present));
  std::fflush(stdout);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
