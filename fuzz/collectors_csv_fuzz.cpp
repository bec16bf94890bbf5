// Fuzz target: dcgm-exporter counters files (model/selection.h
// parse_collectors), the `--collectors FILE` parser. Inputs are bounded by
// MAX_LEN; the parser itself refuses files over kMaxCollectorsBytes.
#include <cstdint>
#include <string_view>

#include "model/selection.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto sel = gpulens::parse_collectors(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  if (sel.ok()) (void)gpulens::exported_names(*sel, true, true);
  return 0;
}
