// A streaming reader of exposition text (expfmt/text.h), series by series:
// the recordings `gpulens record` writes and `promtool tsdb create-blocks-from
// openmetrics` reads (timestamps on every sample), and live scrapes of an
// exporter's page (start_scrape(): text 0.0.4 or OpenMetrics, no timestamps).
//
// Input is fed in chunks of any size; the parser keeps the partial last line.
// Each distinct series (name plus label text, byte for byte) is announced to
// the sink once, and the sink answers with a handle, or -1 to ignore the
// series (its samples are then only counted, never stored). Samples go to the
// sink by handle, so the hot path hashes the series text and nothing else.
//
// Rules (documented in docs/diagnose.md; the grammar is expfmt/text.h's):
//   - every sample needs a timestamp; seconds (OpenMetrics) or, when larger
//     than 1e11, milliseconds (Prometheus text 0.0.4) — except in a scrape
//     (set_scrape_time()), where a sample without one takes the scrape's time;
//   - # TYPE / # HELP / # UNIT and other comments are skipped; blank lines too;
//   - anything malformed is an error naming file:line and the problem,
//     except a last line cut short by truncation (a warning);
//   - a file that does not end in "# EOF" is used as far as it goes, with a
//     warning; content after "# EOF" is an error;
//   - a timestamp must lie in 1970-01-01 .. 9999-12-31 (kMaxTimestampMs):
//     negative, NaN, 1e19 or 1e300 is an error, never an overflow;
//   - input is bounded (StreamLimits): a line longer than max_line_bytes, more
//     than max_bytes in all, more than max_series distinct stored series or
//     more than max_samples stored samples is an error naming the limit, so
//     /dev/zero or an endless stream ends with a message, not exhausted memory;
//     a label set over StreamLimits::labels is an error too.
//
//   ReplaySink sink;  StreamParser p("rec.om", sink);
//   if (Status s = parse_file("rec.om", p); !s) ...   // "rec.om:12: no timestamp"
//
// Thread-safety: one parser per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "expfmt/text.h"
#include "util/status.h"

namespace gpulens::expfmt {

class SeriesSink {
 public:
  virtual ~SeriesSink() = default;
  // A new series; return a handle >= 0 to receive its samples, or -1.
  virtual int64_t on_series(std::string_view name, LabelSpan labels) = 0;
  virtual void on_sample(int64_t handle, int64_t t_ms, double value) = 0;
};

// Bounds on one input (defaults documented in docs/diagnose.md, "Limits").
// Memory: a stored series costs a few KiB (labels, index) plus 16 bytes per
// sample, so the defaults cap a replay near 1.6 GiB.
struct StreamLimits {
  size_t max_line_bytes = 1u << 20;        // 1 MiB
  uint64_t max_bytes = 64ull << 30;        // 64 GiB
  uint64_t max_series = 100'000;           // distinct series diagnosis stores
  uint64_t max_samples = 75'000'000;       // samples diagnosis stores (16 B each, 1.2 GB)
  uint64_t max_ignored_series = 1'000'000; // ignored series remembered (beyond: re-parsed per line)
  LabelLimits labels;                      // per label set (unbounded but by the line by default)
  // What the caller's user can do about a limit, appended to its error
  // ("raise --max-series, or split the input"); "" adds nothing.
  std::string_view series_advice, samples_advice;
};

struct StreamStats {
  uint64_t lines = 0;
  uint64_t samples = 0;          // stored (series the sink wanted)
  uint64_t ignored_samples = 0;  // of series the sink ignored
  uint64_t series = 0;
  uint64_t ignored_series = 0;   // at most StreamLimits::max_ignored_series
  uint64_t bytes = 0;
  bool saw_eof = false;
  uint64_t timestamped = 0;      // in a scrape: samples that carried a timestamp anyway (ignored)
  std::vector<std::string> warnings;
};

class StreamParser {
 public:
  StreamParser(std::string filename, SeriesSink& sink, StreamLimits limits = {})
      : filename_(std::move(filename)), sink_(sink), limits_(limits) {}

  // Feeds the next chunk. Returns the first error met.
  Status feed(std::string_view chunk);
  // Ends the input (handles a last line without newline, a missing # EOF).
  Status finish();

  // Adds a warning of the input's reader (e.g. a gzip stream cut short).
  void add_warning(std::string w) { stats_.warnings.push_back(std::move(w)); }
  // Starts the next document of a live scrape: samples without a timestamp
  // take `t_ms`, a missing "# EOF" is no warning (text 0.0.4 has none), and
  // the counters of stats() start again; the series already announced keep
  // their handles, so a scrape pays label parsing only for new series.
  void start_scrape(int64_t t_ms);
  const StreamStats& stats() const { return stats_; }

 private:
  Status parse_line(std::string_view line);
  Status error(std::string_view problem) const;
  Status parse_timestamp(std::string_view ts_text, int64_t& t_ms) const;
  Status label_error(const LabelError& e) const;

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
  };
  std::string filename_;
  SeriesSink& sink_;
  StreamLimits limits_;
  StreamStats stats_;
  std::string carry_;  // partial line from the previous chunk
  std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> series_;
  SampleLine sample_;
  OwnedLabels label_buf_;
  std::vector<Label> label_views_;
  bool after_eof_ = false;
  int64_t scrape_time_ms_ = -1;  // >= 0: a live scrape (start_scrape())
};

// Reads a file through the parser in large blocks; finish() included. A
// gzip file (by its magic bytes, whatever its name) is decompressed on the
// way; one cut short is read up to where it stops, with a warning.
Status parse_file(const std::string& path, StreamParser& parser);

}  // namespace gpulens::expfmt
