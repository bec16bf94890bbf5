// `gpulens nccl LOG...`: analyse NCCL_DEBUG=INFO logs (transport, GDR,
// topology, errors). The analysis lives in src/analyze/nccl.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "analyze/nccl/reader.h"
#include "analyze/nccl/render.h"
#include "cli/command.h"

namespace gpulens::cli {

int run_nccl(int argc, char** argv) {
  CLI::App app{
      "Analyse NCCL_DEBUG=INFO logs (one job; one file per node is fine): NCCL version, ranks, "
      "nodes, inter-node transport, GPUDirect RDMA, intra-node paths, channels, errors, and "
      "findings with actions. Exit 0: report printed; 1: unreadable input or no NCCL lines; 2: usage.",
      "gpulens nccl"};
  std::vector<std::string> logs;
  std::string format = "text";
  std::string color = "auto";
  app.add_option("LOG", logs, "log files; '-' or none reads stdin");
  app.add_option("--format", format, "text (default) or json")->check(CLI::IsMember({"text", "json"}));
  app.add_option("--color", color, "colour the text report: auto (on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  bool from_stdin = logs.empty() || std::find(logs.begin(), logs.end(), "-") != logs.end();
  if (from_stdin && isatty(STDIN_FILENO)) {
    std::cerr << "gpulens nccl: no LOG given and stdin is a terminal; pass log files or pipe a log in\n"
              << "Run 'gpulens nccl --help' for usage.\n";
    return kExitUsage;
  }
  auto report = nccl::analyze_paths(logs);
  if (!report) {
    std::cerr << "gpulens nccl: " << report.status().message() << "\n";
    return kExitFailure;
  }
  if (format == "json") {
    std::cout << nccl::render_json(*report);
  } else {
    bool use_color = color == "always" || (color == "auto" && isatty(STDOUT_FILENO));
    std::cout << nccl::render_text(*report, use_color);
  }
  return kExitOk;
}

}  // namespace gpulens::cli
