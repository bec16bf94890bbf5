// Replay: collect the samples of known families per series, then map them.
#include "diagnose/replay_input.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "diagnose/mapping.h"

namespace gpulens::diagnose {
namespace {

class ReplaySink final : public expfmt::SeriesSink {
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
    if (point_ && !s.empty() && repeated_.empty()) repeated_ = entries_[static_cast<size_t>(handle)].name;
    if (!s.empty() && t_ms <= s.back().t_ms) entries_[static_cast<size_t>(handle)].unsorted = true;
    s.push_back({t_ms, value});
  }

  // A plain scrape: each series once.
  void point_in_time() { point_ = true; }
  const std::string& repeated() const { return repeated_; }

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
    SignalSet set = builder.build();
    set.point_in_time = point_;
    return set;
  }

 private:
  struct Entry {
    std::string name;
    std::vector<std::pair<std::string, std::string>> labels;
    Series points;
    bool unsorted = false;
  };
  std::vector<Entry> entries_;
  bool point_ = false;
  std::string repeated_;
};

// Whether `s` is the parser's complaint about the first sample of the input
// lacking a timestamp: then the input is a plain scrape.
bool untimed_first_sample(const Status& s, const expfmt::StreamStats& stats) {
  return !s && stats.samples == 0 && stats.ignored_samples == 0 &&
         s.message().find("sample has no timestamp") != std::string::npos;
}

// The checks a plain scrape must pass once parsed.
Status check_point(const std::string& name, const expfmt::StreamStats& stats, const ReplaySink& sink,
                   const std::string& first_error) {
  if (stats.timestamped > 0) {
    return invalid_argument(first_error.substr(0, first_error.find(": sample")) + ": no timestamp, but " +
                            std::to_string(stats.timestamped) +
                            " later samples have one: a recording needs one on every sample, a plain scrape on none");
  }
  if (!sink.repeated().empty()) {
    return invalid_argument(name + ": a plain scrape (no timestamps) with series " + sink.repeated() +
                            " more than once: a point in time has each series once");
  }
  return Status::ok();
}

int64_t mtime_ms(const std::string& path) {
  std::error_code ec;
  const auto t = std::filesystem::last_write_time(path, ec);
  if (ec) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch()).count();
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::file_clock::to_sys(t).time_since_epoch()).count();
}

}  // namespace

Result<SignalSet> load_replay(const std::string& path, ReplayInfo& info, const expfmt::StreamLimits& limits) {
  {
    ReplaySink sink;
    expfmt::StreamParser parser(path, sink, limits);
    Status s = expfmt::parse_file(path, parser);
    info.stats = parser.stats();
    if (s) {
      if (info.stats.samples == 0) return invalid_argument(path + ": no samples of any metric diagnosis knows");
      return sink.build(info);
    }
    if (!untimed_first_sample(s, info.stats)) return s;
    info.stats.warnings.clear();
    info.point_in_time = true;
    ReplaySink point;
    point.point_in_time();
    expfmt::StreamParser again(path, point, limits);
    again.start_scrape(mtime_ms(path));
    Status p = expfmt::parse_file(path, again);
    info.stats = again.stats();
    if (!p) return p;
    if (Status c = check_point(path, info.stats, point, s.message()); !c) return c;
    if (info.stats.samples == 0) return invalid_argument(path + ": no samples of any metric diagnosis knows");
    return point.build(info);
  }
}

Result<SignalSet> load_replay_text(std::string_view text, std::string_view name, ReplayInfo& info,
                                   const expfmt::StreamLimits& limits, int64_t at_ms) {
  ReplaySink sink;
  expfmt::StreamParser parser(std::string(name), sink, limits);
  Status s = parser.feed(text);
  if (s) s = parser.finish();
  info.stats = parser.stats();
  if (s) {
    if (info.stats.samples == 0) return invalid_argument(std::string(name) + ": no samples of any metric diagnosis knows");
    return sink.build(info);
  }
  if (!untimed_first_sample(s, info.stats)) return s;
  info.point_in_time = true;
  ReplaySink point;
  point.point_in_time();
  expfmt::StreamParser again(std::string(name), point, limits);
  again.start_scrape(at_ms);
  Status p = again.feed(text);
  if (p) p = again.finish();
  info.stats = again.stats();
  if (!p) return p;
  if (Status c = check_point(std::string(name), info.stats, point, s.message()); !c) return c;
  if (info.stats.samples == 0) return invalid_argument(std::string(name) + ": no samples of any metric diagnosis knows");
  return point.build(info);
}

}  // namespace gpulens::diagnose
