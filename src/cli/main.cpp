// gpulens: dispatches `gpulens <command> [flags]` to the subcommand table.
#include <cstring>
#include <iostream>
#include <string>

#include "cli/command.h"

namespace {

void usage(std::ostream& out) {
  out << "gpulens - GPU observability: compute, memory, IO and health of every GPU,\n"
         "and why a GPU is not doing useful work.\n\n"
         "Usage: gpulens <command> [flags]   (gpulens <command> --help for its flags)\n\n"
         "Commands:\n";
  for (const auto& c : gpulens::cli::commands()) {
    out << "  " << c.name << std::string(14 - std::min<size_t>(13, c.name.size()), ' ')
        << c.summary << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpulens::cli;
  if (argc < 2) {
    usage(std::cerr);
    return kExitUsage;
  }
  std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(std::cout);
    return kExitOk;
  }
  if (name == "--version" || name == "-V") name = "version";
  for (const auto& c : commands()) {
    if (c.name == name) {
      std::string prog = "gpulens " + std::string(name);
      argv[1] = prog.data();
      return c.run(argc - 1, argv + 1);
    }
  }
  std::cerr << "gpulens: unknown command '" << name << "'\n\n";
  usage(std::cerr);
  return kExitUsage;
}
