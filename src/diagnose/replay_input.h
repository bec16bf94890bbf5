// Replay input: a recording file (OpenMetrics with timestamps) turned into a
// SignalSet for diagnosis.
//
// Families diagnosis does not use are skipped at parse time (counted, never
// stored), so a recording of everything costs memory only for what matters.
//
//   ReplayInfo info;
//   Result<SignalSet> set = load_replay("rec.om", info);
//   for (auto& w : info.stats.warnings) std::cerr << w << "\n";
//
// Thread-safety: free function; no shared state.
#pragma once

#include <string>

#include "diagnose/openmetrics_parser.h"
#include "diagnose/signals.h"
#include "util/status.h"

namespace gpulens::diagnose {

struct ReplayInfo {
  ParseStats stats;
  size_t known_series = 0;     // series mapped onto signals
  size_t unknown_series = 0;   // series of known families the mapping declined (e.g. loopback NIC)
};

Result<SignalSet> load_replay(const std::string& path, ReplayInfo& info, const ParseLimits& limits = {});

// The same from text in memory (tests).
Result<SignalSet> load_replay_text(std::string_view text, std::string_view name, ReplayInfo& info,
                                   const ParseLimits& limits = {});

}  // namespace gpulens::diagnose
