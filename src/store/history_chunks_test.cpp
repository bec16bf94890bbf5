// History over compressed chunks reads back exactly what a plain ring of
// floats would hold: every window, chunk size and time range, series that
// appear, vanish and come back mid-chunk, and readers running while the
// recorder appends and reclaims.
#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "store/history.h"

namespace gpulens {
namespace {

// A value of GPU `gpu` at record `r` whose float is known exactly: the kinds
// a series holds, absent (nullopt-like NaN: not published) included.
double value_at(std::mt19937& rng, float prev) {
  switch (rng() % 10) {
    case 0: return std::numeric_limits<float>::infinity();
    case 1: return -std::numeric_limits<float>::infinity();
    case 2: return std::numeric_limits<float>::denorm_min() * 3;
    case 3: return std::numeric_limits<float>::max();
    case 4: return static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(rng()) & 0x7f7fffffu));
    case 5: return static_cast<double>(rng() % 100);
    default: return prev;
  }
}

// The reference: what a ring of `capacity` floats holds, per GPU.
struct Reference {
  std::vector<int64_t> times;
  std::vector<std::vector<float>> values;  // per record, per gpu; NaN absent
};

void expect_same(const History& h, SeriesRegistry& reg, const Reference& ref, size_t capacity, int gpus,
                 int64_t from, int64_t to) {
  const size_t n = ref.times.size();
  const size_t first = n > capacity ? n - capacity : 0;
  for (int g = 0; g < gpus; ++g) {
    const uint32_t slot = reg.slot(FieldId::kGpuPower, g);
    std::vector<std::pair<int64_t, uint32_t>> want, got;
    for (size_t r = first; r < n; ++r) {
      const float v = ref.values[r][static_cast<size_t>(g)];
      if (std::isnan(v) || ref.times[r] < from || ref.times[r] > to) continue;
      want.emplace_back(ref.times[r], std::bit_cast<uint32_t>(v));
    }
    h.read(slot, from, to, [&](int64_t t, float v) { got.emplace_back(t, std::bit_cast<uint32_t>(v)); });
    ASSERT_EQ(got, want) << "gpu " << g << " from " << from << " to " << to;
    // A chunk at a time: the same samples, no empty batch.
    got.clear();
    h.read_batches(slot, from, to, [&](std::span<const int64_t> ts, std::span<const float> vs) {
      ASSERT_EQ(ts.size(), vs.size());
      ASSERT_FALSE(ts.empty());
      for (size_t i = 0; i < ts.size(); ++i) got.emplace_back(ts[i], std::bit_cast<uint32_t>(vs[i]));
    });
    ASSERT_EQ(got, want) << "batches: gpu " << g << " from " << from << " to " << to;
  }
}

TEST(HistoryChunks, MatchesAPlainRingForEveryShape) {
  std::mt19937 rng(2029);
  for (int round = 0; round < 60; ++round) {
    const size_t capacity = 1 + rng() % 300;
    const size_t chunk = rng() % 3 == 0 ? 0 : 1 + rng() % 70;  // 0: History's own choice
    const int gpus = 1 + static_cast<int>(rng() % 4);
    SeriesRegistry reg;
    LiveStore live;
    const int src = live.add_source("s", false);
    History h(capacity, chunk);
    Reference ref;
    std::vector<float> prev(static_cast<size_t>(gpus), 0);
    const int records = static_cast<int>(rng() % 900);
    int64_t t = 1000;
    for (int r = 0; r < records; ++r) {
      t += (rng() % 8 == 0) ? 1000 + static_cast<int64_t>(rng() % 5000) : 1000;  // gaps and jitter
      Frame f(reg);
      f.clear(t);
      std::vector<float> row(static_cast<size_t>(gpus), std::numeric_limits<float>::quiet_NaN());
      for (int g = 0; g < gpus; ++g) {
        // Each GPU is absent for runs of records (gaps, late start).
        if ((r / (7 + g * 13)) % 3 == 2 || r < g * 50) continue;
        const double v = value_at(rng, prev[static_cast<size_t>(g)]);
        f.set(FieldId::kGpuPower, g, v);
        row[static_cast<size_t>(g)] = prev[static_cast<size_t>(g)] = static_cast<float>(v);
      }
      live.publish(src, f);
      h.record(reg, live, t);
      ref.times.push_back(t);
      ref.values.push_back(row);
      if (rng() % 50 == 0) h.reclaim(reg, live);
    }
    ASSERT_EQ(h.records(), std::min<size_t>(capacity, ref.times.size()));
    expect_same(h, reg, ref, capacity, gpus, std::numeric_limits<int64_t>::min(),
                std::numeric_limits<int64_t>::max());
    if (!ref.times.empty()) {
      for (int q = 0; q < 10; ++q) {
        const int64_t a = ref.times[rng() % ref.times.size()], b = ref.times[rng() % ref.times.size()];
        expect_same(h, reg, ref, capacity, gpus, std::min(a, b), std::max(a, b));
      }
      const size_t first = ref.times.size() > capacity ? ref.times.size() - capacity : 0;
      EXPECT_EQ(h.oldest_ms(), ref.times[first]);
      EXPECT_EQ(h.newest_ms(), ref.times.back());
      EXPECT_EQ(h.times(0, std::numeric_limits<int64_t>::max()).size(), ref.times.size() - first);
    }
    if (HasFatalFailure()) return;
  }
}

