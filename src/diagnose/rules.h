// The rules of diagnosis, one function per cause, over a GPU's aligned
// signals. Internal to the engine (engine.h documents the behaviour); kept
// apart so that the rules read as a table of conditions.
//
// A rule answers per point of the GPU's timeline: 1 the condition holds,
// 0 it does not, -1 unknown (a signal it needs has no recent value). The
// engine turns those into findings. A rule whose signals are absent for the
// whole window adds a NotAssessed entry saying which and why.
#pragma once

#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/evidence_names.h"

namespace gpulens::diagnose {

using Aligned = std::vector<double>;  // one value per timeline point, NaN unknown
inline bool known(double v) { return !std::isnan(v); }

struct EvidenceSpec {
  EvidenceName signal;  // one of kEvidenceNames (evidence_names.h)
  Aligned values;
  double threshold;
  std::string detail = {};
};

struct RuleResult {
  std::string_view cause;
  std::string_view layer;
  Severity severity = Severity::kWarning;
  int64_t for_ms = 0;
  std::vector<int8_t> holds;
  std::vector<EvidenceSpec> evidence;
  std::string action;
};

struct GpuContext {
  const HostSignals& host;
  const GpuSignals& gpu;
  const Thresholds& th;
  std::vector<int64_t> t = {};  // the GPU's timeline
  int64_t step_ms = 0;
  int64_t lookback_ms = 0;
  int64_t span_ms = 0;
  int64_t cutoff_ms = INT64_MAX;  // a peer failed here: only health rules after it
  std::function<Aligned(const Series&)> align;
  // SM active, else graphics engine active, else GPU util: "how busy".
  const Series& busy_series() const;
};

std::vector<RuleResult> evaluate_rules(const GpuContext& ctx, std::vector<NotAssessed>& not_assessed,
                                       std::vector<std::string>& notes);

// The topology rule (topology_rule.cpp): `util` is the GPU's utilisation
// on its timeline; holds while a process on the GPU runs off the GPU's NUMA
// node, or uses another GPU with no NVLink or PCIe switch between them.
RuleResult topology_rule(const GpuContext& ctx, const Aligned& util, std::vector<NotAssessed>& not_assessed);

// The serving causes (serving_rule.cpp; docs/serving.md), over one
// engine's own signals, judged for each GPU the engine is joined to
// (EngineSignals::gpus); an engine whose numbers cannot be meant
// (EngineSignals::invalid) is not judged, and says why:
// - kv_cache_pressure: KV-cache usage at or above kKvCacheFull while the
//   engine preempts (preemptions per second > 0) or requests wait (for
//   capacity, where vLLM says why they wait), with the latency (p99, or
//   time to first token) degraded; a prefix-cache hit ratio below
//   kPrefixCacheLow while it holds adds prefix caching to its action;
// - overload: the queue non-empty and growing (its one-minute mean above the
//   one a minute earlier) while the KV cache is not full, the GPU busy with
//   useful work (util >= busy_util, SM active >= starved_sm_active and
//   occupancy >= sm_occupancy where known), the batch at its cap (running
//   requests, or TGI's batch tokens, >= kBatchAtPeak of their window peak)
//   and the latency degraded.
// Neither is judged (no result, no not-assessed entry) on a host without
// any engine signal. `util` and `busy` are the GPU's, on its timeline.
inline constexpr double kKvCacheFull = 0.95;
inline constexpr double kBatchAtPeak = 0.9;
inline constexpr double kPrefixCacheLow = 0.3;
std::pair<RuleResult, RuleResult> serving_rules(const GpuContext& ctx, const EngineSignals& engine, const Aligned& util,
                                                const Aligned& busy, std::vector<NotAssessed>& not_assessed);

// An engine's own series aligned to the GPU's timeline, but only where its
// latest sample is less than one of its own steps old: a page that stops
// answering stops what is judged on it at the next point (docs/serving.md).
Aligned engine_aligned(const GpuContext& ctx, const Series& s);

// When the GPU first had a fatal fault (fatal XID, lost, row-remap failure,
// uncorrectable ECC); INT64_MAX when never.
int64_t first_fatal_fault_ms(const GpuSignals& gpu);

}  // namespace gpulens::diagnose
