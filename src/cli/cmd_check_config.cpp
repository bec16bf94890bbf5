// `gpulens check-config FILE`: validate a config file exactly as serve,
// rules and diagnose do, and print a summary of the effective configuration
// (what serve runs with and the keys not at their defaults); `--verbose`
// prints every key.
// `gpulens check-config --keys` prints the key reference of docs/config.md.
// `gpulens check-config --web-config-file WEB` checks an exporter-toolkit
// web config alone (certificates and keys loaded, hashes checked), or the
// one the config file should use.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "cli/command.h"
#include "cli/config.h"
#include "agent/agent.h"
#include "server/web_security.h"
#include "store/history.h"
#include "util/duration.h"

namespace gpulens::cli {

namespace {

// The history's memory bound at this interval and window
// (History::budget_bytes): per series, every value at its worst case (a
// raw float: a chunk that XOR-codes worse turns raw), and
// the record times all series share.
std::string history_budget_line(const AgentConfig& c) {
  const auto records = static_cast<size_t>(std::max<int64_t>(1, c.history_ms / std::max<int64_t>(c.interval_ms, 1)));
  const size_t shared = History::budget_bytes(0, records);
  const size_t per_series = History::series_budget_bytes(records);
  auto kib = [](size_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return std::string(buf);
  };
  return "# history: " + std::to_string(records) + " records (" + format_duration(c.history_ms) + " at " +
         format_duration(c.interval_ms) + "): at most " + kib(per_series) + " a series (4 bytes a value), " +
         kib(shared) + " of record times\n";
}

}  // namespace

int run_check_config(int argc, char** argv) {
  CLI::App app{"Validate a YAML config file (as serve, rules and diagnose do); print listen, interval, history, "
               "sources and the keys not at their defaults (--verbose: every key).",
               "gpulens check-config"};
  std::string path, web;
  bool quiet = false, keys = false, verbose = false;
  app.add_option("file", path, "config file");
  app.add_flag("-q,--quiet", quiet, "print nothing when the file is valid");
  app.add_flag("-v,--verbose", verbose, "print the complete effective configuration, every key with its value");
  app.add_option("--web-config-file", web,
                 "check this exporter-toolkit web config (TLS, basic auth, headers); with FILE: as its web_config_file");
  app.add_flag("--keys", keys, "print every key: type, default, flag, meaning (markdown) and exit");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (keys) {
    std::cout << keys_markdown();
    return kExitOk;
  }
  if (path.empty() && !web.empty()) {
    Status s = check_web_config_file(web);
    if (s) s = check_web_config_dates(web, wall_ms() / 1000);
    if (!s) {
      std::cerr << "gpulens check-config: " << s.message() << "\n";
      return s.code() == Code::kNotFound ? kExitFailure : kExitUsage;
    }
    if (!quiet) std::cout << "# " << web << ": valid web config\n";
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
  if (!web.empty()) {
    if (Status s = set_key(*config, "web_config_file", web, "--web-config-file"); !s) {
      std::cerr << "gpulens check-config: " << s.message() << "\n";
      return kExitUsage;
    }
  }
  auto problems = validate(*config);
  // Beyond what serve checks: a server certificate that has expired (serve
  // would start, and every scrape would fail its TLS verification).
  if (problems.empty() && !config->web_config_file.empty()) {
    if (Status s = check_web_config_dates(config->web_config_file, wall_ms() / 1000); !s) {
      problems.push_back("web_config_file: " + s.message());
    }
  }
  for (const auto& p : problems) std::cerr << "gpulens check-config: " << path << ": " << p << "\n";
  if (!problems.empty()) return kExitUsage;
  if (quiet) return kExitOk;
  if (verbose) {
    std::cout << "# " << path << ": valid\n" << to_yaml(*config);
    return kExitOk;
  }
  size_t changed = 0;
  const std::string yaml = to_yaml_summary(*config, changed);
  // listen, interval, history and sources are always shown.
  const size_t hidden = config_keys().size() - 4 - changed;
  std::cout << "# " << path << ": valid; " << hidden << (hidden == 1 ? " key" : " keys")
            << " at the default not shown (--verbose shows every key)\n"
            << history_budget_line(*config) << yaml;
  return kExitOk;
}

}  // namespace gpulens::cli
