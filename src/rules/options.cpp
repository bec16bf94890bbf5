// Rule options: the defaults table, `--set` parsing and the `rules:` section
// of the YAML config.
#include "rules/options.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "diagnose/thresholds.h"
#include "util/duration.h"

namespace gpulens::rules {
namespace {

using enum ParamKind;

Result<double> parse_number(std::string_view key, std::string_view text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || !std::isfinite(v)) {
    return invalid_argument("rules key " + std::string(key) + ": \"" + std::string(text) + "\" is not a number");
  }
  return v;
}

std::string top_keys() {
  return "job, runbook_base, latency_metric, latency_join, evaluation_interval";
}

}  // namespace

RuleOptions RuleOptions::defaults() {
  const diagnose::Thresholds kDiagnosis;
  RuleOptions o;
  o.params = {
      {"gpu_util_low.threshold", kRatio, 0.20, "GPU utilisation below this (tutorial: 20 %)"},
      {"gpu_util_low.for", kDuration, 600e3, "for this long (tutorial: 10m)"},
      {"temperature_high.threshold", kNumber, 80, "GPU temperature above this, in degrees Celsius"},
      {"temperature_high.for", kDuration, 300e3, "for this long (tutorial: 5m)"},
      {"memory_fragmentation.threshold", kRatio, 0.50, "allocator fragmentation above this (article: 50 %)"},
      {"memory_fragmentation.for", kDuration, 300e3, "for this long (article: 5m)"},
      {"allocator_retries.window", kDuration, 300e3,
       "an in-process allocator retry (cache flushed, allocation retried) or OOM within this window fires"},
      {"pcie_saturation.threshold", kRatio, 0.80, "PCIe TX or RX above this fraction of the peak"},
      {"pcie_saturation.for", kDuration, 180e3, "for this long (article: 3m)"},
      {"pcie_saturation.peak_bytes_per_second", kNumber, 0,
       "dcgm names only: measured per-direction peak; 0 derives the nominal one from link gen and width"},
      {"sm_occupancy_low.threshold", kRatio, 0.30, "SM occupancy below this (article: 30 %)"},
      {"sm_occupancy_low.p99_latency_seconds", kNumber, 0.2, "... and p99 latency above this"},
      {"sm_occupancy_low.window", kDuration, 300e3, "rate window of the latency histogram"},
      {"sm_occupancy_low.for", kDuration, 600e3, "for this long (article: 10m)"},
      {"kv_cache_pressure.threshold", kRatio, 0.95, "an engine's KV-cache usage at or above this"},
      {"kv_cache_pressure.window", kDuration, 300e3, "... while it preempted within this window (or requests wait)"},
      {"kv_cache_pressure.for", kDuration, 300e3, "for this long"},
      {"overload.window", kDuration, 300e3, "an engine's queue longer than this long ago"},
      {"overload.for", kDuration, 300e3, "for this long"},
      {"xid_errors.window", kDuration, 300e3, "an XID error within this window fires"},
      {"clock_throttle.for", kDuration, 300e3, "thermal or power clock-event reason held this long"},
      // The diagnosis rule's thresholds (diagnose/pcie_link.h): one definition.
      {"pcie_link_degraded.busy_threshold", kRatio, kDiagnosis.link_busy_util,
       "GPU utilisation at or above which a slow link matters (as diagnose.link_busy_util)"},
      {"pcie_link_degraded.busy_pcie_threshold", kRatio, kDiagnosis.link_busy_pcie,
       "... or PCIe TX or RX at or above this of the peak (as diagnose.link_busy_pcie)"},
      {"pcie_link_degraded.for", kDuration, static_cast<double>(kDiagnosis.link_degraded_for_ms),
       "for this long (as diagnose.link_degraded_for)"},
      {"gpu_lost.for", kDuration, 60e3, "gpu_up == 0 this long"},
      {"agent_down.for", kDuration, 120e3, "scrape of the agent failing this long"},
      {"source_down.for", kDuration, 300e3, "a gpulens source failing this long"},
      {"simulated_data.for", kDuration, 60e3, "an agent serving simulated data this long"},
  };
  return o;
}

