// Replay input: a recording file (OpenMetrics with timestamps) turned into a
// SignalSet for diagnosis.
//
// A plain scrape is accepted too: a dcgm-exporter or node_exporter page
// saved as it was served (text 0.0.4 or OpenMetrics, no timestamps, no
// "# EOF" needed). It is one point in time: every sample takes the file's
// modification time (load_replay_text: `at_ms`), counters give no rates, and
// the set is marked point_in_time so that diagnosis judges only what needs
// no duration. Whether a file is a scrape is decided by its first sample: a
// file whose first sample has no timestamp but a later one has is an error
// (a recording with a sample cut short, or two files concatenated), and so is
// a series that appears twice.
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

#include "expfmt/stream_parser.h"
#include "diagnose/signals.h"
#include "util/status.h"

namespace gpulens::diagnose {

struct ReplayInfo {
  expfmt::StreamStats stats;
  size_t known_series = 0;     // series mapped onto signals
  size_t unknown_series = 0;   // series of known families the mapping declined (e.g. loopback NIC)
  bool point_in_time = false;  // a plain scrape, without timestamps
};

Result<SignalSet> load_replay(const std::string& path, ReplayInfo& info, const expfmt::StreamLimits& limits = {});

// The same from text in memory (tests); `at_ms` is the time of a plain
// scrape's samples.
Result<SignalSet> load_replay_text(std::string_view text, std::string_view name, ReplayInfo& info,
                                   const expfmt::StreamLimits& limits = {}, int64_t at_ms = 0);

}  // namespace gpulens::diagnose
