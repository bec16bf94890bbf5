// Prometheus input: the canonical signals of a whole fleet, read from any
// Prometheus-compatible query API (Prometheus, VictoriaMetrics, Thanos,
// Mimir) with /api/v1/query_range.
//
// One request lists the metric names the server holds; then one range query
// per family diagnosis knows and the server has, run in parallel, each
// reading real samples only (real_samples(): a series that ended is absent
// after its last sample, as in a replay of the same data, instead of
// repeated for query_range's 5-minute lookback). Per-CPU
// families are summed server-side (sum without (cpu)), so a fleet of
// hundreds of nodes costs one series per node and mode, not per CPU. The
// step keeps every series at most 11000 points (the server's limit) and is
// never finer than 15 s unless asked.
//
// A fleet is streamed: one instant query lists the hosts that have GPU
// series in the window (count by hostname, Hostname, instance, UUID,
// gpu_uuid: names that share a GPU UUID are one host, read in one batch and
// joined by mapping.h), a second the
// label triples of the other families' series (node_exporter's own
// instance), then the hosts are fetched `batch_hosts` at a time, each
// family's query narrowed to the batch's hosts by exact label values on the
// same labels that join series to hosts (mapping.h host_key; an alternation
// of literals costs the server a set lookup, where a case-insensitive
// regular expression cost Prometheus four times the CPU), and each batch is
// handed over as its own SignalSet. The next batch is fetched while the sink diagnoses
// the current one, so memory is bounded by two batches, not by the fleet. A
// fleet no larger than one batch is read in one pass without host matchers.
//
//   PrometheusQuery q{.url = "http://prom:9090", .range_ms = 1'800'000};
//   PrometheusInfo info;
//   Status s = stream_prometheus(q, info, [&](SignalSet&& batch) {
//     merge_report(report, diagnose(batch, th));
//     return Status::ok();
//   });
//
// Thread-safety: free functions; they use their own worker threads and call
// the sink from the calling thread, one batch at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "diagnose/signals.h"
#include "util/http_client.h"
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
  size_t max_series = 100'000;  // all queries of one batch together; more is an error
  size_t batch_hosts = 64;      // hosts fetched and diagnosed together; 0: the whole fleet at once
  TlsClientOptions tls = {};     // https:// servers (the config's prometheus.tls_config)
  HttpAuthOptions auth = {};     // basic auth, bearer token, headers (X-Scope-OrgID for Mimir)
};

// A 429 or 503 with a Retry-After of at most this long is waited for and
// asked again (up to kMaxRetries times); a longer one is an error. A
// redirect (3xx) is an error naming where it points (not followed).
inline constexpr int64_t kMaxRetryAfterWaitMs = 30'000;
inline constexpr int kMaxRetries = 3;

struct PrometheusInfo {
  size_t queries = 0;
  size_t series = 0;
  size_t points = 0;
  int64_t step_ms = 0;
  size_t response_bytes = 0;
  size_t hosts = 0;    // GPU hosts listed in the window (0: not listed, one pass)
  size_t batches = 0;
};

// The whole window as one SignalSet (no batching).
Result<SignalSet> load_prometheus(const PrometheusQuery& q, PrometheusInfo& info);

// The window batch by batch; an error from the sink stops the stream and is
// returned. Batches come in host order.
using BatchSink = std::function<Status(SignalSet&&)>;
Status stream_prometheus(const PrometheusQuery& q, PrometheusInfo& info, const BatchSink& sink);

// The labels that can name a series' host (mapping.h host_key), as the host
// listing returns them: each distinct triple in the window.
struct HostLabels {
  std::string hostname, Hostname, instance;
  auto operator<=>(const HostLabels&) const = default;
};

// The PromQL of one family narrowed to the hosts these triples name: a union
// over the labels that name a host, in host_key's order of precedence, so
// that each series is selected by the label that decides its host, matched
// against the listed values exactly. Exposed for tests.
// With `step_ms`, each selector reads real samples only (real_samples()).
std::string promql_for_label_values(std::string_view name, const std::string& extra,
                                    const std::vector<HostLabels>& triples, int64_t step_ms = 0);

// A selector that gives, at each step of a range query, the last sample of
// the step before it (last_over_time over step - 1 ms: (t - step, t]), and
// nothing where the step holds no sample: no 5-minute lookback repeating
// the last sample after a series ends. step_ms <= 1: the selector as is.
std::string real_samples(const std::string& selector, int64_t step_ms);

// The automatic step for a range: ceil(range / 11000) but at least 15 s.
int64_t auto_step_ms(int64_t range_ms);

// The names diagnosis asks a server for (families it maps).
std::vector<std::string> diagnosis_metric_names();

}  // namespace gpulens::diagnose
