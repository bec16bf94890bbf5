// History -> SignalSet: native names and the series' labels as data.
#include "diagnose/live_input.h"

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

#include "diagnose/evidence_series.h"
#include "diagnose/mapping.h"

namespace gpulens::diagnose {
namespace {

struct SlotInfo {
  uint32_t slot;
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  bool rate;  // History already turned this counter into a rate
};

}  // namespace

SignalSet signals_from_history(const SeriesRegistry& registry, const History& history, int64_t from_ms,
                               int64_t to_ms, const std::string& host) {
  std::vector<SlotInfo> slots;
  {
    std::lock_guard lock(registry.mutex());
    for (const FieldDef& f : catalog()) {
      std::string name(f.name);
      const bool histogram = f.type == MetricType::kHistogram;
      if (histogram) name += "_bucket";
      if (!known_name(name)) continue;
      for (uint32_t s : registry.slots_of(f.id)) {
        const gpulens::Series& se = registry.series(s);
        if (histogram && se.part != HistogramPart::kBucket) continue;  // _sum, _count
        std::vector<std::pair<std::string, std::string>> labels;
        for (const Label& l : registry.all_labels(s)) labels.emplace_back(l.name, l.value);
        slots.push_back({s, name, std::move(labels), f.type == MetricType::kCounter});
      }
    }
  }
  SignalSetBuilder builder;
  std::vector<LabelPair> views;
  for (const SlotInfo& si : slots) {
    // At most one point per second, the mean of the samples in it at the
    // time of its newest: the rules look at minutes, and at 100 ms sampling
    // a copy of every sample of the 30-minute window (18,000 per series)
    // took the agent's memory past its 256 MiB limit at each diagnosis.
    diagnose::Series points;
    int64_t second = INT64_MIN, last_t = 0;
    double sum = 0;
    int n = 0;
    auto flush = [&] {
      if (n) points.push_back({last_t, sum / n});
    };
    history.read_batches(si.slot, from_ms, to_ms, [&](std::span<const int64_t> ts, std::span<const float> vs) {
      for (size_t i = 0; i < ts.size(); ++i) {
        const int64_t t = ts[i];
        const int64_t s = t >= 0 ? t / 1000 : (t - 999) / 1000;
        if (s != second) {
          flush();
          second = s;
          sum = 0;
          n = 0;
        }
        sum += vs[i];
        ++n;
        last_t = t;
      }
    });
    flush();
    if (points.empty()) continue;
    views.clear();
    for (const auto& [k, v] : si.labels) views.emplace_back(k, v);
    builder.add_for_host(host, si.name, views, std::move(points), si.rate);
  }
  return builder.build(from_ms, to_ms);
}

Report diagnose_live(const SeriesRegistry& registry, const History& history, int64_t now_ms,
                     const Thresholds& thresholds, int64_t window_ms, const std::string& host) {
  const SignalSet set = signals_from_history(registry, history, now_ms - window_ms, now_ms, host);
  Report report = diagnose(set, thresholds);
  attach_evidence_series(set, report);  // the web page draws them from /api/v1/findings
  return report;
}

}  // namespace gpulens::diagnose
