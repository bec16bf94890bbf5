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

// The precedence rule of the scrape source: it fills only what no other
// source holds, in whichever order the two publish.
TEST(LiveStore, AGapFillingSourceNeverTakesASeriesFromAnother) {
  SeriesRegistry reg;
  LiveStore live;
  const int nvml = live.add_source("nvml", false);
  const int scrape = live.add_source("scrape", false, true);
  const uint32_t occ = reg.slot(FieldId::kGpuSmOccupancy, 0);
  const uint32_t power = reg.slot(FieldId::kGpuPower, 0);
  Frame fn(reg), fs(reg);
  fs.clear(1000);
  fs.set(FieldId::kGpuSmOccupancy, 0, 0.4);  // only the scrape has it (DCGM profiling on A100)
  fs.set(FieldId::kGpuPower, 0, 300);
  live.publish(scrape, fs);
  EXPECT_DOUBLE_EQ(live.value(power), 300);  // nobody else has it yet: filled
  fn.clear(1000);
  fn.set(FieldId::kGpuPower, 0, 310);
  live.publish(nvml, fn);
  EXPECT_DOUBLE_EQ(live.value(power), 310);  // NVML takes it
  fs.clear(2000);
  fs.set(FieldId::kGpuSmOccupancy, 0, 0.5);
  fs.set(FieldId::kGpuPower, 0, 999);
  live.publish(scrape, fs);
  EXPECT_DOUBLE_EQ(live.value(power), 310);  // and keeps it
  EXPECT_DOUBLE_EQ(live.value(occ), 0.5);
  EXPECT_EQ(live.present_count(), 2u);
  fs.clear(3000);
  live.publish(scrape, fs);  // the scrape lost everything: NVML's series stays
  EXPECT_TRUE(live.present(power));
  EXPECT_FALSE(live.present(occ));
  fn.clear(3000);
  live.publish(nvml, fn);  // NVML stops giving power: absent, then the scrape may fill it
  EXPECT_FALSE(live.present(power));
  fs.clear(4000);
  fs.set(FieldId::kGpuPower, 0, 305);
  live.publish(scrape, fs);
  EXPECT_DOUBLE_EQ(live.value(power), 305);
  EXPECT_EQ(live.present_count(), 1u);
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
