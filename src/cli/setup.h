// Shared by serve, snapshot and record: flags common to every agent command,
// and turning a configuration into opened sources.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cli/config.h"
#include "server/agent.h"

namespace gpulens::cli {

// Flags that override the config file; registered on `app`.
struct CommonFlags {
  std::string config_path;
  std::string sources;
  std::string scenario;
  std::string interval;
  uint64_t seed = 0;
  bool seed_set = false;
  std::string proc_root, sys_root, nvml_library;

  void add_to(CLI::App& app);
  // Loads the config file (if any) and applies the flags. Errors are usage
  // errors: the caller exits 2.
  Result<AgentConfig> resolve() const;
};

// Creates and opens the configured sources. When no source was named and no
// GPU source could open, falls back to the simulator and says so on stderr.
// `scenario_label` receives the simulated scenario's name ("" when real).
Result<std::unique_ptr<Agent>> make_agent(const AgentConfig& config, AgentOptions options, bool quiet);

}  // namespace gpulens::cli
