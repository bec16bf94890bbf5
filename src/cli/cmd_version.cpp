// `gpulens version`: version, git commit, build type, compiler, and the
// NVML/CUDA libraries this machine would load (for bug reports and for
// scripts/run.sh, which asks for the simulator when NVML does not load).
#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <link.h>

#include <iostream>

#include "cli/command.h"

namespace gpulens::cli {
namespace {

// "loads NAME from PATH" or "cannot load NAME: why"; the handle is closed.
std::string probe(const std::string& name, const std::string& fallback) {
  void* h = dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL);
  std::string tried = name;
  if (h == nullptr && !fallback.empty()) {
    h = dlopen(fallback.c_str(), RTLD_LAZY | RTLD_LOCAL);
    tried = fallback;
  }
  if (h == nullptr) {
    const char* why = dlerror();
    return "cannot load " + name + ": " + (why ? why : "not found");
  }
  std::string path = "?";
  link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr) path = map->l_name;
  dlclose(h);
  return "loads " + tried + " from " + path;
}

}  // namespace

int run_version(int argc, char** argv) {
  CLI::App app{"Print the version, git commit, build type, compiler, and the NVML/CUDA libraries this machine "
               "would load.",
               "gpulens version"};
  std::string nvml = "libnvidia-ml.so.1";
  app.add_option("--nvml-library", nvml, "NVML library to probe (default libnvidia-ml.so.1)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::cout << "gpulens " << GPULENS_VERSION << "\n"
            << "commit: " << GPULENS_GIT_COMMIT << "\n"
            << "build: " << GPULENS_BUILD_TYPE << ", " << GPULENS_COMPILER << ", C++" << (__cplusplus / 100 % 100)
            << "\n"
            << "nvml: " << probe(nvml, nvml == "libnvidia-ml.so.1" ? "libnvidia-ml.so" : "") << "\n"
            << "cuda: " << probe("libcuda.so.1", "") << " (gpulens itself needs only NVML)\n";
  return kExitOk;
}

}  // namespace gpulens::cli
