// Prometheus input: the canonical signals of a whole fleet, read from any
// Prometheus-compatible query API (Prometheus, VictoriaMetrics, Thanos,
// Mimir) with /api/v1/query_range.
//
// One request lists the metric names the server holds; then one range query
// per family diagnosis knows and the server has, run in parallel. Per-CPU
// families are summed server-side (sum without (cpu)), so a fleet of
// hundreds of nodes costs one series per node and mode, not per CPU. The
// step keeps every series at most 11000 points (the server's limit) and is
// never finer than 15 s unless asked.
//
//   PrometheusQuery q{.url = "http://prom:9090", .range_ms = 1'800'000};
//   PrometheusInfo info;
//   Result<SignalSet> set = load_prometheus(q, info);
//
// Thread-safety: free function; uses its own worker threads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diagnose/signals.h"
#include "util/status.h"

namespace gpulens::diagnose {

struct PrometheusQuery {
  std::string url;            // base, e.g. http://127.0.0.1:9090
  int64_t range_ms = 1'800'000;
  int64_t end_ms = 0;         // 0: now
  std::string match;          // extra matchers: {cluster="a"} or cluster="a",job=~"dcgm.*"
  int64_t step_ms = 0;        // 0: automatic
  int parallel = 8;
  int64_t timeout_ms = 30'000;
  size_t max_series = 100'000;  // all queries together; more is an error
};

struct PrometheusInfo {
  size_t queries = 0;
  size_t series = 0;
  size_t points = 0;
  int64_t step_ms = 0;
  size_t response_bytes = 0;
};

Result<SignalSet> load_prometheus(const PrometheusQuery& q, PrometheusInfo& info);

// The automatic step for a range: ceil(range / 11000) but at least 15 s.
int64_t auto_step_ms(int64_t range_ms);

// The names diagnosis asks a server for (families it maps).
std::vector<std::string> diagnosis_metric_names();

}  // namespace gpulens::diagnose
