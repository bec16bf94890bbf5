// History::reclaim with short-lived series (SeriesRegistry::mark_short_lived):
// a pushed or scraped series that went away is freed after the short bound,
// an agent's own series only after the whole window.
#include <gtest/gtest.h>

#include "store/history.h"

namespace gpulens {
namespace {

TEST(ShortLived, ReleasedAfterTheShortBoundOthersAfterTheWindow) {
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  History h(100);  // a window of 100 records
  h.set_short_lived_release(5);
  const uint32_t pushed = reg.slot(FieldId::kGpuAllocatorReserved, 0, Labels{{"pool", "a"}});
  reg.mark_short_lived(pushed);
  const uint32_t own = reg.slot(FieldId::kGpuProcessMemoryUsed, 0, Labels{{"pid", "7"}});
  int64_t t = 0;
  auto tick = [&](bool present) {
    Frame f(reg);
    f.clear(t += 1000);
    f.set(FieldId::kGpuPower, 0, 300);
    if (present) {
      f.set_slot(pushed, 1);
      f.set_slot(own, 2);
    }
    live.publish(src, f);
    h.record(reg, live, t);
  };
  tick(true);
  h.reclaim(reg, live);  // clears the lookup marks
  for (int i = 0; i < 4; ++i) tick(false);
  EXPECT_EQ(h.reclaim(reg, live), 0u) << "absent 4 records, fewer than 5";
  tick(false);
  EXPECT_EQ(h.reclaim(reg, live), 1u) << "absent 5 records: the short-lived one is freed";
  {
    std::lock_guard lock(reg.mutex());
    EXPECT_EQ(reg.series(pushed).gpu, kFreedEntity);
    EXPECT_EQ(reg.series(own).gpu, 0) << "the agent's own series waits for the whole window";
  }
  for (int i = 0; i < 95; ++i) tick(false);
  EXPECT_EQ(h.reclaim(reg, live), 1u);
}

TEST(ShortLived, ReusedSlotIsNoLongerShortLived) {
  SeriesRegistry reg;
  LiveStore live;
  History h(3);
  const uint32_t s = reg.slot(FieldId::kGpuAllocatorReserved, 0, Labels{{"pool", "a"}});
  reg.mark_short_lived(s);
  std::vector<uint32_t> freed;
  {
    std::lock_guard lock(reg.mutex());
    reg.release_locked({s});  // looked up: marks cleared, kept
    freed = reg.release_locked({s});
  }
  ASSERT_EQ(freed.size(), 1u);
  const uint32_t again = reg.slot(FieldId::kHostCpuSeconds, kNodeEntity, Labels{{"mode", "idle"}});
  EXPECT_EQ(again, s);
  std::lock_guard lock(reg.mutex());
  EXPECT_FALSE(reg.short_lived(again));
}

}  // namespace
}  // namespace gpulens
