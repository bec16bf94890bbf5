// History: a bounded in-memory record of every series, for diagnosis and UI.
//
// record() snapshots the LiveStore once per interval into per-series rings.
// Values are kept as float; counters are kept as their per-second rate over
// the previous record (NaN on the first record and across a counter reset),
// which is what every consumer of history wants. Absent values are NaN.
//
// Memory bound: 4 bytes x series x capacity + 8 bytes x capacity. With the
// default capacity (one hour at 1 s = 3600 records) and the ~700 series of an
// 8-GPU node that is about 10 MiB. "Series" counts those seen within the
// window: reclaim() frees the ring and the registry slot of every series
// absent for a whole window (an exited process), or for the much shorter
// set_short_lived_release() bound when a pusher or a scrape target wrote it
// (an expired or DELETEd push group), so churning pids, pods and labels do
// not add up.
//
//   History h(3600);
//   h.record(registry, live, now_ms);
//   h.read(slot, now_ms - 600'000, now_ms, [](int64_t t, float v) { ... });
//
// Thread-safety: record() and readers synchronise on an internal mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "model/series.h"
#include "store/live.h"

namespace gpulens {

class History {
 public:
  explicit History(size_t capacity);

  void record(const SeriesRegistry& registry, const LiveStore& live, int64_t now_ms);

  // Visits the samples of `slot` with from_ms <= t <= to_ms, oldest first,
  // skipping NaN (absent) entries.
  void read(uint32_t slot, int64_t from_ms, int64_t to_ms,
            const std::function<void(int64_t t_ms, float value)>& visit) const;

  // Frees the ring and the registry slot (SeriesRegistry::release_locked) of
  // every series absent from the last capacity() records (short-lived ones:
  // set_short_lived_release() records), unless a source
  // looked it up since the previous reclaim; returns how many were freed.
  // The agent calls it about once a minute.
  size_t reclaim(SeriesRegistry& registry, const LiveStore& live);

  // Series an outside writer set (SeriesRegistry::mark_short_lived: pushed,
  // scraped) are freed by reclaim() once absent from the last `records`
  // records instead of a whole window: a DELETE, a new PUT or a target that
  // stopped giving a series releases its history that much sooner. Default:
  // capacity() (no difference).
  void set_short_lived_release(size_t records) { short_lived_release_ = records == 0 ? 1 : records; }

  // The record times with from_ms <= t <= to_ms, oldest first.
  std::vector<int64_t> times(int64_t from_ms, int64_t to_ms) const;

  size_t capacity() const { return capacity_; }
  size_t records() const;                 // number of records held (<= capacity)
  int64_t oldest_ms() const;              // 0 when empty
  int64_t newest_ms() const;
  size_t memory_bytes() const;

 private:
  size_t capacity_;
  size_t short_lived_release_ = capacity_;
  mutable std::mutex mu_;
  std::vector<int64_t> times_;              // ring of record times
  std::vector<std::vector<float>> rings_;   // per slot, capacity each
  std::vector<double> last_raw_;            // counters: previous raw value
  std::vector<int64_t> last_raw_ms_;
  std::vector<float> last_rate_;
  std::vector<uint32_t> absent_;            // per slot: records since it was last present
  size_t head_ = 0;                         // next write position
  size_t count_ = 0;
};

}  // namespace gpulens
