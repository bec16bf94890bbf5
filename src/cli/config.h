// The agent's configuration: one plain struct, filled from a YAML file and
// then from flags (flags win). `gpulens check-config FILE` validates it.
//
//   # gpulens.yaml — every key is optional
//   listen: 0.0.0.0:9400
//   interval: 1s
//   history: 1h
//   sources: [nvml, host]          # default: every source enabled by default
//   dcgm_names: false
//   source:
//     sim:  {scenario: healthy-training, seed: 1, speed: 1}
//     host: {proc_root: /proc, sys_root: /sys}
//     nvml: {library: libnvidia-ml.so.1, calibration: /etc/gpulens/calibration.json}
//   remote_write: {url: http://vm:8428/api/v1/write}
//   diagnose: {...}                 # thresholds, see docs/diagnose.md
//   rules: {...}                    # alert thresholds, see `gpulens rules`
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sources/options.h"
#include "util/status.h"

namespace gpulens::cli {

struct RemoteWriteConfig {
  std::string url;
  int64_t interval_ms = 0;  // 0: the sampling interval
};

struct AgentConfig {
  std::string listen = "127.0.0.1:9400";
  int64_t interval_ms = 1000;
  int64_t history_ms = 3600 * 1000;
  std::vector<std::string> sources;  // empty: defaults
  bool dcgm_names = false;
  SourceOptions source;
  RemoteWriteConfig remote_write;
  std::string path;  // the file it came from, "" for defaults
};

// Loads `path` over the defaults. Errors name file:line:column and the key.
Result<AgentConfig> load_config(const std::string& path);
Result<AgentConfig> parse_config(const std::string& yaml_text, const std::string& origin);
// Cross-field checks (interval vs history, known sources). Empty when fine.
std::vector<std::string> validate(const AgentConfig& config);
// The effective configuration as YAML, for check-config.
std::string to_yaml(const AgentConfig& config);

}  // namespace gpulens::cli
