// Range queries against a Prometheus-compatible API, parsed with simdjson.
#include "diagnose/prometheus_input.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "diagnose/mapping.h"
#include "diagnose/openmetrics_parser.h"
#include "util/http_client.h"

namespace gpulens::diagnose {
namespace {

struct RawSeries {
  std::vector<std::pair<std::string, std::string>> labels;
  Series points;
};

struct QueryResult {
  std::string name;
  std::vector<RawSeries> series;
  size_t bytes = 0;
  Status status;
};

// The matchers of --match without braces: {a="b"} -> a="b".
std::string matchers(std::string m) {
  while (!m.empty() && (m.front() == ' ' || m.front() == '{')) m.erase(m.begin());
  while (!m.empty() && (m.back() == ' ' || m.back() == '}')) m.pop_back();
  return m;
}

std::string promql(std::string_view name, const std::string& extra) {
  std::string sel = "{__name__=\"" + std::string(name) + "\"" + (extra.empty() ? "" : "," + extra) + "}";
  // Per-CPU counters: sum per node and mode on the server.
  if (name == "node_cpu_seconds_total" || name == "host_cpu_seconds_total") return "sum without (cpu) (" + sel + ")";
  return sel;
}

double parse_value(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : std::numeric_limits<double>::quiet_NaN();
}

// Parses a query_range answer. `what` names the server and query in errors.
Status parse_matrix(std::string_view what, std::string& body, std::vector<RawSeries>& out) {
  simdjson::ondemand::parser parser;
  body.reserve(body.size() + simdjson::SIMDJSON_PADDING);
  try {
    simdjson::ondemand::document doc = parser.iterate(body.data(), body.size(), body.capacity());
    std::string_view status = doc["status"].get_string();
    if (status != "success") {
      return unavailable(std::string(what) + ": server says " + std::string(status));
    }
    simdjson::ondemand::object data = doc["data"].get_object();
    bool matrix = false;
    for (auto field : data) {
      std::string_view key = field.unescaped_key();
      if (key == "resultType") {
        const std::string_view type = field.value().get_string();
        if (type != "matrix") {
          return io_error(std::string(what) + ": answered a \"" + std::string(type) +
                                  "\" where a range query must give a \"matrix\" (is this a query_range API?)");
        }
        matrix = true;
        continue;
      }
      if (key != "result") continue;
      for (simdjson::ondemand::object r : field.value().get_array()) {
        RawSeries s;
        for (auto f : r) {
          std::string_view k = f.unescaped_key();
          if (k == "metric") {
            for (auto l : f.value().get_object()) {
              std::string lk(std::string_view(l.unescaped_key()));
              std::string lv(std::string_view(l.value().get_string()));
              s.labels.emplace_back(std::move(lk), std::move(lv));
            }
          } else if (k == "values") {
            for (simdjson::ondemand::array pair : f.value().get_array()) {
              // Exactly [timestamp, "value"]: stepping past the end of a
              // shorter array is undefined in simdjson (found by fuzzing).
              double ts = 0;
              std::string_view v;
              size_t n = 0;
              for (auto element : pair) {
                if (n == 0) ts = double(element);
                else if (n == 1) v = std::string_view(element);
                ++n;
              }
              if (n != 2) {
                return io_error(std::string(what) + ": a sample is not a [timestamp, \"value\"] pair (" +
                                std::to_string(n) + " elements)");
              }
              int64_t t_ms = 0;
              if (!timestamp_to_ms(ts, t_ms) || ts > 1e11) {
                char b[64];
                std::snprintf(b, sizeof b, "%.17g", ts);
                return io_error(std::string(what) + ": timestamp " + b +
                                        " out of range (expected Unix seconds, 1970 .. 9999)");
              }
              const double value = parse_value(v);
              if (!std::isnan(value)) s.points.push_back({t_ms, value});
            }
          }
        }
        out.push_back(std::move(s));
      }
    }
    if (!matrix) return io_error(std::string(what) + ": answer has no resultType (not a query_range API?)");
  } catch (const simdjson::simdjson_error& e) {
    return io_error(std::string(what) + ": malformed response: " + e.what());
  }
  return Status::ok();
}

std::string base_url(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

}  // namespace

int64_t auto_step_ms(int64_t range_ms) {
  const int64_t min_step = 15'000;
  const int64_t for_limit = (range_ms + 10'999) / 11'000;
  return std::max(min_step, (for_limit + 999) / 1000 * 1000);
}

std::vector<std::string> diagnosis_metric_names() {
  std::vector<std::string> out;
  for (std::string_view n : known_names()) out.emplace_back(n);
  return out;
}

Result<SignalSet> load_prometheus(const PrometheusQuery& q, PrometheusInfo& info) {
  const std::string base = base_url(q.url);
  if (!base.starts_with("http://")) return invalid_argument("--prometheus: expected an http:// URL, got \"" + q.url + "\"");
  HttpClient client({.timeout_ms = q.timeout_ms});
  if (q.end_ms < 0 || q.end_ms > kMaxTimestampMs || q.range_ms <= 0 || q.range_ms > q.end_ms) {
    return invalid_argument("--end/--range: the window must lie between 1970 and 9999");
  }
  const int64_t end_ms = q.end_ms;
  const int64_t start_ms = end_ms - q.range_ms;
  const int64_t step_ms = q.step_ms > 0 ? q.step_ms : auto_step_ms(q.range_ms);
  info.step_ms = step_ms;
  if (q.range_ms / step_ms > 11'000) return invalid_argument("--step too small: more than 11000 points per series");

  // Which of our families does the server hold in the window?
  const std::string names_url = base + "/api/v1/label/__name__/values?start=" + std::to_string(start_ms / 1000) +
                                "&end=" + std::to_string(end_ms / 1000);
  Result<HttpResponse> names = client.get(names_url);
  if (!names) return Status(names.status().code(), "prometheus " + base + ": " + names.status().message());
  if (names->status != 200) {
    return unavailable("prometheus " + base + ": HTTP " + std::to_string(names->status) + " listing metric names: " +
                       names->body.substr(0, 200));
  }
  std::set<std::string, std::less<>> present;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string body(names->body);
    simdjson::ondemand::document doc = parser.iterate(body);
    for (std::string_view n : doc["data"].get_array()) present.emplace(n);
  } catch (const simdjson::simdjson_error& e) {
    return io_error("prometheus " + base + ": malformed name list: " + e.what());
  }
  std::vector<std::string> wanted;
  for (const std::string& n : diagnosis_metric_names()) {
    if (present.contains(n)) wanted.push_back(n);
  }
  if (wanted.empty()) {
    return not_found("prometheus " + base + ": none of the metrics diagnosis reads (DCGM_FI_*, gpu_*, node_*) "
                     "in the window");
  }

  const std::string extra = matchers(q.match);
  char step_text[32];
  std::snprintf(step_text, sizeof step_text, "%.3f", static_cast<double>(step_ms) / 1000.0);
  char range_text[64];
  std::snprintf(range_text, sizeof range_text, "&start=%.3f&end=%.3f", static_cast<double>(start_ms) / 1000.0,
                static_cast<double>(end_ms) / 1000.0);
  std::vector<QueryResult> results(wanted.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < wanted.size(); i = next++) {
      QueryResult& r = results[i];
      r.name = wanted[i];
      const std::string url = base + "/api/v1/query_range?query=" + url_encode(promql(r.name, extra)) + range_text +
                              "&step=" + step_text;
      Result<HttpResponse> resp = client.get(url);
      if (!resp) {
        r.status = Status(resp.status().code(), "prometheus query " + r.name + ": " + resp.status().message());
        continue;
      }
      if (resp->status != 200) {
        r.status = unavailable("prometheus query " + r.name + ": HTTP " + std::to_string(resp->status) + ": " +
                               resp->body.substr(0, 300));
        continue;
      }
      r.bytes = resp->body.size();
      r.status = parse_matrix("prometheus " + base + " query " + r.name, resp->body, r.series);
    }
  };
  std::vector<std::thread> threads;
  const int n_threads = std::clamp(q.parallel, 1, static_cast<int>(wanted.size()));
  for (int t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();

  SignalSetBuilder builder;
  std::vector<LabelPair> views;
  for (QueryResult& r : results) {
    if (!r.status) return r.status;
    ++info.queries;
    info.response_bytes += r.bytes;
    if (info.series + r.series.size() > q.max_series) {
      return io_error("prometheus " + base + ": more than " + std::to_string(q.max_series) +
                              " series (at query " + r.name + "; narrow with --match, or raise --max-series)");
    }
    for (RawSeries& s : r.series) {
      views.clear();
      for (const auto& [k, v] : s.labels) views.emplace_back(k, v);
      ++info.series;
      info.points += s.points.size();
      builder.add(r.name, views, std::move(s.points));
    }
    r.series.clear();
  }
  return builder.build(start_ms, end_ms);
}

}  // namespace gpulens::diagnose
