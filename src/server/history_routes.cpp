// /api/v1/history (JSON on a time grid) and /api/v1/export (OpenMetrics).
#include "server/history_routes.h"

#include <charconv>
#include <cmath>
#include <sstream>

#include "export/exposition.h"
#include "export/recording.h"
#include "server/labels_json.h"
#include "server/query.h"
#include "util/duration.h"
#include "util/json.h"

namespace gpulens {
namespace {

constexpr int64_t kMaxPointsPerSeries = 3600;
constexpr int64_t kMaxValues = 500'000;
constexpr size_t kExportRecordsPerPage = 60;

void refuse(ServerResponse& res, int status, std::string message) {
  res.status = status;
  res.content_type = "text/plain; charset=utf-8";
  res.body = std::move(message);
  res.body += '\n';
}

Result<int64_t> duration_param(const Query& q, std::string_view name, int64_t fallback) {
  if (!q.has(name)) return fallback;
  auto d = parse_duration_ms(q.get(name));
  if (!d) return invalid_argument(std::string(name) + ": " + d.status().message());
  if (*d <= 0) return invalid_argument(std::string(name) + ": must be positive");
  return *d;
}

Result<int64_t> int_param(const Query& q, std::string_view name) {
  std::string_view v = q.get(name);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    return invalid_argument(std::string(name) + ": \"" + std::string(v.substr(0, 40)) + "\" is not a whole number");
  }
  return out;
}

void history_json(const HistoryView& agent, const ServerRequest& req, ServerResponse& res) {
  auto q = parse_query(req.query, {"series", "gpu", "range", "step"});
  if (!q) return refuse(res, 400, q.status().message());
  if (q->get("series").empty()) {
    return refuse(res, 400, "series: required, one or more catalog names separated by commas (see `gpulens catalog`)");
  }
  std::vector<FieldId> fields;
  std::string_view list = q->get("series");
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    list = comma == list.npos ? std::string_view{} : list.substr(comma + 1);
    if (name.empty()) continue;
    auto id = find_field(name);
    if (!id) return refuse(res, 400, "series: unknown series \"" + std::string(name.substr(0, 80)) + "\" (see `gpulens catalog`)");
    fields.push_back(*id);
  }
  int gpu_filter = -2;  // -2: every entity
  if (q->has("gpu")) {
    if (q->get("gpu") == "node") {
      gpu_filter = kNodeEntity;
    } else {
      auto g = int_param(*q, "gpu");
      if (!g) return refuse(res, 400, g.status().message());
      const int count = agent.registry().gpu_count();
      if (*g < 0 || *g >= count) {
        return refuse(res, 400, "gpu: no GPU " + std::to_string(*g) + " on this node (it has " + std::to_string(count) + ")");
      }
      gpu_filter = static_cast<int>(*g);
    }
  }
  const int64_t interval = std::max<int64_t>(agent.interval_ms(), 1);
  const int64_t kept = static_cast<int64_t>(agent.history().capacity()) * interval;
  auto range = duration_param(*q, "range", std::min<int64_t>(30 * 60'000, kept));
  if (!range) return refuse(res, 400, range.status().message());
  if (*range > kept) {
    return refuse(res, 400, "range: " + format_duration(*range) + " is longer than the history this agent keeps (" +
                                format_duration(kept) + ")");
  }
  const int64_t default_step = std::max(interval, (*range / 600 + interval - 1) / interval * interval);
  auto step = duration_param(*q, "step", default_step);
  if (!step) return refuse(res, 400, step.status().message());
  if (*step < interval) *step = interval;
  const int64_t points = (*range + *step - 1) / *step;  // the steps inside the range
  if (points > kMaxPointsPerSeries) {
    return refuse(res, 400, "step: " + format_duration(*step) + " over " + format_duration(*range) + " gives " +
                                std::to_string(points) + " values per series; at most " +
                                std::to_string(kMaxPointsPerSeries) + ": raise step");
  }

  struct Pick {  // copied under the lock: a slot freed meanwhile may take another series
    uint32_t slot;
    FieldId field;
    int gpu;
    Labels extra;
    HistogramPart part;
  };
  std::vector<Pick> picks;
  {
    std::lock_guard lock(agent.registry().mutex());
    for (FieldId id : fields) {
      for (uint32_t s : agent.registry().slots_of(id)) {
        const Series& series = agent.registry().series(s);
        if (gpu_filter != -2 && series.gpu != gpu_filter) continue;
        picks.push_back({s, series.field, series.gpu, series.extra, series.part});
      }
    }
  }
  if (static_cast<int64_t>(picks.size()) * points > kMaxValues) {
    return refuse(res, 400, std::to_string(picks.size()) + " series x " + std::to_string(points) +
                                " values is more than " + std::to_string(kMaxValues) +
                                ": ask for fewer series, one gpu, or a larger step");
  }
  const int64_t end = agent.history().newest_ms();
  const int64_t start = (end - *range) / *step * *step + *step;  // the first step inside the range
  const size_t n = static_cast<size_t>(std::max<int64_t>(0, (end - start) / *step + 1));

  std::string& out = res.body;
  out.clear();
  out.reserve(64 + picks.size() * (96 + n * 8));
  out += "{\"start\":";
  out += std::to_string(start);
  out += ",\"step\":";
  out += std::to_string(*step);
  out += ",\"end\":";
  out += std::to_string(end);
  out += ",\"interval\":";
  out += std::to_string(interval);
  out += ",\"series\":[";
  std::vector<double> sum(n);
  std::vector<uint32_t> count(n);
  for (size_t i = 0; i < picks.size(); ++i) {
    std::fill(sum.begin(), sum.end(), 0.0);
    std::fill(count.begin(), count.end(), 0u);
    agent.history().read(picks[i].slot, start, end, [&](int64_t t, float v) {
      const size_t k = static_cast<size_t>((t - start) / *step);
      if (k < n && std::isfinite(v)) {
        sum[k] += v;
        ++count[k];
      }
    });
    if (i) out += ',';
    out += "{\"name\":";
    append_json_string(out, field(picks[i].field).name);
    out += ",\"gpu\":";
    append_json_string(out, picks[i].gpu < 0 ? "node" : std::to_string(picks[i].gpu));
    out += ",\"labels\":";
    append_labels_json(out, picks[i].extra);
    if (const std::string_view part = histogram_part_json(picks[i].part); !part.empty()) {
      out += ",\"part\":";
      append_json_string(out, part);
    }
    out += ",\"values\":[";
    for (size_t k = 0; k < n; ++k) {
      if (k) out += ',';
      if (count[k]) {
        append_json_number(out, sum[k] / count[k]);
      } else {
        out += "null";
      }
    }
    out += "]}";
  }
  out += "]}\n";
  res.content_type = "application/json";
}

void export_openmetrics(const HistoryView& agent, const ServerRequest& req, ServerResponse& res) {
  auto q = parse_query(req.query, {"from", "to"});
  if (!q) return refuse(res, 400, q.status().message());
  if (!q->has("from") || !q->has("to")) return refuse(res, 400, "from and to: required, Unix milliseconds");
  auto from = int_param(*q, "from");
  if (!from) return refuse(res, 400, from.status().message());
  auto to = int_param(*q, "to");
  if (!to) return refuse(res, 400, to.status().message());
  if (*to < *from) return refuse(res, 400, "to: before from");

  History& h = agent.history();
  const std::vector<int64_t> times = h.times(*from, *to);
  RecordingWriter w;  // in memory: one page
  if (!times.empty()) {
    const int64_t page_to = times[std::min(times.size(), kExportRecordsPerPage) - 1];
    const int64_t newest = h.newest_ms();
    struct Pick {
      uint32_t slot;
      uint32_t family;
      std::string text;
      bool counter;
      double live = 0;
      bool live_present = false;
    };
    std::vector<Pick> picks;
    {
      std::scoped_lock lock(agent.registry().mutex(), agent.live().mutex());
      for (const FieldDef& f : catalog()) {
        if (!f.native) continue;
        const auto slots = recording_slots(agent.registry(), f);
        if (slots.empty()) continue;
        const uint32_t fam = w.family(family_name(f, true), type_name(f.type), f.help);
        for (uint32_t s : slots) {
          Pick p{s, fam, recording_series_text(agent.registry(), s), f.type == MetricType::kCounter};
          p.live_present = agent.live().present(s);
          if (p.live_present) p.live = agent.live().value(s);
          picks.push_back(std::move(p));
        }
      }
    }
    std::vector<std::pair<int64_t, float>> pts;
    for (const Pick& p : picks) {
      pts.clear();
      if (!p.counter) {
        h.read(p.slot, *from, page_to, [&](int64_t t, float v) { pts.emplace_back(t, v); });
        if (pts.empty()) continue;
        const uint32_t id = w.series(p.family, p.text);
        for (const auto& [t, v] : pts) w.add(id, t, v);
        continue;
      }
      // A counter: walk back from its live value through the rates.
      if (!p.live_present) continue;
      h.read(p.slot, *from, newest, [&](int64_t t, float v) { pts.emplace_back(t, v); });
      if (pts.empty()) continue;
      std::vector<double> total(pts.size());
      double v = p.live;
      for (size_t i = pts.size(); i-- > 0;) {
        total[i] = std::max(0.0, v);
        if (i > 0) v -= static_cast<double>(pts[i].second) * static_cast<double>(pts[i].first - pts[i - 1].first) / 1000.0;
      }
      const uint32_t id = w.series(p.family, p.text);
      for (size_t i = 0; i < pts.size() && pts[i].first <= page_to; ++i) w.add(id, pts[i].first, total[i]);
    }
  }
  std::ostringstream os;
  w.finish(os);
  res.body = std::move(os).str();
  res.content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
}

}  // namespace

bool handle_history_routes(const HistoryView& agent, const ServerRequest& req, ServerResponse& res) {
  if (req.path == "/api/v1/history") {
    history_json(agent, req, res);
    return true;
  }
  if (req.path == "/api/v1/export") {
    export_openmetrics(agent, req, res);
    return true;
  }
  return false;
}

}  // namespace gpulens
