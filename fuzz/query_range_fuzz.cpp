// Fuzz target: a Prometheus /api/v1/query_range answer as `diagnose
// --prometheus` reads it (parse_matrix in diagnose/prometheus_input.cpp).
// The parser is internal to that file, so this target compiles the file
// itself; the query path around it needs a server and is covered by the
// diagnose_prometheus integration test.
#include <cstdint>
#include <string>
#include <vector>

#include "diagnose/prometheus_input.cpp"  // NOLINT: reaches the internal parse_matrix

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string body(reinterpret_cast<const char*>(data), size);
  std::vector<gpulens::diagnose::RawSeries> out;
  (void)gpulens::diagnose::parse_matrix("fuzz query", body, out, 241);
  return 0;
}
