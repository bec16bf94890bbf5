// RecordingWriter: writes an OpenMetrics recording (a timestamp on every
// sample, "# EOF" at the end) while samples arrive over minutes or hours,
// with memory that does not grow with the recording.
//
// OpenMetrics wants every family in one piece and every series (label set)
// of a family in one piece, in time order; samples arrive the other way
// round, one timestamp of every series at a time. So each sample goes to a
// spool file on disk as it arrives (16 bytes plus the series id), and
// finish() sorts the spool by series on disk (a counting sort: the count per
// series is known) and writes the text family by family. Histogram families
// are written one metric point per timestamp (buckets, _sum, _count), as
// the format requires.
//
//   RecordingWriter w;
//   if (Status s = w.open(dir_of_output); !s) ...;
//   uint32_t fam = w.family("gpu_power_usage_watts", "gauge", "Power draw.");
//   uint32_t s = w.series(fam, "gpu_power_usage_watts{gpu=\"0\"}");
//   w.add(s, t_ms, 300.5);          // as often as samples arrive
//   w.finish(output_stream);         // the whole recording, ending in "# EOF"
//
// Memory: a few bytes per series plus I/O buffers; the spool and the sorted
// copy take 24 + 16 bytes per sample on disk (in `dir`, removed on close).
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "util/status.h"

namespace gpulens {

class RecordingWriter {
 public:
  RecordingWriter() = default;
  ~RecordingWriter();
  RecordingWriter(const RecordingWriter&) = delete;
  RecordingWriter& operator=(const RecordingWriter&) = delete;

  // Creates the spool (an unlinked file) in `dir`. Without open() the
  // samples are kept in memory (small recordings, such as one page of the
  // agent's /api/v1/export).
  Status open(const std::string& dir);

  // Declares a family, or returns the one of that name. Families are
  // written in the order they were first declared.
  uint32_t family(std::string_view name, std::string_view type, std::string_view help);
  // Declares a series of `family` by its exposition text, name and labels
  // ("gpu_power_usage_watts{gpu=\"0\"}", "serving_request_latency_seconds_bucket{le=\"0.1\"}"),
  // or returns the one with that text. Series of a family are written in
  // declaration order.
  uint32_t series(uint32_t family, std::string_view text);

  Status add(uint32_t series, int64_t t_ms, double value);

  // Writes the whole recording to `out` and closes the spool.
  Status finish(std::ostream& out);

  uint64_t samples() const { return samples_; }
  uint64_t spool_bytes() const { return samples_ * sizeof(Record); }
  size_t series_count() const { return series_.size(); }

 private:
  struct Record {
    uint32_t series;
    uint32_t pad;
    int64_t t_ms;
    double value;
  };
  struct Point {
    int64_t t_ms;
    double value;
  };
  struct Family {
    std::string name, type, help;
    std::vector<uint32_t> series;
  };
  struct SeriesInfo {
    uint32_t family;
    std::string text;
    uint64_t count = 0;
  };
  Status flush();
  void close();

  std::FILE* spool_ = nullptr;
  bool in_memory_ = true;
  std::string dir_;
  std::vector<Record> buf_;
  std::vector<Family> families_;
  std::vector<SeriesInfo> series_;
  std::unordered_map<std::string, uint32_t> family_index_, series_index_;
  uint64_t samples_ = 0;
};

class SeriesRegistry;
struct FieldDef;
// The slots of `f` in the order a recording writes them (histograms: the
// buckets, then _sum, then _count), and the exposition text of one slot
// ("name{labels}", with the histogram suffix).
std::vector<uint32_t> recording_slots(const SeriesRegistry& registry, const FieldDef& f);
std::string recording_series_text(const SeriesRegistry& registry, uint32_t slot);

}  // namespace gpulens
