// History: a bounded in-memory record of every series, for diagnosis and UI.
//
// record() snapshots the LiveStore once per interval into per-series rings.
// Values are kept as float; counters are kept as their per-second rate over
// the previous record (NaN on the first record and across a counter reset),
// which is what every consumer of history wants. Absent values are NaN.
//
// Storage: the records are cut into chunks of chunk_records() records (about
// a thirtieth of the window: 2 minutes of an hour). A series keeps one
// XorChunk (store/xor_chunk.h) per chunk, XOR-compressed and bit-exact; the
// newest is open for appends, the others are sealed at their exact size, and
// the oldest is dropped whole once the window has passed it. The record
// times are kept once for all series (8 bytes a record). A reader decodes
// only the chunks its time range touches.
//
// Memory bound: per series, at most kMaxBitsPerSample bits per record (4
// bytes: a chunk that XOR-codes worse than raw floats turns raw; a constant
// or absent series takes 1 bit, the simulator's scenarios 1.7 bytes on
// average with everything counted: docs/PERFORMANCE.md), plus 24 bytes and
// XorChunk::kRawSlackBits per chunk and the open chunk's spare words; plus
// 8 bytes x capacity for the times.
// budget_bytes() gives the bound for a number of series. "Series" counts
// those seen within the window: reclaim() frees the chunks and the registry
// slot of every series
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
#include <span>
#include <vector>

#include "model/series.h"
#include "store/live.h"

namespace gpulens {

class XorChunk;  // store/xor_chunk.h

class History {
 public:
  // Worst case of one stored value: a chunk past 32 bits a value (and its
  // slack) is stored raw (XorChunk).
  static constexpr size_t kMaxBitsPerSample = 32;

  // `chunk_records` 0: about capacity / 30 (at least 1, at most 4096); at
  // most capacity and XorChunk::kMaxValues.
  explicit History(size_t capacity, size_t chunk_records = 0);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // The most memory `series` series can take over `capacity` records: every
  // value at its worst case, the chunk and ring overhead and the times.
  static size_t budget_bytes(size_t series, size_t capacity);
  // What one more series adds to budget_bytes(): its share without the
  // record times that all series share.
  static size_t series_budget_bytes(size_t capacity) { return budget_bytes(1, capacity) - budget_bytes(0, capacity); }

  void record(const SeriesRegistry& registry, const LiveStore& live, int64_t now_ms);

  // Visits the samples of `slot` with from_ms <= t <= to_ms, oldest first,
  // skipping NaN (absent) entries.
  void read(uint32_t slot, int64_t from_ms, int64_t to_ms,
            const std::function<void(int64_t t_ms, float value)>& visit) const;

  // The same samples a chunk at a time: `visit` gets the times and values
  // of each stored chunk in range (NaN and out-of-range entries left out,
  // never empty), oldest first. One call per chunk instead of one per value:
  // what the diagnosis reads a whole window with.
  using Batch = std::function<void(std::span<const int64_t> t_ms, std::span<const float> values)>;
  void read_batches(uint32_t slot, int64_t from_ms, int64_t to_ms, const Batch& visit) const;

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
  size_t chunk_records() const { return chunk_; }
  size_t memory_bytes() const;

  // What the history holds: bytes (as memory_bytes()) and stored values
  // (every record of every kept series, absent ones included).
  struct Usage {
    size_t bytes = 0;
    size_t samples = 0;
  };
  Usage usage() const;

 private:
  size_t capacity_;
  size_t chunk_;                            // records per chunk
  size_t chunks_;                           // chunks in a series' ring: enough to cover capacity_
  size_t short_lived_release_ = capacity_;
  mutable std::mutex mu_;
  std::vector<int64_t> times_;              // ring of record times, by record number % capacity_
  std::vector<int64_t> chunk_min_ms_;       // per ring position: the earliest and latest time
  std::vector<int64_t> chunk_max_ms_;       //   recorded in that chunk
  // Per slot: empty (never present, or freed), or chunks_ chunks; chunk k
  // (records k*chunk_ ...) at position k % chunks_, empty before the
  // series first appeared.
  std::vector<std::vector<XorChunk>> rings_;
  std::vector<double> last_raw_;            // counters: previous raw value
  std::vector<int64_t> last_raw_ms_;
  std::vector<float> last_rate_;
  std::vector<uint32_t> absent_;            // per slot: records since it was last present
  uint64_t total_ = 0;                      // records made since the start (the next record's number)
  size_t count_ = 0;                        // records within the window (<= capacity_)
};

}  // namespace gpulens
