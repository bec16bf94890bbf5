// Parsers of what a process pushes: the Pushgateway grouping path, the
// Prometheus text format 0.0.4 body, and the OTLP/HTTP JSON body.
//
// All three produce plain samples (name, labels, value) and stop at the first
// problem with a message naming where it is: "line 3: ...", "path segment 4:
// ...", "resourceMetrics[0].scopeMetrics[0].metrics[2]: ...". Limits (labels
// per series, their lengths, samples per body) are checked while parsing, so
// a hostile body costs at most its own size.
//
//   PushLimits limits;
//   auto key = parse_group_path("/metrics/job/trainer/pid/4242");   // {job=trainer, pid=4242}
//   auto samples = parse_text_body("gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-1\"} 2e9\n", limits);
//   auto otlp = parse_otlp_json(body, limits);   // samples + points it had to refuse
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace gpulens::push {

// Labels as a pusher sent them, in arrival order and not yet checked; the
// store checks them (model/label_rules.h) and keeps them as model/labels.h Labels.
using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct PushLimits {
  size_t max_body_bytes = 1 << 20;     // push.max_body_bytes
  size_t max_series_per_push = 5000;   // push.max_series_per_push
  size_t max_series_per_group = 2048;  // push.max_series_per_group
  size_t max_series_per_job = 2048;    // push.max_series_per_job: a pusher's groups together (its job)
  size_t max_series = 4096;            // push.max_series: all groups together
  size_t max_groups = 1024;            // push.max_groups
  size_t max_labels = 24;              // push.max_labels, per series, grouping labels included
  size_t max_label_length = 256;       // push.max_label_length, of a name or a value (bytes)
};

struct PushedSample {
  std::string name;
  LabelPairs labels;
  double value = 0;
  std::string type;  // "counter", "gauge", "untyped"... from # TYPE (text) or the OTLP kind
  std::string where; // "line 3" (text) or the JSON path of the point (OTLP), for error messages
};

// "/metrics/job/<job>{/<label>/<value>}" with @base64 (URL-safe, padding
// optional, "=" for empty) and percent-decoding. `job` first and non-empty.
Result<LabelPairs> parse_group_path(std::string_view path, const PushLimits& limits);

// Prometheus text format 0.0.4. Refuses timestamps (as the Pushgateway does),
// CR line endings, a last line without "\n", duplicate series.
Result<std::vector<PushedSample>> parse_text_body(std::string_view body, const PushLimits& limits);

struct OtlpResource {
  LabelPairs attributes;                  // the resource's attributes
  std::vector<PushedSample> samples;  // labels: the point's attributes only
};
struct OtlpResult {
  std::vector<OtlpResource> resources;
  uint64_t rejected_points = 0;       // points of kinds we do not take (histograms...) or without a value
  std::string rejected_message;       // why, for partialSuccess.errorMessage
};
// OTLP ExportMetricsServiceRequest in JSON. Gauges and sums, int and double
// points. Attribute keys have '.' turned into '_' (gpu.uuid -> gpu_uuid,
// process.pid -> process_pid); the caller decides what they mean.
Result<OtlpResult> parse_otlp_json(std::string_view body, const PushLimits& limits);

}  // namespace gpulens::push
