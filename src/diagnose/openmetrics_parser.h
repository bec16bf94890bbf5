// A streaming parser for OpenMetrics / Prometheus text with timestamps: the
// recordings `gpulens record` writes and `promtool tsdb create-blocks-from
// openmetrics` reads.
//
// Input is fed in chunks of any size; the parser keeps the partial last line.
// Each distinct series (name plus label text, byte for byte) is announced to
// the sink once, and the sink answers with a handle, or -1 to ignore the
// series (its samples are then only counted, never stored). Samples go to the
// sink by handle, so the hot path hashes the series text and nothing else.
//
// Rules (documented in docs/diagnose.md):
//   - every sample needs a timestamp; seconds (OpenMetrics) or, when larger
//     than 1e11, milliseconds (Prometheus text 0.0.4);
//   - # TYPE / # HELP / # UNIT and other comments are skipped; blank lines too;
//   - anything malformed is an error naming file:line and the problem,
//     except a last line cut short by truncation (a warning);
//   - a file that does not end in "# EOF" is used as far as it goes, with a
//     warning; content after "# EOF" is an error.
//
//   ReplaySink sink;  OpenMetricsParser p("rec.om", sink);
//   if (Status s = parse_file("rec.om", p); !s) ...   // "rec.om:12: no timestamp"
//
// Thread-safety: one parser per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "diagnose/mapping.h"
#include "util/status.h"

namespace gpulens::diagnose {

class MetricSink {
 public:
  virtual ~MetricSink() = default;
  // A new series; return a handle >= 0 to receive its samples, or -1.
  virtual int64_t on_series(std::string_view name, LabelSpan labels) = 0;
  virtual void on_sample(int64_t handle, int64_t t_ms, double value) = 0;
};

struct ParseStats {
  uint64_t lines = 0;
  uint64_t samples = 0;          // stored (series the sink wanted)
  uint64_t ignored_samples = 0;  // of series the sink ignored
  uint64_t series = 0;
  uint64_t ignored_series = 0;
  uint64_t bytes = 0;
  bool saw_eof = false;
  std::vector<std::string> warnings;
};

class OpenMetricsParser {
 public:
  OpenMetricsParser(std::string filename, MetricSink& sink) : filename_(std::move(filename)), sink_(sink) {}

  // Feeds the next chunk. Returns the first error met.
  Status feed(std::string_view chunk);
  // Ends the input (handles a last line without newline, a missing # EOF).
  Status finish();
  const ParseStats& stats() const { return stats_; }

 private:
  Status parse_line(std::string_view line);
  Status error(std::string_view problem) const;

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  std::string filename_;
  MetricSink& sink_;
  ParseStats stats_;
  std::string carry_;  // partial line from the previous chunk
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> series_;
  std::vector<std::pair<std::string, std::string>> label_buf_;
  std::vector<LabelPair> label_views_;
  bool after_eof_ = false;
};

// Reads a file through the parser in large blocks; finish() included.
Status parse_file(const std::string& path, OpenMetricsParser& parser);

}  // namespace gpulens::diagnose
