// Options of the generated Prometheus rules: thresholds, `for:` durations and
// the few names the rules depend on (scrape job, latency histogram, runbooks).
//
// Defaults are the article's and the tutorial's thresholds. Users change them
// in the `rules:` section of a YAML config file or with `--set KEY=VALUE`,
// where KEY is `<alert>.<param>` or a top-level key, exactly as in the file:
//
//   rules:
//     job: gpulens
//     gpu_util_low: {threshold: 0.2, for: 10m}
//     sm_occupancy_low: {threshold: 0.3, p99_latency_seconds: 0.2}
//
//   RuleOptions o = RuleOptions::defaults();
//   Status s = o.set("gpu_util_low.for", "30s");       // ok
//   s = o.set("gpu_util_low.threshold", "1.5");          // error: ratio in 0..1
//   s = load_rule_options(yaml_text, "gpulens.yaml", o); // names file and line
//
// Thread-safety: a plain value.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace gpulens::rules {

// How a numeric parameter is written and checked.
enum class ParamKind : uint8_t {
  kRatio,     // 0..1
  kNumber,    // any finite value >= 0
  kDuration,  // "10m", stored in milliseconds; 0 means "none"
};

struct Param {
  std::string key;  // "<alert>.<param>", e.g. "gpu_util_low.for"
  ParamKind kind;
  double value;     // ratio/number, or milliseconds for durations
  std::string help;
};

struct RuleOptions {
  std::string job = "gpulens";  // scrape job of the agent (AgentDown)
  std::string runbook_base = "https://github.com/gpulens/gpulens/blob/main/docs/runbooks.md";
  std::string latency_metric = "serving_request_latency_seconds";  // histogram base name
  std::string latency_join = "instance";  // label(s) joining GPUs to latency, comma-separated
  int64_t evaluation_interval_ms = 0;     // group interval; 0: Prometheus' global one
  std::vector<Param> params;              // every numeric parameter, in a fixed order

  static RuleOptions defaults();

  // Sets one key from its text form ("0.3", "5m", "gpulens"). Unknown keys
  // and out-of-range values are errors that name the key.
  Status set(std::string_view key, std::string_view text);

  double number(std::string_view key) const;  // key must exist (programming error otherwise)
  int64_t duration_ms(std::string_view key) const;
  std::vector<std::string> join_labels() const;
};

// Applies the `rules:` section of a YAML document (other top-level sections
// are ignored: the file may be the agent's whole config). Errors name origin,
// line and key.
Status load_rule_options(const std::string& yaml_text, const std::string& origin, RuleOptions& options);

}  // namespace gpulens::rules
