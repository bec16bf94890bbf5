// Counter rates, merging and steps of signal series.
#include "diagnose/signals.h"

#include <gtest/gtest.h>

namespace gpulens::diagnose {
namespace {

TEST(CounterRate, SkipsResetsAndGaps) {
  const Series c{{0, 100}, {1000, 200}, {2000, 50}, {3000, 150}, {100000, 1150}, {101000, 1160}};
  const Series r = counter_rate(c, 10'000);
  // 0->1 s: 100/s; 1->2 s reset: none; 2->3 s: 100/s; 3->100 s gap: none; then 10/s.
  ASSERT_EQ(r.size(), 3u);
  EXPECT_DOUBLE_EQ(r[0].v, 100);
  EXPECT_EQ(r[1].t_ms, 3000);
  EXPECT_DOUBLE_EQ(r[1].v, 100);
  EXPECT_DOUBLE_EQ(r[2].v, 10);
}

TEST(Combine, SumsAndMaxesOnEqualTimes) {
  const Series a{{0, 1}, {1000, 2}}, b{{0, 5}, {2000, 7}};
  const Series s = combine({&a, &b}, Combine::kSum);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].v, 6);
  EXPECT_DOUBLE_EQ(s[2].v, 7);
  const Series m = combine({&a, &b}, Combine::kMax);
  EXPECT_DOUBLE_EQ(m[0].v, 5);
}

TEST(MedianStep, IgnoresOneGap) {
  const Series s{{0, 0}, {15000, 0}, {30000, 0}, {600000, 0}, {615000, 0}};
  EXPECT_EQ(median_step_ms(s), 15000);
}

}  // namespace
}  // namespace gpulens::diagnose
