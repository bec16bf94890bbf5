// Replay: collect the samples of known families per series, then map them.
#include "diagnose/replay_input.h"

#include <algorithm>

#include "diagnose/mapping.h"

namespace gpulens::diagnose {
namespace {

class ReplaySink final : public MetricSink {
 public:
  int64_t on_series(std::string_view name, LabelSpan labels) override {
    if (!known_name(name)) return -1;
    Entry e;
    e.name = name;
    for (const auto& [k, v] : labels) e.labels.emplace_back(std::string(k), std::string(v));
    entries_.push_back(std::move(e));
    return static_cast<int64_t>(entries_.size() - 1);
  }
  void on_sample(int64_t handle, int64_t t_ms, double value) override {
    Series& s = entries_[static_cast<size_t>(handle)].points;
    if (!s.empty() && t_ms <= s.back().t_ms) entries_[static_cast<size_t>(handle)].unsorted = true;
    s.push_back({t_ms, value});
  }

  SignalSet build(ReplayInfo& info) {
    SignalSetBuilder builder;
    std::vector<LabelPair> views;
    for (Entry& e : entries_) {
      if (e.unsorted) {
        std::stable_sort(e.points.begin(), e.points.end(),
                         [](const Point& a, const Point& b) { return a.t_ms < b.t_ms; });
        // A repeated timestamp keeps the last value written.
        Series dedup;
        for (const Point& p : e.points) {
          if (!dedup.empty() && dedup.back().t_ms == p.t_ms) dedup.back() = p; else dedup.push_back(p);
        }
        e.points = std::move(dedup);
      }
      views.clear();
      for (const auto& [k, v] : e.labels) views.emplace_back(k, v);
      builder.add(e.name, views, std::move(e.points));
      e.points = {};
    }
    info.known_series = builder.known_series();
    info.unknown_series = builder.unknown_series();
    return builder.build();
  }

 private:
  struct Entry {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    Series points;
    bool unsorted = false;
  };
  std::vector<Entry> entries_;
};

}  // namespace

Result<SignalSet> load_replay(const std::string& path, ReplayInfo& info, const ParseLimits& limits) {
  ReplaySink sink;
  OpenMetricsParser parser(path, sink, limits);
  Status s = parse_file(path, parser);
  info.stats = parser.stats();
  if (!s) return s;
  if (info.stats.samples == 0) return invalid_argument(path + ": no samples of any metric diagnosis knows");
  return sink.build(info);
}

Result<SignalSet> load_replay_text(std::string_view text, std::string_view name, ReplayInfo& info,
                                   const ParseLimits& limits) {
  ReplaySink sink;
  OpenMetricsParser parser(std::string(name), sink, limits);
  Status s = parser.feed(text);
  if (s) s = parser.finish();
  info.stats = parser.stats();
  if (!s) return s;
  if (info.stats.samples == 0) return invalid_argument(std::string(name) + ": no samples of any metric diagnosis knows");
  return sink.build(info);
}

}  // namespace gpulens::diagnose
