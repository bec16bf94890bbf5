// Slots are stable and label sets are rendered once, escaped.
#include "model/series.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

TEST(SeriesRegistry, SameKeySameSlot) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-a", .name = "NVIDIA H200", .pci_bus_id = "", .serial = ""});
  uint32_t a = reg.slot(FieldId::kGpuPower, 0);
  uint32_t b = reg.slot(FieldId::kGpuPower, 0);
  uint32_t c = reg.slot(FieldId::kGpuNvlinkTxBytes, 0, "link=\"1\"");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(reg.count(), 2u);
  EXPECT_EQ(reg.series(a).labels, "gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"");
  EXPECT_EQ(reg.series(c).labels, "gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\",link=\"1\"");
  EXPECT_EQ(reg.slots_of(FieldId::kGpuPower).size(), 1u);
}

TEST(SeriesRegistry, DcgmLabels) {
  SeriesRegistry reg;
  reg.set_hostname("node-7");
  reg.set_gpu(1, {.uuid = "GPU-b", .name = "NVIDIA H100", .pci_bus_id = "00000000:1B:00.0", .serial = ""});
  uint32_t s = reg.slot(FieldId::kGpuUtilization, 1);
  EXPECT_EQ(reg.series(s).dcgm_labels,
            "gpu=\"1\",UUID=\"GPU-b\",device=\"nvidia1\",modelName=\"NVIDIA H100\","
            "pci_bus_id=\"00000000:1B:00.0\",Hostname=\"node-7\"");
  // Fields without a DCGM equivalent carry no DCGM labels.
  EXPECT_TRUE(reg.series(reg.slot(FieldId::kGpuMemoryFragmentation, 1)).dcgm_labels.empty());
}

TEST(SeriesRegistry, NodeSeriesHaveOnlyExtraLabels) {
  SeriesRegistry reg;
  uint32_t s = reg.slot(FieldId::kHostCpuSeconds, kNodeEntity, "mode=\"user\"");
  EXPECT_EQ(reg.series(s).labels, "mode=\"user\"");
}

TEST(Labels, Escaping) {
  EXPECT_EQ(label("a", "x\"y\\z\nw"), "a=\"x\\\"y\\\\z\\nw\"");
}

}  // namespace
}  // namespace gpulens
