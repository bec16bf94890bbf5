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
  std::string seed;
  std::string proc_root, sys_root, nvml_library;
  std::string kmsg_path;
  std::string hpc_job_mapping_dir;
  bool kube_owner_labels = false;
  std::string kube_api_url, node_name;
  std::string log_level, log_format;
  std::string profile, collectors;
  std::vector<std::string> scrape;  // --scrape URL, repeatable

  void add_to(CLI::App& app);
  // Loads the config file (if any) and applies the flags. Errors are usage
  // errors: the caller exits 2.
  Result<AgentConfig> resolve() const;
};

// Creates and opens the configured sources. When a GPU source was asked for
// and none could open, it is an error naming the reason (callers exit 1):
// the simulator runs only when asked for (`--source sim`), never as a
// silent stand-in. Notes of sources that did not open go to stderr unless
// `quiet`.
Result<std::unique_ptr<Agent>> make_agent(const AgentConfig& config, AgentOptions options, bool quiet);

}  // namespace gpulens::cli
