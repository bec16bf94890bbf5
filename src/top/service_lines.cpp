// The service line of each serving engine.
#include "top/service_lines.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <string_view>

#include "diagnose/mapping.h"
#include "model/series.h"

namespace gpulens::top {
namespace {

std::string num(const char* f, double v) {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

}  // namespace

std::vector<NodeSeries> series_from_fields(const std::map<std::string, double, std::less<>>& fields) {
  std::vector<NodeSeries> out;
  out.reserve(fields.size());
  for (const auto& [key, v] : fields) {
    KeyText k = key_from_text(key);
    out.push_back({std::move(k.name), std::move(k.labels), k.part, v});
  }
  return out;
}

std::vector<NodeSeries> entity_series(simdjson::dom::element node) {
  std::vector<NodeSeries> out;
  simdjson::dom::array series;
  if (node["series"].get_array().get(series)) {
    std::map<std::string, double, std::less<>> fields;  // an agent of the previous release
    simdjson::dom::object obj;
    if (node["fields"].get_object().get(obj)) return out;
    for (auto kv : obj) {
      double v = 0;
      if (!kv.value.get_double().get(v)) fields.emplace(std::string(kv.key), v);
    }
    return series_from_fields(fields);
  }
  for (simdjson::dom::element s : series) {
    NodeSeries n;
    std::string_view sv;
    if (s["name"].get_string().get(sv) || s["value"].get_double().get(n.value)) continue;
    n.name = std::string(sv);
    simdjson::dom::object labels;
    if (!s["labels"].get_object().get(labels)) {
      for (auto kv : labels) {
        if (!kv.value.get_string().get(sv)) n.labels.set(kv.key, sv);
      }
    }
    if (!s["part"].get_string().get(sv)) {
      n.part = sv == "sum" ? HistogramPart::kSum : sv == "count" ? HistogramPart::kCount : HistogramPart::kBucket;
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::vector<std::string> service_lines(const std::vector<NodeSeries>& node, size_t gpu_count) {
  struct Engine {
    std::string kind, pid, model;
    double kv = -1, waiting = -1, running = -1, for_capacity = -1, prefix = -1, batch_tokens = -1;
    std::map<double, double> e2e, ttft;  // le -> cumulative count
  };
  std::map<std::string, Engine> engines;      // by endpoint
  std::map<std::string, std::set<int>> gpus;  // pid -> GPUs
  for (const NodeSeries& s : node) {
    const std::string_view name = s.name;
    const double v = s.value;
    if (name == "host_gpu_process_affinity_info") {
      const std::string gpu(s.labels.get("gpu"));
      if (!gpu.empty() && gpu.size() < 4 && gpu.find_first_not_of("0123456789") == std::string::npos) {
        gpus[std::string(s.labels.get("pid"))].insert(std::atoi(gpu.c_str()));
      }
      continue;
    }
    if (!name.starts_with("serving_")) continue;
    const std::string endpoint(s.labels.get("endpoint"));
    if (endpoint.empty()) continue;
    Engine& e = engines[endpoint];
    e.kind = s.labels.get("engine");
    if (e.pid.empty()) e.pid = s.labels.get("pid");
    const std::string le(s.part == HistogramPart::kBucket ? s.labels.get("le") : std::string_view());
    const double bound =
        le == "+Inf" ? std::numeric_limits<double>::infinity() : le.empty() ? -1 : std::atof(le.c_str());
    if (name == "serving_engine_info") e.model = s.labels.get("model");
    if (name == "serving_kv_cache_usage_ratio") e.kv = v;
    if (name == "serving_requests_waiting") e.waiting = v;
    if (name == "serving_requests_running") e.running = v;
    if (name == "serving_requests_waiting_by_reason" && s.labels.get("reason") == "capacity") e.for_capacity = v;
    if (name == "serving_prefix_cache_hit_ratio") e.prefix = v;
    if (name == "serving_batch_max_tokens") e.batch_tokens = v;
    if (bound >= 0 && name == "serving_request_latency_seconds") e.e2e[bound] = v;
    if (bound >= 0 && name == "serving_time_to_first_token_seconds") e.ttft[bound] = v;
  }
  auto p99 = [](const std::map<double, double>& h) -> std::string {
    const std::vector<std::pair<double, double>> b(h.begin(), h.end());
    const double q = diagnose::histogram_quantile(0.99, b);
    if (std::isnan(q)) return "-";
    return q < 1 ? num("%.0f ms", q * 1000) : num("%.3g s", q);
  };
  std::vector<std::string> out;
  for (const auto& [endpoint, e] : engines) {
    std::string where;
    if (auto it = gpus.find(e.pid); !e.pid.empty() && it != gpus.end()) {
      for (int g : it->second) where += (where.empty() ? "" : ",") + std::to_string(g);
      where = " on GPU" + std::string(it->second.size() > 1 ? "s " : " ") + where;
    } else if (engines.size() == 1 && gpu_count > 0) {
      where = " on all " + std::to_string(gpu_count) + " GPUs";
    } else {
      where = " on GPUs not known";
    }
    const std::string model = e.model.empty() ? "" : " (" + e.model + ")";
    // What only some engines say, shown where said: vLLM V1's requests
    // waiting for capacity and prefix-cache hits, SGLang's hits, TGI's
    // batch tokens.
    const std::string capacity = e.for_capacity >= 0 ? num(" (%.0f for capacity)", e.for_capacity) : "";
    const std::string prefix = e.prefix >= 0 ? num(", prefix cache hits %.0f%%", e.prefix * 100) : "";
    const std::string tokens = e.batch_tokens >= 0 ? num(", batch %.0f tokens", e.batch_tokens) : "";
    out.push_back(e.kind + " at " + endpoint + model + where + ": KV cache " + (e.kv >= 0 ? num("%.0f%%", e.kv * 100) : "-") +
                  prefix + ", " + (e.waiting >= 0 ? num("%.0f", e.waiting) : "-") + " waiting" + capacity + ", " +
                  (e.running >= 0 ? num("%.0f", e.running) : "-") + " running" + tokens + ", p99 " + p99(e.e2e) +
                  ", TTFT p99 " + p99(e.ttft));
  }
  return out;
}

}  // namespace gpulens::top
