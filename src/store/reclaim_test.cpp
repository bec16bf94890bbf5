// History::reclaim with SeriesRegistry::release_locked: series of processes
// that come and go give their slots and rings back once gone for a whole
// window, so churning pids do not grow the agent's memory; a reused slot
// holds only its new series' data.
#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "store/history.h"

namespace gpulens {
namespace {

Labels pid_label(int pid) { return Labels{{"pid", std::to_string(pid)}}; }

struct Churn {
  SeriesRegistry reg;
  LiveStore live;
  int src = live.add_source("s", false);

  // One tick: GPU 0's power and the memory of process `pid` on GPU 0.
  void tick(History& h, int64_t t, int pid) {
    Frame f(reg);
    f.clear(t);
    f.set(FieldId::kGpuPower, 0, 300);
    f.set(FieldId::kGpuProcessMemoryUsed, 0, pid_label(pid), static_cast<double>(pid));
    live.publish(src, f);
    h.record(reg, live, t);
  }
};

TEST(Reclaim, ChurningPidsKeepSlotsAndMemoryBounded) {
  Churn c;
  History h(10);  // a window of 10 records
  int64_t t = 0;
  size_t bytes_after_first_window = 0;
  // A new process every record for 200 records, reclaiming every 5 records.
  for (int pid = 1; pid <= 200; ++pid) {
    c.tick(h, t += 1000, pid);
    if (pid % 5 == 0) h.reclaim(c.reg, c.live);
    if (pid == 30) bytes_after_first_window = h.memory_bytes();
  }
  // Without reclaiming, 201 slots with a ring each; with it, the processes of
  // about two windows (10 records + up to 2 reclaim periods) and the power series.
  EXPECT_LE(c.reg.live_count(), 1u + 10 + 10 + 1);
  EXPECT_LE(c.reg.count(), 1u + 10 + 10 + 1);
  EXPECT_LE(h.memory_bytes(), bytes_after_first_window);
  // The current process and the power series are still there with their data.
  std::vector<float> mem;
  h.read(c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(200)), 0, t, [&](int64_t, float v) { mem.push_back(v); });
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_FLOAT_EQ(mem[0], 200);
  size_t power = 0;
  h.read(c.reg.slot(FieldId::kGpuPower, 0), 0, t, [&](int64_t, float) { ++power; });
  EXPECT_EQ(power, 10u);
}

TEST(Reclaim, ReusedSlotHoldsOnlyTheNewSeries) {
  Churn c;
  History h(3);
  c.tick(h, 1000, 7);
  const uint32_t old_slot = c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(7));
  const uint32_t gen = c.reg.generation(old_slot);
  // pid 7 is gone; pid 8 runs for 3 records (a whole window), then the sweep
  // that clears lookup marks, then the one that frees.
  for (int64_t t = 2000; t <= 4000; t += 1000) c.tick(h, t, 8);
  EXPECT_EQ(h.reclaim(c.reg, c.live), 0u) << "pid 7 was looked up above, since no earlier reclaim";
  EXPECT_EQ(h.reclaim(c.reg, c.live), 1u);
  EXPECT_TRUE(c.reg.slots_of(FieldId::kGpuProcessMemoryUsed).size() == 1u);
  // pid 9 takes pid 7's slot, under a new generation, with none of its data.
  c.tick(h, 5000, 9);
  const uint32_t new_slot = c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(9));
  EXPECT_EQ(new_slot, old_slot);
  EXPECT_NE(c.reg.generation(new_slot), gen);
  EXPECT_EQ(c.reg.series(new_slot).extra, pid_label(9));
  std::vector<std::pair<int64_t, float>> got;
  h.read(new_slot, 0, 10000, [&](int64_t t, float v) { got.emplace_back(t, v); });
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, 5000);
  EXPECT_FLOAT_EQ(got[0].second, 9);
  // pid 7 asked for again is a new series in a new slot, not the old one back.
  EXPECT_NE(c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(7)), new_slot);
}

TEST(Reclaim, SeriesGoneForLessThanTheWindowIsKept) {
  Churn c;
  History h(5);
  c.tick(h, 1000, 1);
  const uint32_t slot = c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(1));
  for (int64_t t = 2000; t <= 4000; t += 1000) c.tick(h, t, 2);  // pid 1 absent 3 of 5 records
  h.reclaim(c.reg, c.live);
  h.reclaim(c.reg, c.live);
  EXPECT_EQ(c.reg.series(slot).extra, pid_label(1));
  size_t n = 0;
  h.read(slot, 0, 10000, [&](int64_t, float) { ++n; });
  EXPECT_EQ(n, 1u) << "its sample is still inside the window";
}

TEST(Reclaim, ASlotLookedUpSinceTheLastSweepIsKept) {
  Churn c;
  History h(2);
  c.tick(h, 1000, 1);
  for (int64_t t = 2000; t <= 4000; t += 1000) c.tick(h, t, 2);
  h.reclaim(c.reg, c.live);  // clears the marks of the ticks above
  // A source looks pid 1 up again (about to publish it): not freed.
  const uint32_t slot = c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(1));
  EXPECT_EQ(h.reclaim(c.reg, c.live), 0u);
  EXPECT_EQ(c.reg.series(slot).extra, pid_label(1));
  EXPECT_EQ(c.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, pid_label(1)), slot);
}

// Sources, the recorder with its reclaim and readers at once (as in the
// agent): a reader under the locks always finds each present slot holding
// the value its own series was published with (value = pid), never one of a
// series that had the slot before. Run under TSan in CI.
TEST(Reclaim, ConcurrentChurnNeverShowsAValueUnderAnotherSeries) {
  Churn c;
  History h(8);
  std::atomic<bool> stop{false};
  std::atomic<int> checked{0}, wrong{0};
  std::atomic<int> pids{0};
  std::thread source([&] {
    for (int pid = 1; !stop; ++pid) {  // a new process about every record
      Frame f(c.reg);
      f.clear(pid);
      f.set(FieldId::kGpuProcessMemoryUsed, 0, pid_label(pid), pid);
      f.set(FieldId::kGpuProcessMemoryUsed, 0, pid_label(pid + 1), pid + 1);
      c.live.publish(c.src, f);
      pids = pid;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  });
  std::thread recorder([&] {
    for (int64_t t = 1; t <= 1000; ++t) {
      h.record(c.reg, c.live, t);
      if (t % 4 == 0) h.reclaim(c.reg, c.live);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    stop = true;
  });
  std::thread reader([&] {
    while (!stop) {
      std::scoped_lock lock(c.reg.mutex(), c.live.mutex());
      for (uint32_t s = 0; s < c.live.size() && s < c.reg.count(); ++s) {
        if (!c.live.present(s)) continue;
        const std::string pid(c.reg.series(s).extra.get("pid"));
        int want = 0;
        std::from_chars(pid.data(), pid.data() + pid.size(), want);
        ++checked;
        if (c.live.value(s) != want) ++wrong;
      }
    }
  });
  source.join();
  recorder.join();
  reader.join();
  EXPECT_EQ(wrong.load(), 0) << "of " << checked.load() << " values read";
  EXPECT_GT(checked.load(), 0);
  EXPECT_LT(c.reg.count(), static_cast<size_t>(pids.load()) / 2) << "slots were reused";
}

}  // namespace
}  // namespace gpulens
