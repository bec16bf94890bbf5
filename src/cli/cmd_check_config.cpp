// `gpulens check-config FILE`: validate a config file exactly as serve,
// rules and diagnose do, and print the complete effective configuration.
// `gpulens check-config --keys` prints the key reference of docs/config.md.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.h"
#include "cli/config.h"

namespace gpulens::cli {

int run_check_config(int argc, char** argv) {
  CLI::App app{"Validate a YAML config file (as serve, rules and diagnose do); print the complete effective "
               "configuration.",
               "gpulens check-config"};
  std::string path;
  bool quiet = false, keys = false;
  app.add_option("file", path, "config file");
  app.add_flag("-q,--quiet", quiet, "print nothing when the file is valid");
  app.add_flag("--keys", keys, "print every key: type, default, flag, meaning (markdown) and exit");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (keys) {
    std::cout << keys_markdown();
    return kExitOk;
  }
  if (path.empty()) {
    std::cerr << "gpulens check-config: a config file is required\nRun 'gpulens check-config --help' for usage.\n";
    return kExitUsage;
  }

  auto config = load_config(path);
  if (!config) {
    std::cerr << "gpulens check-config: " << config.status().message() << "\n";
    return config.status().code() == Code::kNotFound ? kExitFailure : kExitUsage;
  }
  auto problems = validate(*config);
  for (const auto& p : problems) std::cerr << "gpulens check-config: " << path << ": " << p << "\n";
  if (!problems.empty()) return kExitUsage;
  if (!quiet) std::cout << "# " << path << ": valid\n" << to_yaml(*config);
  return kExitOk;
}

}  // namespace gpulens::cli
