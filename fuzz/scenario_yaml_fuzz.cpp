// Fuzz target: simulator scenario YAML (sources/sim/scenario.h
// parse_scenario), the files under scenarios/ and --scenario FILE.
#include <cstdint>
#include <string>

#include "sources/sim/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)gpulens::sim::parse_scenario(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  return 0;
}
