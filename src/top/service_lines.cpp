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

std::vector<std::string> service_lines(const std::map<std::string, double, std::less<>>& node_fields,
                                       size_t gpu_count) {
  struct Engine {
    std::string kind, pid, model;
    double kv = -1, waiting = -1, running = -1, for_capacity = -1, prefix = -1, batch_tokens = -1;
    std::map<double, double> e2e, ttft;  // le -> cumulative count
  };
  std::map<std::string, Engine> engines;      // by endpoint
  std::map<std::string, std::set<int>> gpus;  // pid -> GPUs
  for (const auto& [name, v] : node_fields) {
    const std::string_view key = name;
    if (key.starts_with("host_gpu_process_affinity_info{")) {
      const std::string gpu = label_in_key(key, "gpu");
      if (!gpu.empty() && gpu.size() < 4 && gpu.find_first_not_of("0123456789") == std::string::npos) {
        gpus[label_in_key(key, "pid")].insert(std::atoi(gpu.c_str()));
      }
      continue;
    }
    if (!key.starts_with("serving_")) continue;
    const std::string endpoint = label_in_key(key, "endpoint");
    if (endpoint.empty()) continue;
    Engine& e = engines[endpoint];
    e.kind = label_in_key(key, "engine");
    if (e.pid.empty()) e.pid = label_in_key(key, "pid");
    const std::string le = label_in_key(key, "le");
    const double bound =
        le == "+Inf" ? std::numeric_limits<double>::infinity() : le.empty() ? -1 : std::atof(le.c_str());
    if (key.starts_with("serving_engine_info{")) e.model = label_in_key(key, "model");
    if (key.starts_with("serving_kv_cache_usage_ratio{")) e.kv = v;
    if (key.starts_with("serving_requests_waiting{")) e.waiting = v;
    if (key.starts_with("serving_requests_running{")) e.running = v;
    if (key.starts_with("serving_requests_waiting_by_reason{") && label_in_key(key, "reason") == "capacity") {
      e.for_capacity = v;
    }
    if (key.starts_with("serving_prefix_cache_hit_ratio{")) e.prefix = v;
    if (key.starts_with("serving_batch_max_tokens{")) e.batch_tokens = v;
    if (bound >= 0 && key.starts_with("serving_request_latency_seconds{")) e.e2e[bound] = v;
    if (bound >= 0 && key.starts_with("serving_time_to_first_token_seconds{")) e.ttft[bound] = v;
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
