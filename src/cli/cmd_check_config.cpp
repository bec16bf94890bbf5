// `gpulens check-config FILE`: validate a config file and print what it means.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.h"
#include "cli/config.h"
#include "sources/sim/scenario.h"

namespace gpulens::cli {

int run_check_config(int argc, char** argv) {
  CLI::App app{"Validate a YAML config file; print the effective configuration.", "gpulens check-config"};
  std::string path;
  bool quiet = false;
  app.add_option("file", path, "config file")->required();
  app.add_flag("-q,--quiet", quiet, "print nothing when the file is valid");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto config = load_config(path);
  if (!config) {
    std::cerr << "gpulens check-config: " << config.status().message() << "\n";
    return config.status().code() == Code::kNotFound ? kExitFailure : kExitUsage;
  }
  auto problems = validate(*config);
  bool wants_sim = config->sources.empty();
  for (const auto& s : config->sources) wants_sim |= s == "sim";
  if (wants_sim) {
    const std::string dir =
        config->source.sim.scenario_dir.empty() ? sim::default_scenario_dir() : config->source.sim.scenario_dir;
    if (auto s = sim::load_scenario(config->source.sim.scenario, dir); !s) problems.push_back(s.status().message());
  }
  for (const auto& p : problems) std::cerr << "gpulens check-config: " << path << ": " << p << "\n";
  if (!problems.empty()) return kExitUsage;
  if (!quiet) std::cout << "# " << path << ": valid\n" << to_yaml(*config);
  return kExitOk;
}

}  // namespace gpulens::cli
