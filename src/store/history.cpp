// History: per-series rings of XOR-compressed chunks, one value per record.
#include "store/history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "store/xor_chunk.h"

namespace gpulens {

namespace {
constexpr float kAbsent = std::numeric_limits<float>::quiet_NaN();

size_t auto_chunk(size_t capacity) { return std::clamp<size_t>((capacity + 29) / 30, 1, 4096); }
}  // namespace

History::History(size_t capacity, size_t chunk_records)
    : capacity_(capacity == 0 ? 1 : capacity),
      chunk_(std::min<size_t>(chunk_records == 0 ? auto_chunk(capacity_) : std::min(chunk_records, capacity_),
                              XorChunk::kMaxValues)),
      chunks_((capacity_ + chunk_ - 1) / chunk_ + 1),
      times_(capacity_, 0),
      chunk_min_ms_(chunks_, 0),
      chunk_max_ms_(chunks_, 0) {}

History::~History() = default;

size_t History::budget_bytes(size_t series, size_t capacity) {
  const History shape(capacity);
  const size_t words = (shape.chunk_ * kMaxBitsPerSample + XorChunk::kRawSlackBits + 63) / 64 + 1;
  const size_t per_chunk = sizeof(XorChunk) + words * sizeof(uint64_t);
  // The open chunk's words grow by doubling: up to one chunk's words spare.
  const size_t per_series = sizeof(std::vector<XorChunk>) + shape.chunks_ * per_chunk + words * sizeof(uint64_t) +
                            sizeof(double) + sizeof(int64_t) + sizeof(float) + sizeof(uint32_t);
  return series * per_series + shape.capacity_ * sizeof(int64_t) + 2 * shape.chunks_ * sizeof(int64_t);
}

void History::record(const SeriesRegistry& registry, const LiveStore& live, int64_t now_ms) {
  std::scoped_lock lock(registry.mutex(), live.mutex(), mu_);
  const size_t n = live.size();
  if (rings_.size() < n) {
    rings_.resize(n);
    last_raw_.resize(n, std::numeric_limits<double>::quiet_NaN());
    last_raw_ms_.resize(n, 0);
    last_rate_.resize(n, kAbsent);
    absent_.resize(n, 0);
  }
  const uint64_t chunk = total_ / chunk_;
  const size_t index = static_cast<size_t>(total_ % chunk_);  // within the chunk
  const size_t pos = static_cast<size_t>(chunk % chunks_);
  const size_t prev_pos = (pos + chunks_ - 1) % chunks_;
  // The next value of slot s into chunk `chunk`: a new chunk drops the one
  // it replaces (chunks_ older, out of the window) and seals the one before.
  auto append = [&](uint32_t s, float v) {
    auto& ring = rings_[s];
    if (index == 0) {
      ring[pos] = XorChunk{};
      ring[prev_pos].seal();
    }
    ring[pos].append(v);
  };
  for (uint32_t s = 0; s < n; ++s) {
    auto& ring = rings_[s];
    if (ring.empty()) {
      if (!live.present(s)) continue;  // never present, or freed by reclaim(): nothing to keep
      ring.resize(chunks_);
      // Absent for the records of this chunk before it appeared.
      for (size_t i = 0; i < index; ++i) ring[pos].append(kAbsent);
    }
    float out = kAbsent;
    if (live.present(s)) {
      absent_[s] = 0;
      const double v = live.value(s);
      if (field(registry.series(s).field).type == MetricType::kCounter) {
        const int64_t t = live.time_ms(s);
        if (t == last_raw_ms_[s]) {
          out = last_rate_[s];  // the source has not published since the last record
        } else {
          const double prev = last_raw_[s];
          const bool valid = !std::isnan(prev) && v >= prev && t > last_raw_ms_[s];
          out = valid ? static_cast<float>((v - prev) * 1000.0 / static_cast<double>(t - last_raw_ms_[s]))
                      : kAbsent;  // first sample, or a counter reset
          last_raw_[s] = v;
          last_raw_ms_[s] = t;
          last_rate_[s] = out;
        }
      } else {
        out = static_cast<float>(v);
      }
    } else {
      last_raw_[s] = std::numeric_limits<double>::quiet_NaN();
      last_raw_ms_[s] = 0;
      if (absent_[s] < capacity_) ++absent_[s];
    }
    append(s, out);
  }
  // Slots beyond the live store's size are absent at this record.
  for (size_t s = n; s < rings_.size(); ++s) {
    if (!rings_[s].empty()) append(static_cast<uint32_t>(s), kAbsent);
    if (absent_[s] < capacity_) ++absent_[s];
  }
  times_[static_cast<size_t>(total_ % capacity_)] = now_ms;
  if (index == 0) {
    chunk_min_ms_[pos] = now_ms;
    chunk_max_ms_[pos] = now_ms;
  } else {
    chunk_min_ms_[pos] = std::min(chunk_min_ms_[pos], now_ms);
    chunk_max_ms_[pos] = std::max(chunk_max_ms_[pos], now_ms);
  }
  ++total_;
  if (count_ < capacity_) ++count_;
}

size_t History::reclaim(SeriesRegistry& registry, const LiveStore& live) {
  std::scoped_lock lock(registry.mutex(), live.mutex(), mu_);
  std::vector<uint32_t> gone;
  for (uint32_t s = 0; s < rings_.size(); ++s) {
    if (rings_[s].empty() || live.present(s)) continue;
    const size_t bound = registry.short_lived(s) ? std::min(short_lived_release_, capacity_) : capacity_;
    if (absent_[s] >= bound) gone.push_back(s);
  }
  const std::vector<uint32_t> freed = registry.release_locked(gone);
  for (uint32_t s : freed) {
    std::vector<XorChunk>().swap(rings_[s]);  // every chunk: a reused slot starts empty
    last_raw_[s] = std::numeric_limits<double>::quiet_NaN();
    last_raw_ms_[s] = 0;
    last_rate_[s] = kAbsent;
    absent_[s] = 0;
  }
  return freed.size();
}

void History::read(uint32_t slot, int64_t from_ms, int64_t to_ms,
                   const std::function<void(int64_t, float)>& visit) const {
  read_batches(slot, from_ms, to_ms, [&](std::span<const int64_t> t, std::span<const float> v) {
    for (size_t i = 0; i < t.size(); ++i) visit(t[i], v[i]);
  });
}

void History::read_batches(uint32_t slot, int64_t from_ms, int64_t to_ms, const Batch& visit) const {
  std::lock_guard lock(mu_);
  if (slot >= rings_.size() || rings_[slot].empty() || count_ == 0) return;
  const auto& ring = rings_[slot];
  const uint64_t lo = total_ - count_;  // the oldest record within the window
  // Scratch for one chunk, kept per thread: a read of a short window visits
  // many series of a few values each.
  thread_local std::vector<float> buf, values;
  thread_local std::vector<int64_t> times;
  if (buf.size() < chunk_) {
    buf.resize(chunk_);
    values.resize(chunk_);
    times.resize(chunk_);
  }
  for (uint64_t chunk = lo / chunk_; chunk * chunk_ < total_; ++chunk) {
    const size_t pos = static_cast<size_t>(chunk % chunks_);
    const XorChunk& c = ring[pos];
    if (c.size() == 0 || chunk_max_ms_[pos] < from_ms || chunk_min_ms_[pos] > to_ms) continue;
    const uint64_t base = chunk * chunk_;
    const uint32_t skip = base < lo ? static_cast<uint32_t>(lo - base) : 0;  // records older than the window
    // Decode the whole chunk first (a tight loop), then keep what is asked.
    c.decode([&](uint32_t i, float v) { buf[i] = v; });
    const uint32_t n = c.size();
    size_t ti = static_cast<size_t>((base + skip) % capacity_);
    size_t kept = 0;
    for (uint32_t i = skip; i < n; ++i, ++ti) {
      if (ti == capacity_) ti = 0;
      const float v = buf[i];
      const int64_t t = times_[ti];
      if (std::isnan(v) || t < from_ms || t > to_ms) continue;
      times[kept] = t;
      values[kept] = v;
      ++kept;
    }
    if (kept) visit({times.data(), kept}, {values.data(), kept});
  }
}

std::vector<int64_t> History::times(int64_t from_ms, int64_t to_ms) const {
  std::lock_guard lock(mu_);
  std::vector<int64_t> out;
  for (uint64_t r = total_ - count_; r < total_; ++r) {
    const int64_t t = times_[static_cast<size_t>(r % capacity_)];
    if (t >= from_ms && t <= to_ms) out.push_back(t);
  }
  return out;
}

size_t History::records() const {
  std::lock_guard lock(mu_);
  return count_;
}

int64_t History::oldest_ms() const {
  std::lock_guard lock(mu_);
  return count_ ? times_[static_cast<size_t>((total_ - count_) % capacity_)] : 0;
}

int64_t History::newest_ms() const {
  std::lock_guard lock(mu_);
  return count_ ? times_[static_cast<size_t>((total_ - 1) % capacity_)] : 0;
}

History::Usage History::usage() const {
  std::lock_guard lock(mu_);
  Usage u;
  u.bytes = (times_.size() + chunk_min_ms_.size() + chunk_max_ms_.size()) * sizeof(int64_t) +
            last_raw_.size() * (sizeof(double) + sizeof(int64_t) + sizeof(float) + sizeof(uint32_t)) +
            rings_.capacity() * sizeof(std::vector<XorChunk>);
  for (const auto& ring : rings_) {
    u.bytes += ring.capacity() * sizeof(XorChunk);
    for (const auto& c : ring) {
      u.bytes += c.memory_bytes();
      u.samples += c.size();
    }
  }
  return u;
}

size_t History::memory_bytes() const { return usage().bytes; }

}  // namespace gpulens
