// Fuzz target: the agent's configuration file (cli/config.h parse_config,
// then validate and the effective-config rendering check-config prints).
#include <cstdint>
#include <string>

#include "cli/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = gpulens::cli::parse_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (c.ok()) {
    (void)gpulens::cli::validate(*c);
    (void)gpulens::cli::to_yaml(*c);
  }
  return 0;
}
