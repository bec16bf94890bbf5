// `gpulens version`: the version, for bug reports and build_info.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.h"

namespace gpulens::cli {

int run_version(int argc, char** argv) {
  CLI::App app{"Print the version of gpulens.", "gpulens version"};
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::cout << "gpulens " << GPULENS_VERSION << "\n";
  return kExitOk;
}

}  // namespace gpulens::cli
