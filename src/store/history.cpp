// History rings: one float per series per record.
#include "store/history.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpulens {

namespace {
constexpr float kAbsent = std::numeric_limits<float>::quiet_NaN();
}

History::History(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity), times_(capacity_, 0) {}

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
  for (uint32_t s = 0; s < n; ++s) {
    auto& ring = rings_[s];
    if (ring.empty()) {
      if (!live.present(s)) continue;  // never present, or freed by reclaim(): nothing to keep
      ring.assign(capacity_, kAbsent);
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
    ring[head_] = out;
  }
  // Slots beyond the live store's size are absent at this record.
  for (size_t s = n; s < rings_.size(); ++s) {
    if (!rings_[s].empty()) rings_[s][head_] = kAbsent;
    if (absent_[s] < capacity_) ++absent_[s];
  }
  times_[head_] = now_ms;
  head_ = (head_ + 1) % capacity_;
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
    std::vector<float>().swap(rings_[s]);  // reallocated when the slot is reused
    last_raw_[s] = std::numeric_limits<double>::quiet_NaN();
    last_raw_ms_[s] = 0;
    last_rate_[s] = kAbsent;
    absent_[s] = 0;
  }
  return freed.size();
}

void History::read(uint32_t slot, int64_t from_ms, int64_t to_ms,
                   const std::function<void(int64_t, float)>& visit) const {
  std::lock_guard lock(mu_);
  if (slot >= rings_.size() || rings_[slot].empty()) return;
  const auto& ring = rings_[slot];
  const size_t start = (head_ + capacity_ - count_) % capacity_;
  for (size_t i = 0; i < count_; ++i) {
    const size_t pos = (start + i) % capacity_;
    const int64_t t = times_[pos];
    if (t < from_ms || t > to_ms || std::isnan(ring[pos])) continue;
    visit(t, ring[pos]);
  }
}

std::vector<int64_t> History::times(int64_t from_ms, int64_t to_ms) const {
  std::lock_guard lock(mu_);
  std::vector<int64_t> out;
  const size_t start = (head_ + capacity_ - count_) % capacity_;
  for (size_t i = 0; i < count_; ++i) {
    const int64_t t = times_[(start + i) % capacity_];
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
  return count_ ? times_[(head_ + capacity_ - count_) % capacity_] : 0;
}

int64_t History::newest_ms() const {
  std::lock_guard lock(mu_);
  return count_ ? times_[(head_ + capacity_ - 1) % capacity_] : 0;
}

size_t History::memory_bytes() const {
  std::lock_guard lock(mu_);
  size_t bytes = times_.size() * sizeof(int64_t) + last_raw_.size() * (sizeof(double) + sizeof(int64_t));
  for (const auto& r : rings_) bytes += r.capacity() * sizeof(float);
  return bytes;
}

}  // namespace gpulens
