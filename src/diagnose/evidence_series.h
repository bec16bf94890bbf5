// Each finding's evidence as a series over the diagnosis window: the signal
// the rule judged, in the unit of the evidence's threshold, at most
// kMaxEvidencePoints points (means of equal-time buckets). Computed once,
// here: the HTML report plots them (report/html_report.h) and the findings
// JSON carries them (report_json's evidence "series"), which the agent's
// web page draws.
//
//   Report r = diagnose(set, thresholds);
//   attach_evidence_series(set, r);   // every finding's Evidence::series
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "diagnose/engine.h"
#include "diagnose/signals.h"

namespace gpulens::diagnose {

inline constexpr size_t kMaxEvidencePoints = 600;

// The evidence `signal` of GPU `gpu` on `host` over [set.from_ms,
// set.to_ms], at most kMaxEvidencePoints points; empty where the host or
// GPU is not in `set`, the evidence is a fact (gpu_topology_path) or its
// signal was not sampled.
Series evidence_series(const SignalSet& set, std::string_view host, std::string_view gpu, std::string_view signal);

// Sets Evidence::series of every finding of `report` whose host and GPU
// are in `set` (call once per batch with that batch's signals and report).
void attach_evidence_series(const SignalSet& set, Report& report);

}  // namespace gpulens::diagnose