TEST(HistoryChunks, ChunkBoundariesAndWindowEdges) {
  // Window 10 records in chunks of 4: records 0..3, 4..7, ... The window's
  // oldest record falls inside a chunk at every step.
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  History h(10, 4);
  EXPECT_EQ(h.chunk_records(), 4u);
  for (int r = 1; r <= 37; ++r) {
    Frame f(reg);
    f.clear(r * 1000);
    f.set(FieldId::kGpuPower, 0, r);
    live.publish(src, f);
    h.record(reg, live, r * 1000);
    std::vector<float> got;
    h.read(reg.slot(FieldId::kGpuPower, 0), 0, 1'000'000, [&](int64_t t, float v) {
      EXPECT_EQ(t, static_cast<int64_t>(v) * 1000);
      got.push_back(v);
    });
    ASSERT_EQ(got.size(), static_cast<size_t>(std::min(r, 10)));
    EXPECT_EQ(got.front(), static_cast<float>(std::max(1, r - 9)));
    EXPECT_EQ(got.back(), static_cast<float>(r));
  }
}

TEST(HistoryChunks, ConstantSeriesTakeAboutABitPerRecord) {
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  History h(3600);
  for (int r = 0; r < 3600; ++r) {
    Frame f(reg);
    f.clear(r * 1000);
    for (int g = 0; g < 8; ++g) f.set(FieldId::kGpuPower, g, 300);
    live.publish(src, f);
    h.record(reg, live, r * 1000);
  }
  const History::Usage u = h.usage();
  EXPECT_EQ(u.samples, 8u * 3600);
  // The values alone: 3600 bits (450 bytes) a series; with the chunk headers
  // and the times (8 bytes a record) about 1.2 bytes a sample here.
  EXPECT_LT(u.bytes, 8u * 3600 * 2);
  EXPECT_LE(u.bytes, History::budget_bytes(8, 3600));
}

TEST(HistoryChunks, BudgetBoundsTheWorstCase) {
  // Every value a new random bit pattern: the most a value can take.
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  std::mt19937 rng(1);
  History h(500);
  for (int r = 0; r < 1200; ++r) {
    Frame f(reg);
    f.clear(r * 1000);
    for (int g = 0; g < 4; ++g) {
      f.set(FieldId::kGpuPower, g, static_cast<double>(std::bit_cast<float>(static_cast<uint32_t>(rng()) & 0x7f7fffffu)));
    }
    live.publish(src, f);
    h.record(reg, live, r * 1000);
  }
  EXPECT_LE(h.memory_bytes(), History::budget_bytes(4, 500));
}

// The recorder appends (and reclaims) while readers read: each read sees
// whole records in time order, each value the one recorded at its time.
// Run under TSan in CI.
TEST(HistoryChunks, ConcurrentAppendAndRead) {
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  History h(64, 8);
  std::atomic<bool> stop{false};
  std::atomic<int> wrong{0}, reads{0};
  std::thread recorder([&] {
    for (int64_t r = 1; r <= 3000; ++r) {
      if (r % 50 == 0) {  // let the readers in: reads interleave with appends, chunk seals and reclaims
        const int seen = reads.load();
        while (reads.load() < seen + 2) std::this_thread::yield();
      }
      Frame f(reg);
      f.clear(r);
      for (int g = 0; g < 4; ++g) {
        if ((r + g) % 11 != 0) f.set(FieldId::kGpuPower, g, static_cast<double>(r * 4 + g));
      }
      live.publish(src, f);
      h.record(reg, live, r);
      if (r % 16 == 0) h.reclaim(reg, live);
    }
    stop = true;
  });
  std::vector<std::thread> readers;
  for (int k = 0; k < 2; ++k) {
    readers.emplace_back([&] {
      while (!stop) {
        for (int g = 0; g < 4; ++g) {
          const uint32_t slot = reg.slot(FieldId::kGpuPower, g);
          int64_t last = 0;
          h.read(slot, 0, std::numeric_limits<int64_t>::max(), [&](int64_t t, float v) {
            if (t <= last || v != static_cast<float>(t * 4 + g)) ++wrong;
            last = t;
          });
          ++reads;
        }
      }
    });
  }
  recorder.join();
  for (auto& r : readers) r.join();
  EXPECT_EQ(wrong.load(), 0) << "of " << reads.load() << " reads";
  EXPECT_GT(reads.load(), 0);
}

}  // namespace
}  // namespace gpulens
