// LiveStore: the current value of every series, as last published by the
// source that owns it.
//
// Each source publishes whole frames; a series the source set last time but
// not this time becomes absent (a GPU that stopped answering a field, a
// process that exited). When two sources set one series, a source added
// with fills_gaps (the scrape source) never takes it from another: its
// value is used only while no other source holds the series, and a series
// it holds passes to any other source that sets it. Readers (exporter, recorder, JSON API) take lock()
// and read the dense arrays by slot; generation() changes on every publish,
// so a renderer can reuse its output until it does.
//
// Thread-safety: publish() and readers synchronise on mutex(); readers also
// hold the SeriesRegistry lock to read series metadata (take the registry
// lock first, then this one).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "model/frame.h"

namespace gpulens {

struct SourceStatus {
  std::string name;
  bool up = false;
  bool simulated = false;
  std::string last_error;        // empty when up
  double duration_seconds = 0;   // of the last collection
  int64_t last_success_ms = 0;   // 0: never
};

class LiveStore {
 public:
  // Returns the index of a new source owner.
  int add_source(std::string name, bool simulated, bool fills_gaps = false);

  void publish(int source, const Frame& frame);
  void set_status(int source, bool up, std::string error, double duration_seconds, int64_t now_ms);

  std::mutex& mutex() const { return mu_; }
  // --- read under lock() ---
  size_t size() const { return value_.size(); }
  bool present(uint32_t slot) const { return slot < present_.size() && present_[slot]; }
  double value(uint32_t slot) const { return value_[slot]; }
  int64_t time_ms(uint32_t slot) const { return time_ms_[slot]; }
  uint64_t generation() const { return generation_; }
  const std::vector<SourceStatus>& sources() const { return sources_; }
  size_t present_count() const { return present_count_; }

 private:
  void grow(size_t n);

  mutable std::mutex mu_;
  std::vector<double> value_;
  std::vector<int64_t> time_ms_;
  std::vector<uint8_t> present_;
  std::vector<std::vector<uint32_t>> owned_;  // per source: slots set last time
  std::vector<int> owner_;                     // per slot: the source holding it (while present)
  std::vector<uint8_t> fills_gaps_;            // per source
  std::vector<SourceStatus> sources_;
  uint64_t generation_ = 0;
  size_t present_count_ = 0;
};

}  // namespace gpulens
