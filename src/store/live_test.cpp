// A source's frame replaces its previous values; other sources are untouched.
#include "store/live.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

TEST(LiveStore, FrameReplacesPreviousValuesOfItsSource) {
  SeriesRegistry reg;
  LiveStore live;
  int a = live.add_source("a", false);
  int b = live.add_source("b", false);
  Frame fa(reg), fb(reg);
  fa.clear(1000);
  fa.set(FieldId::kGpuPower, 0, 100);
  fa.set(FieldId::kGpuTemperature, 0, 50);
  live.publish(a, fa);
  fb.clear(1000);
  fb.set_node(FieldId::kHostCpuCount, 8);
  live.publish(b, fb);
  const uint32_t power = reg.slot(FieldId::kGpuPower, 0);
  const uint32_t temp = reg.slot(FieldId::kGpuTemperature, 0);
  const uint32_t cpus = reg.slot(FieldId::kHostCpuCount, kNodeEntity);
  EXPECT_TRUE(live.present(power));
  EXPECT_EQ(live.present_count(), 3u);

  fa.clear(2000);
  fa.set(FieldId::kGpuPower, 0, 120);  // temperature no longer reported
  live.publish(a, fa);
  EXPECT_DOUBLE_EQ(live.value(power), 120);
  EXPECT_EQ(live.time_ms(power), 2000);
  EXPECT_FALSE(live.present(temp));
  EXPECT_TRUE(live.present(cpus));
  EXPECT_EQ(live.present_count(), 2u);
}

TEST(LiveStore, StatusTracksLastSuccess) {
  LiveStore live;
  int a = live.add_source("nvml", false);
  EXPECT_FALSE(live.sources()[a].up);
  live.set_status(a, true, "", 0.01, 5000);
  live.set_status(a, false, "GPU lost", 0.02, 6000);
  EXPECT_FALSE(live.sources()[a].up);
  EXPECT_EQ(live.sources()[a].last_success_ms, 5000);
  EXPECT_EQ(live.sources()[a].last_error, "GPU lost");
}

}  // namespace
}  // namespace gpulens
