// Fuzz target: recordings (OpenMetrics / Prometheus text with timestamps)
// through the replay path `gpulens diagnose --replay` uses
// (diagnose/replay_input.h), with small StreamLimits (expfmt/stream_parser.h) so the fuzzer also
// reaches the limit errors; the signals are then diagnosed, since replayed
// timestamps and values feed the rules.
#include <cstdint>
#include <string_view>

#include "diagnose/engine.h"
#include "diagnose/thresholds.h"
#include "diagnose/replay_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  gpulens::diagnose::ReplayInfo info;
  gpulens::expfmt::StreamLimits limits;
  limits.max_line_bytes = 4096;
  limits.max_series = 64;
  limits.max_samples = 4096;
  auto set = gpulens::diagnose::load_replay_text(in, "fuzz.om", info, limits);
  if (set.ok()) (void)gpulens::diagnose::diagnose(*set, gpulens::diagnose::Thresholds{});
  return 0;
}
