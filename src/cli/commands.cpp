// The subcommand table and the flag-parsing helper every subcommand shares.
#include "cli/command.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <vector>
#include <iostream>

namespace gpulens::cli {

int run_version(int argc, char** argv);
int run_serve(int argc, char** argv);
int run_snapshot(int argc, char** argv);
int run_record(int argc, char** argv);
int run_check_config(int argc, char** argv);
int run_catalog(int argc, char** argv);
int run_nccl(int argc, char** argv);
int run_trace(int argc, char** argv);
int run_profile(int argc, char** argv);
int run_rules(int argc, char** argv);
int run_diagnose(int argc, char** argv);
int run_calibrate(int argc, char** argv);
int run_top(int argc, char** argv);

namespace {
// One line per subcommand, in the order `gpulens --help` lists them.
constexpr std::array kCommands{
    Command{"serve", "run the agent: sample GPUs and host, serve /metrics and the JSON API", run_serve},
    Command{"snapshot", "show every GPU through compute, memory, IO and health, once", run_snapshot},
    Command{"top", "the overview live in the terminal: per-GPU layers, history, findings, processes (like nvitop)",
            run_top},
    Command{"record", "record the agent's series to an OpenMetrics file", run_record},
    Command{"check-config", "validate a YAML config file", run_check_config},
    Command{"catalog", "print every metric: name, type, layer, dcgm-exporter name, meaning", run_catalog},
    Command{"version", "print the version and build information", run_version},
    Command{"nccl", "analyse NCCL_DEBUG=INFO logs: transport, GDR, topology, errors", run_nccl},
    Command{"trace", "analyse PyTorch profiler traces: idle, overlap, kernels, launch delay", run_trace},
    Command{"profile", "capture Python stacks or a torch trace inside a process running gpulens_client, analysed",
            run_profile},
    Command{"calibrate", "measure each GPU's real PCIe and peer bandwidth; --check compares with a past run",
            run_calibrate},
    Command{"rules", "print Prometheus alerting and recording rules with your thresholds", run_rules},
    Command{"diagnose", "name why each GPU is not doing useful work (from a recording or Prometheus)", run_diagnose},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_flag_message(CLI::App& app, int argc, char** argv, const std::string& fallback) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) names.push_back("--" + n);
  }
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!arg.starts_with("--")) continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(names.begin(), names.end(), arg) != names.end()) continue;
    std::string best;
    size_t best_d = 4;
    for (const auto& n : names) {
      const size_t d = edit_distance(arg, n);
      if (d < best_d) best_d = d, best = n;
    }
    return "unknown flag " + arg + (best.empty() ? "" : " (did you mean " + best + "?)");
  }
  return fallback;
}

}  // namespace

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ExtrasError& e) {
    // CLI11 lists extras in reverse and without a hint: name the first
    // unknown flag as typed, with the closest real one.
    std::cerr << app.get_name() << ": " << unknown_flag_message(app, argc, argv, e.what()) << "\n"
              << "Run '" << app.get_name() << " --help' for usage.\n";
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": " << e.what() << "\n"
              << "Run '" << app.get_name() << " --help' for usage.\n";
    return kExitUsage;
  }
  return -1;
}

}  // namespace gpulens::cli
