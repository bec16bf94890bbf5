// Range queries against a Prometheus-compatible API, parsed with simdjson.
#include "diagnose/prometheus_input.h"

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <cctype>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "diagnose/mapping.h"
#include "expfmt/text.h"
#include "model/series.h"
#include "util/http_client.h"

namespace gpulens::diagnose {
namespace {

struct RawSeries {
  std::vector<std::pair<std::string, std::string>> labels;
  Series points;
};

// The matchers of --match without braces: {a="b"} -> a="b".
std::string matchers(std::string m) {
  while (!m.empty() && (m.front() == ' ' || m.front() == '{')) m.erase(m.begin());
  while (!m.empty() && (m.back() == ' ' || m.back() == '}')) m.pop_back();
  return m;
}

}  // namespace

std::string real_samples(const std::string& selector, int64_t step_ms) {
  if (step_ms <= 1) return selector;
  return "last_over_time(" + selector + "[" + std::to_string(step_ms - 1) + "ms])";
}

namespace {

std::string promql(std::string_view name, const std::string& extra, int64_t step_ms) {
  std::string sel = real_samples("{__name__=\"" + std::string(name) + "\"" + (extra.empty() ? "" : "," + extra) + "}",
                                 step_ms);
  // Per-CPU counters: sum per node and mode on the server.
  if (name == "node_cpu_seconds_total" || name == "host_cpu_seconds_total") return "sum without (cpu) (" + sel + ")";
  return sel;
}

constexpr size_t kReservePoints = 256;  // an hour at 15 s, 4 KiB

double parse_value(std::string_view s) {
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "+Inf") return std::numeric_limits<double>::infinity();
  if (s == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() ? v : std::numeric_limits<double>::quiet_NaN();
}

// Parses a query_range answer. `what` names the server and query in errors.
// `expect_points`: the points a series of the window has at most, reserved up
// front up to kReservePoints (a sparse series on a long range must not cost
// the whole range's worth).
Status parse_matrix(std::string_view what, std::string& body, std::vector<RawSeries>& out, size_t expect_points) {
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
            s.points.reserve(std::min(expect_points, kReservePoints));
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
              if (!expfmt::timestamp_to_ms(ts, t_ms) || ts > 1e11) {
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

namespace {

// What every query of one window shares.
struct Window {
  std::string base;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  std::string range_text;  // &start=..&end=..
  std::string step_text;
  int64_t step_ms = 0;
  std::string extra;       // --match without braces
  std::vector<std::string> wanted;  // families the server holds, sorted
  size_t expect_points = 0;         // points per series at most: range / step + 1
};

// The HTTP client with the query API's rules: a redirect is an error, a
// 429/503 with a short Retry-After is asked again.
class QueryClient {
 public:
  explicit QueryClient(const PrometheusQuery& q)
      : client_({.timeout_ms = q.timeout_ms, .tls = q.tls, .auth = q.auth, .resend_post = true}) {}  // queries only read
  Status check() const { return client_.check(); }
  Result<HttpResponse> get(const std::string& url) const {
    return answer([&] { return client_.get(url); });
  }
  Result<HttpResponse> post(const std::string& url, const std::string& body,
                            const std::vector<std::pair<std::string, std::string>>& headers) const {
    return answer([&] { return client_.post(url, body, headers); });
  }

 private:
  template <typename F>
  Result<HttpResponse> answer(F request) const {
    for (int attempt = 0;; ++attempt) {
      Result<HttpResponse> r = request();
      if (!r) return r;
      if (r->status / 100 == 3) {
        std::string to(r->header("location"));
        return unavailable("HTTP " + std::to_string(r->status) + ": a redirect" + (to.empty() ? "" : " to " + to) +
                           ", not followed (point --prometheus at where it leads)");
      }
      if ((r->status == 429 || r->status == 503) && attempt < kMaxRetries) {
        const int64_t after = retry_after_ms(r->header("retry-after"));
        if (after >= 0 && after <= kMaxRetryAfterWaitMs) {
          std::this_thread::sleep_for(std::chrono::milliseconds(after));
          continue;
        }
      }
      return r;
    }
  }
  HttpClient client_;
};

Result<Window> prepare(const PrometheusQuery& q, const QueryClient& client, PrometheusInfo& info) {
  Window w;
  w.base = base_url(q.url);
  if (!w.base.starts_with("http://") && !w.base.starts_with("https://")) {
    return invalid_argument("--prometheus: expected an http:// or https:// URL, got \"" + q.url + "\"");
  }
  if (Status s = client.check(); !s) return invalid_argument("prometheus: " + s.message());
  if (q.end_ms < 0 || q.end_ms > expfmt::kMaxTimestampMs || q.range_ms <= 0 || q.range_ms > q.end_ms) {
    return invalid_argument("--end/--range: the window must lie between 1970 and 9999");
  }
  w.end_ms = q.end_ms;
  w.start_ms = w.end_ms - q.range_ms;
  const int64_t step_ms = q.step_ms > 0 ? q.step_ms : auto_step_ms(q.range_ms);
  info.step_ms = step_ms;
  if (q.range_ms / step_ms > 11'000) return invalid_argument("--step too small: more than 11000 points per series");

  // Which of our families does the server hold in the window?
  const std::string names_url = w.base + "/api/v1/label/__name__/values?start=" + std::to_string(w.start_ms / 1000) +
                                "&end=" + std::to_string(w.end_ms / 1000);
  Result<HttpResponse> names = client.get(names_url);
  if (!names) return Status(names.status().code(), "prometheus " + w.base + ": " + names.status().message());
  if (names->status != 200) {
    return unavailable("prometheus " + w.base + ": HTTP " + std::to_string(names->status) +
                       " listing metric names: " + names->body.substr(0, 200));
  }
  std::set<std::string, std::less<>> present;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string body(names->body);
    simdjson::ondemand::document doc = parser.iterate(body);
    for (std::string_view n : doc["data"].get_array()) present.emplace(n);
  } catch (const simdjson::simdjson_error& e) {
    return io_error("prometheus " + w.base + ": malformed name list: " + e.what());
  }
  for (const std::string& n : diagnosis_metric_names()) {
    if (present.contains(n)) w.wanted.push_back(n);
  }
  if (w.wanted.empty()) {
    return not_found("prometheus " + w.base + ": none of the metrics diagnosis reads (DCGM_FI_*, gpu_*, node_*) "
                     "in the window");
  }
  w.extra = matchers(q.match);
  w.expect_points = static_cast<size_t>(q.range_ms / step_ms) + 1;
  char step_text[32];
  std::snprintf(step_text, sizeof step_text, "%.3f", static_cast<double>(step_ms) / 1000.0);
  w.step_text = step_text;
  w.step_ms = step_ms;
  char range_text[64];
  std::snprintf(range_text, sizeof range_text, "&start=%.3f&end=%.3f", static_cast<double>(w.start_ms) / 1000.0,
                static_cast<double>(w.end_ms) / 1000.0);
  w.range_text = range_text;
  return w;
}

// A regular expression matching `s` literally (ASCII punctuation escaped;
// RE2 and Go's regexp take an escaped punctuation character as itself).
std::string regex_quote(std::string_view s) {
  std::string out;
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x80 && !std::isalnum(u)) out += '\\';
    out += c;
  }
  return out;
}

// A PromQL double-quoted string literal's contents: a label value's
// escaping (\\, \", \n) is PromQL's too.
std::string promql_quote(std::string_view s) {
  std::string out;
  append_escaped(out, s);
  return out;
}

bool gpu_family(std::string_view name) { return name.starts_with("gpu_") || name.starts_with("DCGM_FI_"); }

// The label triples naming one batch's hosts: of their GPU series, of their
// other series, and both.
struct BatchLabels {
  std::vector<HostLabels> gpu, other, all;
};

// Runs the range query of every wanted family (`hosts` set: narrowed to
// those hosts, selected by the label values `named` lists) and adds the answers to `builder` in family order (so the
// result does not depend on which answer came first) as soon as each one's
// turn comes: no more than the answers in flight are held at once.
Status fetch_families(const PrometheusQuery& q, const QueryClient& client, const Window& w,
                      const std::vector<std::string>* hosts, const BatchLabels* named,
                      SignalSetBuilder& builder, PrometheusInfo& info) {
  const std::set<std::string, std::less<>> keep = hosts ? std::set<std::string, std::less<>>(hosts->begin(), hosts->end())
                                                        : std::set<std::string, std::less<>>();
  std::vector<Status> statuses(w.wanted.size());
  std::mutex mu;  // guards builder, info, series, turn
  std::condition_variable cv;
  size_t turn = 0;  // the family whose answer goes into the builder next
  size_t series = 0;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    std::vector<RawSeries> got;
    std::vector<LabelPair> views;
    for (size_t i = next++; i < w.wanted.size() && !failed; i = next++) {
      const std::string& name = w.wanted[i];
      std::string query;
      if (hosts) {
        // A GPU family by the GPU series' labels, another by the others'
        // (one branch each in the common case: dcgm-exporter's Hostname,
        // node_exporter's instance); all of them where its kind has none.
        const std::vector<HostLabels>& own = gpu_family(name) ? named->gpu : named->other;
        query = promql_for_label_values(name, w.extra, own.empty() ? named->all : own, w.step_ms);
      } else {
        query = promql(name, w.extra, w.step_ms);
      }
      // A batch's query is long: sent as a form, which both Prometheus and
      // VictoriaMetrics accept on the same path.
      const std::string form = "query=" + url_encode(query) + w.range_text + "&step=" + w.step_text;
      Result<HttpResponse> resp =
          hosts ? client.post(w.base + "/api/v1/query_range", form,
                              {{"Content-Type", "application/x-www-form-urlencoded"}})
                : client.get(w.base + "/api/v1/query_range?" + form);
      Status st;
      if (!resp) {
        st = Status(resp.status().code(), "prometheus query " + name + ": " + resp.status().message());
      } else if (resp->status != 200) {
        st = unavailable("prometheus query " + name + ": HTTP " + std::to_string(resp->status) + ": " +
                         resp->body.substr(0, 300));
      } else {
        got.clear();
        st = parse_matrix("prometheus " + w.base + " query " + name, resp->body, got, w.expect_points);
      }
      std::unique_lock lock(mu);
      if (!st) {
        statuses[i] = std::move(st);
        failed = true;
        cv.notify_all();
        continue;
      }
      const size_t bytes = resp->body.size();
      resp->body = std::string();
      cv.wait(lock, [&] { return turn == i || failed; });
      if (failed) continue;
      ++turn;
      cv.notify_all();
      ++info.queries;
      info.response_bytes += bytes;
      if (series + got.size() > q.max_series) {
        statuses[i] = io_error("prometheus " + w.base + ": more than " + std::to_string(q.max_series) +
                               " series" + (hosts ? " in one batch of hosts" : "") + " (at query " + name +
                               "; narrow with --match, lower --batch-hosts or raise --max-series)");
        failed = true;
        cv.notify_all();
        continue;
      }
      for (RawSeries& s : got) {
        views.clear();
        for (const auto& [k, v] : s.labels) views.emplace_back(k, v);
        // A batch's matchers may select more than its hosts (a regular
        // expression is looser than host_key); each host is read in its own batch.
        if (hosts && !keep.contains(host_key(views))) continue;
        ++series;
        ++info.series;
        info.points += s.points.size();
        builder.add(name, views, std::move(s.points));
      }
    }
  };
  std::vector<std::thread> threads;
  const int n_threads = std::clamp(q.parallel, 1, static_cast<int>(w.wanted.size()));
  for (int t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  for (Status& st : statuses) {
    if (!st) return st;
  }
  return Status::ok();
}

// A listed triple with the GPU UUID of its series ("" for none).
struct ListedHost {
  HostLabels labels;
  std::string uuid;
  auto operator<=>(const ListedHost&) const = default;
};

// The labels that name a host (hostname, Hostname, instance) of the series of
// the wanted families in the window, GPU families or the others, with their
// GPU's UUID: one instant query, aggregated on the server to one answer per
// distinct triple and UUID.

Result<std::vector<ListedHost>> list_host_labels(const QueryClient& client, const Window& w, bool gpu) {
  std::string names;
  for (const std::string& n : w.wanted) {
    if (gpu_family(n) != gpu) continue;
    names += (names.empty() ? "" : "|") + regex_quote(n);
  }
  if (names.empty()) return std::vector<ListedHost>{};
  // The window itself (the queries read real samples only: no lookback), by
  // GPU UUID too, so that one machine under two names is one host.
  const int64_t lookback_s = std::max<int64_t>(1, (w.end_ms - w.start_ms) / 1000);
  const std::string query = "count by (hostname, Hostname, instance, UUID, gpu_uuid) (last_over_time({__name__=~\"" +
                            promql_quote(names) + "\"" + (w.extra.empty() ? "" : "," + w.extra) + "}[" +
                            std::to_string(lookback_s) + "s]))";
  const std::string what = gpu ? "listing GPU hosts" : "listing the hosts' other series";
  char time_text[32];
  std::snprintf(time_text, sizeof time_text, "%.3f", static_cast<double>(w.end_ms) / 1000.0);
  Result<HttpResponse> resp = client.post(w.base + "/api/v1/query", "query=" + url_encode(query) + "&time=" + time_text,
                                          {{"Content-Type", "application/x-www-form-urlencoded"}});
  if (!resp) return Status(resp.status().code(), "prometheus " + w.base + " " + what + ": " + resp.status().message());
  if (resp->status != 200) {
    return unavailable("prometheus " + w.base + ": HTTP " + std::to_string(resp->status) + " " + what + ": " +
                       resp->body.substr(0, 300));
  }
  std::set<ListedHost> out;
  try {
    simdjson::ondemand::parser parser;
    simdjson::padded_string body(resp->body);
    simdjson::ondemand::document doc = parser.iterate(body);
    std::string_view status = doc["status"].get_string();
    if (status != "success") return unavailable("prometheus " + w.base + " " + what + ": server says " + std::string(status));
    simdjson::ondemand::object data = doc["data"].get_object();
    for (auto field : data) {
      if (std::string_view(field.unescaped_key()) != "result") continue;
      for (simdjson::ondemand::object r : field.value().get_array()) {
        ListedHost t;
        for (auto f : r) {
          if (std::string_view(f.unescaped_key()) != "metric") continue;
          for (auto l : f.value().get_object()) {
            const std::string_view k = l.unescaped_key();
            std::string v(std::string_view(l.value().get_string()));
            if (k == "hostname") t.labels.hostname = std::move(v);
            else if (k == "Hostname") t.labels.Hostname = std::move(v);
            else if (k == "instance") t.labels.instance = std::move(v);
            else if ((k == "UUID" || k == "gpu_uuid") && t.uuid.empty()) t.uuid = std::move(v);
          }
        }
        out.insert(std::move(t));
      }
    }
  } catch (const simdjson::simdjson_error& e) {
    return io_error("prometheus " + w.base + ": malformed answer " + what + ": " + e.what());
  }
  return std::vector<ListedHost>(out.begin(), out.end());
}

// The host key of a triple (mapping.h host_key on its labels).
std::string key_of(const HostLabels& t) {
  std::vector<LabelPair> views;
  if (!t.hostname.empty()) views.emplace_back("hostname", t.hostname);
  if (!t.Hostname.empty()) views.emplace_back("Hostname", t.Hostname);
  if (!t.instance.empty()) views.emplace_back("instance", t.instance);
  return host_key(views);
}

}  // namespace

std::string promql_for_label_values(std::string_view name, const std::string& extra,
                                   const std::vector<HostLabels>& triples, int64_t step_ms) {
  // Each series is selected by the label that decides its host (host_key:
  // hostname, else Hostname, else instance), matched against the values
  // listed exactly: an alternation of literals, which Prometheus and
  // VictoriaMetrics look up as a set instead of running a regular expression
  // over every value.
  std::set<std::string> by_hostname, by_Hostname, by_instance;
  bool none = false;
  for (const HostLabels& t : triples) {
    if (!t.hostname.empty()) by_hostname.insert(t.hostname);
    else if (!t.Hostname.empty()) by_Hostname.insert(t.Hostname);
    else if (!t.instance.empty()) by_instance.insert(t.instance);
    else none = true;
  }
  auto alternation = [](const std::set<std::string>& values) {
    std::string alt;
    for (const std::string& v : values) alt += (alt.empty() ? "" : "|") + regex_quote(v);
    return promql_quote(alt);
  };
  const std::string head = "{__name__=\"" + std::string(name) + "\"" + (extra.empty() ? "" : "," + extra);
  std::vector<std::string> parts;
  if (!by_hostname.empty()) parts.push_back(head + ",hostname=~\"" + alternation(by_hostname) + "\"}");
  if (!by_Hostname.empty()) parts.push_back(head + ",hostname=\"\",Hostname=~\"" + alternation(by_Hostname) + "\"}");
  if (!by_instance.empty()) {
    parts.push_back(head + ",hostname=\"\",Hostname=\"\",instance=~\"" + alternation(by_instance) + "\"}");
  }
  if (none) parts.push_back(head + ",hostname=\"\",Hostname=\"\",instance=\"\"}");
  std::string sel;
  for (const std::string& p : parts) sel += (sel.empty() ? "" : " or ") + real_samples(p, step_ms);
  if (name == "node_cpu_seconds_total" || name == "host_cpu_seconds_total") return "sum without (cpu) (" + sel + ")";
  return sel;
}

Result<SignalSet> load_prometheus(const PrometheusQuery& q, PrometheusInfo& info) {
  QueryClient client(q);
  Result<Window> w = prepare(q, client, info);
  if (!w) return w.status();
  SignalSetBuilder builder;
  if (Status s = fetch_families(q, client, *w, nullptr, nullptr, builder, info); !s) return s;
  return builder.build(w->start_ms, w->end_ms);
}

Status stream_prometheus(const PrometheusQuery& q, PrometheusInfo& info, const BatchSink& sink) {
  QueryClient client(q);
  Result<Window> w = prepare(q, client, info);
  if (!w) return w.status();
  // Hosts: groups of host keys that name one machine (they share a GPU
  // UUID: gpulens' native names under the scrape's instance and its
  // --dcgm-names under Hostname), each group read in one batch.
  std::vector<std::vector<std::string>> hosts;
  std::map<std::string, BatchLabels> triples;  // host key -> the label triples naming it
  if (q.batch_hosts > 0) {
    Result<std::vector<ListedHost>> gpu = list_host_labels(client, *w, true);
    if (!gpu) return gpu.status();
    std::map<std::string, std::string> parent;  // union-find over host keys
    auto root = [&](std::string k) {
      while (parent[k] != k) k = parent[k];
      return k;
    };
    std::map<std::string, std::string> owner;  // UUID -> a host key holding it
    std::set<std::pair<std::string, HostLabels>> seen;
    for (const ListedHost& t : *gpu) {
      const std::string key = key_of(t.labels);
      parent.try_emplace(key, key);
      if (seen.emplace(key, t.labels).second) triples[key].gpu.push_back(t.labels);
      if (t.uuid.empty()) continue;
      auto [it, fresh] = owner.try_emplace(t.uuid, key);
      if (!fresh) {
        const std::string a = root(it->second), b = root(key);
        if (a != b) parent[std::max(a, b)] = std::min(a, b);
      }
    }
    std::map<std::string, std::vector<std::string>> groups;
    for (const auto& [key, ts] : triples) groups[root(key)].push_back(key);
    for (auto& [r, keys] : groups) hosts.push_back(std::move(keys));
    info.hosts = hosts.size();
    if (hosts.size() > q.batch_hosts) {
      // The same hosts' series of the other families (node_exporter names
      // them by its own instance): matched by their exact values too.
      Result<std::vector<ListedHost>> other = list_host_labels(client, *w, false);
      if (!other) return other.status();
      std::set<std::pair<std::string, HostLabels>> seen_other;
      for (const ListedHost& t : *other) {
        const std::string key = key_of(t.labels);
        if (!seen_other.emplace(key, t.labels).second) continue;
        if (auto it = triples.find(key); it != triples.end()) it->second.other.push_back(t.labels);
      }
    }
  }
  if (q.batch_hosts == 0 || hosts.size() <= q.batch_hosts) {
    // One pass, no host matchers: a recording of one node whose exporters
    // name it differently still joins (mapping.h).
    SignalSetBuilder builder;
    if (Status s = fetch_families(q, client, *w, nullptr, nullptr, builder, info); !s) return s;
    ++info.batches;
    return sink(builder.build(w->start_ms, w->end_ms));
  }
  // A pipeline two batches deep: the next batch is fetched (server and
  // parsing) while the sink diagnoses this one, so neither waits for the
  // other; each fetch counts into its own PrometheusInfo, added to `info`
  // on this thread, so the sink may read `info` without a lock.
  struct Fetched {
    Status status;
    SignalSet set;
    PrometheusInfo info;
  };
  auto fetch_batch = [&](size_t at) {
    std::vector<std::string> batch;
    for (size_t i = at; i < std::min(hosts.size(), at + q.batch_hosts); ++i) {
      batch.insert(batch.end(), hosts[i].begin(), hosts[i].end());
    }
    BatchLabels named;
    for (const std::string& h : batch) {
      const BatchLabels& ts = triples.at(h);
      named.gpu.insert(named.gpu.end(), ts.gpu.begin(), ts.gpu.end());
      named.other.insert(named.other.end(), ts.other.begin(), ts.other.end());
    }
    named.all = named.gpu;
    named.all.insert(named.all.end(), named.other.begin(), named.other.end());
    Fetched f;
    SignalSetBuilder builder;
    f.status = fetch_families(q, client, *w, &batch, &named, builder, f.info);
    if (f.status) f.set = builder.build(w->start_ms, w->end_ms);
    return f;
  };
  std::future<Fetched> next = std::async(std::launch::async, fetch_batch, size_t{0});
  for (size_t at = 0; at < hosts.size(); at += q.batch_hosts) {
    Fetched f = next.get();
    info.queries += f.info.queries;
    info.series += f.info.series;
    info.points += f.info.points;
    info.response_bytes += f.info.response_bytes;
    if (!f.status) return f.status;
    ++info.batches;
    if (at + q.batch_hosts < hosts.size()) next = std::async(std::launch::async, fetch_batch, at + q.batch_hosts);
    if (Status s = sink(std::move(f.set)); !s) return s;  // (a fetch in flight is waited for by ~future)
  }
  return Status::ok();
}

}  // namespace gpulens::diagnose
