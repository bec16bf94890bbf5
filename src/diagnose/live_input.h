// Live input: diagnosis over the agent's own history.
//
// The agent keeps every series in a bounded History (counters already as
// per-second rates); this builds the SignalSet of the last `window_ms` from
// it, through the same name mapping as recordings (gpulens' native names),
// and runs the engine; the report carries each evidence's series
// (evidence_series.h). The agent calls diagnose_live() for its JSON API
// and renders report_json() / report_text().
//
//   Report r = diagnose_live(registry, history, now_ms, thresholds);
//   std::string body = report_json(r);
//
// Thread-safety: takes the registry lock to copy series metadata, then reads
// the history under its own lock; safe while the sampler records.
#pragma once

#include <cstdint>
#include <string>

#include "diagnose/engine.h"
#include "diagnose/signals.h"
#include "model/series.h"
#include "store/history.h"

namespace gpulens::diagnose {

SignalSet signals_from_history(const SeriesRegistry& registry, const History& history, int64_t from_ms,
                               int64_t to_ms, const std::string& host = "localhost");

Report diagnose_live(const SeriesRegistry& registry, const History& history, int64_t now_ms,
                     const Thresholds& thresholds, int64_t window_ms = 1'800'000,
                     const std::string& host = "localhost");

}  // namespace gpulens::diagnose
