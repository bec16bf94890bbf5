// Shared by serve, snapshot and record: flags common to every agent command,
// and turning a configuration into opened sources.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/config.h"
#include "cli/config_flags.h"
#include "agent/agent.h"
#include "agent/runtime.h"

namespace gpulens::cli {

// Flags that override the config file: --config, then the flag of every
// key that has one (config_keys(), cli/config_flags.h); registered on `app`.
struct CommonFlags {
  std::string config_path;
  KeyFlags keys;

  // `scope` kServe: serve's own key flags (--listen, --push, ...) too.
  void add_to(CLI::App& app, FlagScope scope = FlagScope::kAgent);
  // Loads the config file (if any), applies the flags and validates. Errors
  // are usage errors: the caller exits 2.
  Result<AgentConfig> resolve() const;
};

// Creates and opens the configured sources. When a GPU source was asked for
// and none could open, it is an error naming the reason (callers exit 1):
// the simulator runs only when asked for (`--source sim`), never as a
// silent stand-in. Notes of sources that did not open go to stderr unless
// `quiet`.
Result<std::unique_ptr<Agent>> make_agent(const AgentConfig& config, AgentOptions options, bool quiet);

// What the agent runtime hosts beside the agent (serve, and top over local
// sources): the diagnosis thresholds, profile_on and remote_write's options
// (url empty: off; `host` is its instance label).
RuntimeSettings runtime_settings(const AgentConfig& config, const std::string& host);

}  // namespace gpulens::cli
