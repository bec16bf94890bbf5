// Fuzz target: Chrome-trace / Kineto JSON as `gpulens trace` parses it
// (analyze/trace/reader.h parse_trace), then the per-rank analysis and
// both report renderings.
#include <cstdint>
#include <string>
#include <vector>

#include <simdjson.h>

#include "analyze/trace/analysis.h"
#include "analyze/trace/reader.h"
#include "analyze/trace/report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string json(reinterpret_cast<const char*>(data), size);
  json.reserve(size + simdjson::SIMDJSON_PADDING);
  json.append(simdjson::SIMDJSON_PADDING, '\0');
  auto t = gpulens::trace::parse_trace(std::string_view(json.data(), size), "fuzz.json");
  if (t.ok()) {
    std::vector<gpulens::trace::Trace> traces;
    traces.push_back(std::move(*t));
    gpulens::trace::JobReport job = gpulens::trace::analyse_job(traces, {});
    (void)gpulens::trace::to_text(job);
    (void)gpulens::trace::to_json(job);
  }
  return 0;
}
