// The Prometheus recording and alerting rules of gpulens, built from options.
//
// One function makes the whole rule set, for the agent's native metric names
// or for dcgm-exporter's `DCGM_FI_*` names, and one renders it as a Prometheus
// rule file or as a Kubernetes PrometheusRule object. The files shipped under
// deploy/ are exactly these renderings with default options (a test compares
// them), so a user with other thresholds regenerates rather than edits:
//
//   RuleOptions o = RuleOptions::defaults();
//   o.set("temperature_high.threshold", "85");
//   std::string yaml = render(build_rules(o, Names::kNative), Format::kRuleFile);
//
// Alerts (each with summary, description carrying the value, runbook_url):
//   GPULowUtilization, GPUTemperatureHigh, GPUMemoryFragmentationHigh,
//   GPUPCIeBandwidthSaturation, GPULowSMOccupancy (only with high p99
//   latency), GPUXidError, GPUHealthWatchFailed (a DCGM health watch at
//   FAIL, from dcgm-exporter), GPUClockThrottled, GPUPCIeLinkDegraded, GPULost,
//   GpulensAgentDown, GpulensSourceDown, GpulensSimulatedData (the agent
//   serves the simulator's data: never in production).
// dcgm-exporter has no fragmentation, gpu_up or source-health signal; its
// variant leaves out GPUMemoryFragmentationHigh and GpulensSourceDown and
// detects GPULost by a GPU's series vanishing while the exporter is up.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "rules/options.h"

namespace gpulens::rules {

enum class Names : uint8_t { kNative, kDcgm };
enum class Format : uint8_t { kRuleFile, kPrometheusRule };

using Pairs = std::vector<std::pair<std::string, std::string>>;

struct Rule {
  std::string record;  // exactly one of record / alert is set
  std::string alert;
  std::string expr;    // may span lines
  int64_t for_ms = 0;  // 0: no for:
  Pairs labels;
  Pairs annotations;
};

struct Group {
  std::string name;
  int64_t interval_ms = 0;  // 0: omitted
  std::vector<Rule> rules;
};

std::vector<Group> build_rules(const RuleOptions& options, Names names);

// YAML text; deterministic, so that generated files can be compared.
std::string render(const std::vector<Group>& groups, Format format, Names names);

// PromQL number literal: shortest form that round-trips ("0.2", "80", "2e+10").
std::string promql_number(double v);

}  // namespace gpulens::rules
