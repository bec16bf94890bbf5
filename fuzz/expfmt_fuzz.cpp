// Fuzz target: exposition text (Prometheus text 0.0.4, OpenMetrics) through
// the shared grammar (expfmt/text.h) line by line, and through the stream
// reader (expfmt/stream_parser.h) as a live scrape fed in two chunks, with
// small limits (1 KiB lines, 4 labels of 16 bytes, 64 series, 256 samples)
// so the limit errors are reached. Checks what the grammar promises: the
// views lie inside the line, a label set within its limits, never a crash.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "expfmt/stream_parser.h"
#include "expfmt/text.h"

namespace {

using namespace gpulens::expfmt;

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

struct CountingSink final : SeriesSink {
  int64_t series = 0;
  int64_t on_series(std::string_view name, LabelSpan labels) override {
    check(!name.empty() && labels.size() <= 4);
    return series++ % 2 == 0 ? series : -1;
  }
  void on_sample(int64_t handle, int64_t, double) override { check(handle > 0); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const LabelLimits limits{4, 16, 16};
  OwnedLabels labels;
  std::string_view rest = in;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    rest = nl == rest.npos ? std::string_view() : rest.substr(nl + 1);
    if (!line.empty() && line[0] == '#') {
      const Comment c = parse_comment(line);
      check(inside(c.name, line) && inside(c.text, line));
      continue;
    }
    SampleLine s;
    const LineProblem p = split_sample(line, s);
    if (p == LineProblem::kNone) {
      check(inside(s.name, line) && inside(s.series, line) && inside(s.labels, line) && inside(s.exemplar, line));
      check(s.series.starts_with(s.name));
      if (!parse_labels(s.labels, limits, labels)) {
        check(labels.size() <= 4);
        for (const auto& [k, v] : labels) check(k.size() <= 16 && v.size() <= 16 && !k.empty());
      }
    }
  }
  CountingSink sink;
  StreamLimits stream;
  stream.max_line_bytes = 1024;
  stream.max_series = 64;
  stream.max_samples = 256;
  stream.max_ignored_series = 64;
  stream.labels = limits;
  StreamParser parser("fuzz", sink, stream);
  parser.start_scrape(1000);
  const size_t half = size / 2;
  if (parser.feed(in.substr(0, half)).is_ok() && parser.feed(in.substr(half)).is_ok()) (void)parser.finish();
  return 0;
}
