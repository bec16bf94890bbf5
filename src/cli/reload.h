// What a SIGHUP changes in a running `serve`: the keys that apply at once
// and the keys that need a restart, computed from the running and the
// freshly loaded configuration.
//
// Applied at once (live_reload_key): diagnose.* (diagnosis thresholds, the
// next diagnosis uses them), rules.* (read only by `gpulens rules`),
// remote_write.* (the writer is replaced: the old one flushes what it holds
// to the old receiver within its flush_timeout, the new one starts), log.*,
// source.scrape.* (the scrape source stops the targets that left, starts the
// new ones, and keeps the others running; all restart when interval,
// timeout or max_bytes change).
// The web config file is re-read on every SIGHUP by serve itself (its path,
// web_config_file, needs a restart).
// Everything else (listen, interval, history, sources, other source.*, push.*,
// dcgm_*) is fixed while the agent runs: a change is reported and the
// running value stays until the next start.
//
//   ReloadPlan p = plan_reload(running, fresh);
//   // p.next: running with every live key taken from fresh
//   // p.applied = {"diagnose.pcie_util"}, p.needs_restart = {"listen"}
//
// Thread-safety: pure function.
#pragma once

#include <string>
#include <vector>

#include "cli/config.h"

namespace gpulens::cli {

struct ReloadPlan {
  AgentConfig next;                        // what runs after the reload
  std::vector<std::string> applied;        // live keys whose value changed
  std::vector<std::string> needs_restart;  // changed keys kept at their running value
};

// True for the keys a reload applies (see above).
bool live_reload_key(const std::string& key);

ReloadPlan plan_reload(const AgentConfig& running, const AgentConfig& fresh);

// "a, b, c" (or "none").
std::string join_keys(const std::vector<std::string>& keys);

}  // namespace gpulens::cli
