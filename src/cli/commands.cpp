// The subcommand table and the flag-parsing helper every subcommand shares.
#include "cli/command.h"

#include <CLI/CLI.hpp>

#include <array>
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
int run_rules(int argc, char** argv);
int run_diagnose(int argc, char** argv);
int run_calibrate(int argc, char** argv);

namespace {
// One line per subcommand, in the order `gpulens --help` lists them.
constexpr std::array kCommands{
    Command{"serve", "run the agent: sample GPUs and host, serve /metrics and the JSON API", run_serve},
    Command{"snapshot", "show every GPU through compute, memory, IO and health, once", run_snapshot},
    Command{"record", "record the agent's series to an OpenMetrics file", run_record},
    Command{"check-config", "validate a YAML config file", run_check_config},
    Command{"catalog", "print every metric: name, type, layer, dcgm-exporter name, meaning", run_catalog},
    Command{"version", "print the version and build information", run_version},
    Command{"nccl", "analyse NCCL_DEBUG=INFO logs: transport, GDR, topology, errors", run_nccl},
    Command{"trace", "analyse PyTorch profiler traces: idle, overlap, kernels, launch delay", run_trace},
    Command{"calibrate", "measure each GPU's real PCIe and peer bandwidth; --check compares with a past run",
            run_calibrate},
    Command{"rules", "print Prometheus alerting and recording rules with your thresholds", run_rules},
    Command{"diagnose", "name why each GPU is not doing useful work (live, recording, Prometheus)", run_diagnose},
};
}  // namespace

std::span<const Command> commands() { return kCommands; }

int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::cout << app.help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp& e) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    std::cerr << app.get_name() << ": " << e.what() << "\n"
              << "Run '" << app.get_name() << " --help' for usage.\n";
    return kExitUsage;
  }
  return -1;
}

}  // namespace gpulens::cli