Status RuleOptions::set(std::string_view key, std::string_view text) {
  if (key == "job" || key == "latency_metric") {
    if (text.empty()) return invalid_argument("rules key " + std::string(key) + " must not be empty");
    (key == "job" ? job : latency_metric) = std::string(text);
    return Status::ok();
  }
  if (key == "runbook_base") return runbook_base = std::string(text), Status::ok();
  if (key == "latency_join") {
    if (text.empty()) return invalid_argument("rules key latency_join must name at least one label");
    return latency_join = std::string(text), Status::ok();
  }
  if (key == "evaluation_interval") {
    auto ms = parse_duration_ms(text);
    if (!ms) return invalid_argument("rules key evaluation_interval: " + ms.status().message());
    return evaluation_interval_ms = *ms, Status::ok();
  }
  for (auto& p : params) {
    if (p.key != key) continue;
    if (p.kind == kDuration) {
      auto ms = parse_duration_ms(text);
      if (!ms) return invalid_argument("rules key " + p.key + ": " + ms.status().message());
      p.value = static_cast<double>(*ms);
      return Status::ok();
    }
    auto v = parse_number(key, text);
    if (!v) return v.status();
    if (*v < 0 || (p.kind == kRatio && *v > 1)) {
      return invalid_argument("rules key " + p.key + ": " + std::string(text) +
                              (p.kind == kRatio ? " is not a ratio in 0..1 (write 0.2 for 20 %)" : " is negative"));
    }
    p.value = *v;
    return Status::ok();
  }
  std::string known = top_keys();
  for (const auto& p : params) known += ", " + p.key;
  return invalid_argument("unknown rules key \"" + std::string(key) + "\" (known: " + known + ")");
}

double RuleOptions::number(std::string_view key) const {
  for (const auto& p : params) {
    if (p.key == key) return p.value;
  }
  std::abort();  // a rule template names a parameter the table lacks
}

int64_t RuleOptions::duration_ms(std::string_view key) const { return static_cast<int64_t>(number(key)); }

std::vector<std::string> RuleOptions::join_labels() const {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= latency_join.size()) {
    size_t comma = latency_join.find(',', start);
    if (comma == std::string::npos) comma = latency_join.size();
    std::string label = latency_join.substr(start, comma - start);
    while (!label.empty() && label.front() == ' ') label.erase(0, 1);
    while (!label.empty() && label.back() == ' ') label.pop_back();
    if (!label.empty()) out.push_back(label);
    start = comma + 1;
  }
  return out;
}

Status load_rule_options(const std::string& yaml_text, const std::string& origin, RuleOptions& options) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return invalid_argument(origin + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root || root.IsNull()) return Status::ok();
  if (!root.IsMap()) return invalid_argument(origin + ": expected a mapping at the top level");
  const YAML::Node section = root["rules"];
  if (!section || section.IsNull()) return Status::ok();
  auto where = [&](const YAML::Node& n) { return origin + ":" + std::to_string(n.Mark().line + 1) + ": "; };
  if (!section.IsMap()) return invalid_argument(where(section) + "rules: must be a mapping");

  for (const auto& kv : section) {
    const std::string name = kv.first.as<std::string>();
    const YAML::Node& value = kv.second;
    if (value.IsScalar()) {
      if (Status s = options.set(name, value.Scalar()); !s) return invalid_argument(where(kv.first) + s.message());
      continue;
    }
    if (!value.IsMap()) return invalid_argument(where(kv.first) + "rules." + name + " must be a value or a mapping");
    for (const auto& param : value) {
      const std::string key = name + "." + param.first.as<std::string>();
      if (!param.second.IsScalar()) return invalid_argument(where(param.first) + "rules." + key + " must be a value");
      if (Status s = options.set(key, param.second.Scalar()); !s) {
        return invalid_argument(where(param.first) + s.message());
      }
    }
  }
  return Status::ok();
}

}  // namespace gpulens::rules
