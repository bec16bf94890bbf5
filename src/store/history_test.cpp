// History keeps gauges as values and counters as rates, bounded by capacity.
#include "store/history.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace gpulens {
namespace {

struct Fixture {
  SeriesRegistry reg;
  LiveStore live;
  int src = live.add_source("s", false);
  Frame frame{reg};

  void publish(int64_t t, double power, double bytes) {
    frame.clear(t);
    frame.set(FieldId::kGpuPower, 0, power);
    frame.set(FieldId::kGpuPcieRxBytes, 0, bytes);
    live.publish(src, frame);
  }
  std::vector<std::pair<int64_t, float>> read(FieldId f, int64_t from, int64_t to, const History& h) {
    std::vector<std::pair<int64_t, float>> out;
    h.read(reg.slot(f, 0), from, to, [&](int64_t t, float v) { out.emplace_back(t, v); });
    return out;
  }
};

TEST(History, GaugesAndCounterRates) {
  Fixture fx;
  History h(10);
  fx.publish(1000, 300, 0);
  h.record(fx.reg, fx.live, 1000);
  fx.publish(2000, 310, 5e9);
  h.record(fx.reg, fx.live, 2000);
  fx.publish(4000, 320, 15e9);
  h.record(fx.reg, fx.live, 4000);

  auto power = fx.read(FieldId::kGpuPower, 0, 10000, h);
  ASSERT_EQ(power.size(), 3u);
  EXPECT_FLOAT_EQ(power[2].second, 320);

  auto rx = fx.read(FieldId::kGpuPcieRxBytes, 0, 10000, h);
  ASSERT_EQ(rx.size(), 2u);  // the first record has no rate
  EXPECT_FLOAT_EQ(rx[0].second, 5e9);
  EXPECT_FLOAT_EQ(rx[1].second, 5e9);  // 10e9 over 2 s
}

TEST(History, CounterResetIsAbsentNotNegative) {
  Fixture fx;
  History h(10);
  fx.publish(1000, 1, 100);
  h.record(fx.reg, fx.live, 1000);
  fx.publish(2000, 1, 50);  // reset
  h.record(fx.reg, fx.live, 2000);
  fx.publish(3000, 1, 150);
  h.record(fx.reg, fx.live, 3000);
  auto rx = fx.read(FieldId::kGpuPcieRxBytes, 0, 10000, h);
  ASSERT_EQ(rx.size(), 1u);
  EXPECT_EQ(rx[0].first, 3000);
  EXPECT_FLOAT_EQ(rx[0].second, 100);
}

TEST(History, RingKeepsOnlyCapacityNewest) {
  Fixture fx;
  History h(3);
  for (int i = 1; i <= 5; ++i) {
    fx.publish(i * 1000, i, 0);
    h.record(fx.reg, fx.live, i * 1000);
  }
  EXPECT_EQ(h.records(), 3u);
  EXPECT_EQ(h.oldest_ms(), 3000);
  EXPECT_EQ(h.newest_ms(), 5000);
  auto power = fx.read(FieldId::kGpuPower, 0, 100000, h);
  ASSERT_EQ(power.size(), 3u);
  EXPECT_FLOAT_EQ(power[0].second, 3);
  // A window selects by time.
  EXPECT_EQ(fx.read(FieldId::kGpuPower, 4000, 4000, h).size(), 1u);
}

TEST(History, AbsentValuesAreSkipped) {
  Fixture fx;
  History h(4);
  fx.publish(1000, 5, 0);
  h.record(fx.reg, fx.live, 1000);
  fx.frame.clear(2000);
  fx.live.publish(fx.src, fx.frame);  // nothing reported
  h.record(fx.reg, fx.live, 2000);
  EXPECT_EQ(fx.read(FieldId::kGpuPower, 0, 10000, h).size(), 1u);
}

}  // namespace
}  // namespace gpulens
