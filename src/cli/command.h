// The subcommand table of the `gpulens` binary.
//
// Each subcommand lives in its own cmd_<name>.cpp, parses its own flags (so
// `gpulens <cmd> --help` works everywhere) and returns an exit code:
//
//   0  success
//   1  the command ran and failed (input unreadable, server down, ...)
//   2  usage error (unknown flag, bad value, malformed config)
//   3  the command ran and found problems worth failing a script on
//      (diagnose: a finding at --fail-on, warning by default; calibrate
//      --check: a link that lost bandwidth)
//
// Adding a subcommand is one line in kCommands (commands.cpp).
#pragma once

#include <span>
#include <string_view>

namespace CLI { class App; }

namespace gpulens::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitFindings = 3;

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);  // argv[0] is "gpulens <name>"
};

std::span<const Command> commands();

// Parses argv with app; prints help or a usage error. Returns -1 when the
// command should go on, else the exit code to return (0 for --help, 2 for a
// usage error).
int parse(CLI::App& app, int argc, char** argv);

}  // namespace gpulens::cli
