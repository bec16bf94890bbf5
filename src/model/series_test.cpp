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
  uint32_t c = reg.slot(FieldId::kGpuNvlinkTxBytes, 0, Labels{{"link", "1"}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(reg.count(), 2u);
  EXPECT_EQ(reg.series(a).labels, "gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"");
  EXPECT_EQ(reg.series(c).labels, "gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\",link=\"1\"");
  EXPECT_EQ(reg.slots_of(FieldId::kGpuPower).size(), 1u);
}

TEST(SeriesRegistry, DcgmLabelsInDcgmExporterOrder) {
  SeriesRegistry reg;
  reg.set_hostname("node-7");
  reg.set_gpu(1, {.uuid = "GPU-b", .name = "NVIDIA H100", .pci_bus_id = "00000000:1B:00.0", .serial = "",
                  .driver = "550.144.03", .minor = 3});
  EXPECT_EQ(reg.dcgm_labels(1),
            "gpu=\"1\",UUID=\"GPU-b\",pci_bus_id=\"00000000:1B:00.0\",device=\"nvidia3\",modelName=\"NVIDIA H100\","
            "Hostname=\"node-7\",DCGM_FI_DRIVER_VERSION=\"550.144.03\"");
  // A GPU assigned to a pod: container, namespace, pod after the label rows.
  reg.set_gpu_pod(1, {.container = "trainer", .namespace_ = "ml", .pod = "job-0"});
  reg.set_dcgm_host_label(DcgmHostLabel::kLowercase);
  EXPECT_EQ(reg.dcgm_labels(1),
            "gpu=\"1\",UUID=\"GPU-b\",pci_bus_id=\"00000000:1B:00.0\",device=\"nvidia3\",modelName=\"NVIDIA H100\","
            "hostname=\"node-7\",DCGM_FI_DRIVER_VERSION=\"550.144.03\",container=\"trainer\",namespace=\"ml\","
            "pod=\"job-0\"");
  reg.set_dcgm_host_label(DcgmHostLabel::kNone);
  reg.set_dcgm_driver_label(false);
  reg.set_gpu_pod(1, {});
  EXPECT_EQ(reg.dcgm_labels(1),
            "gpu=\"1\",UUID=\"GPU-b\",pci_bus_id=\"00000000:1B:00.0\",device=\"nvidia3\",modelName=\"NVIDIA H100\"");
  // Without a minor number the device is nvidia<index>; unknown GPUs have none.
  reg.set_gpu(0, {.uuid = "GPU-a", .name = "X", .pci_bus_id = "", .serial = ""});
  EXPECT_NE(reg.dcgm_labels(0).find("device=\"nvidia0\""), std::string::npos);
  EXPECT_TRUE(reg.dcgm_labels(5).empty());
}

// The parts a DCGM series inserts its own labels between, and the pod of a
// MIG GPU instance replacing the GPU's.
TEST(SeriesRegistry, DcgmPartsAndMigPods) {
  SeriesRegistry reg;
  reg.set_hostname("n");
  reg.set_gpu(0, {.uuid = "GPU-a", .name = "A100", .pci_bus_id = "p", .serial = "", .driver = "550"});
  reg.set_gpu_pod(0, {.container = "c", .namespace_ = "ns", .pod = "p0"});
  const auto parts = reg.dcgm_parts(0);
  EXPECT_EQ(parts.head, "gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"p\",device=\"nvidia0\",modelName=\"A100\"");
  EXPECT_EQ(parts.mid, ",Hostname=\"n\",DCGM_FI_DRIVER_VERSION=\"550\"");
  EXPECT_EQ(parts.container, ",container=\"c\"");
  EXPECT_EQ(parts.namespace_pod, ",namespace=\"ns\",pod=\"p0\"");
  EXPECT_EQ(std::string(parts.head) + std::string(parts.mid) + std::string(parts.container) +
                std::string(parts.namespace_pod),
            reg.dcgm_labels(0));
  EXPECT_TRUE(reg.dcgm_mig_parts(0, 3).container.empty());  // an instance without a pod: none
  reg.set_mig_pod(0, 3, {.container = "srv", .namespace_ = "s", .pod = "v"});
  EXPECT_EQ(reg.dcgm_mig_parts(0, 3).container, ",container=\"srv\"");
  EXPECT_EQ(reg.dcgm_mig_parts(0, 3).namespace_pod, ",namespace=\"s\",pod=\"v\"");
  EXPECT_EQ(reg.dcgm_mig_parts(0, 3).head, parts.head);
  reg.set_mig_pod(0, 3, {});
  EXPECT_TRUE(reg.dcgm_mig_parts(0, 3).namespace_pod.empty());
  EXPECT_TRUE(reg.dcgm_parts(4).head.empty());
}

TEST(SeriesRegistry, NodeSeriesHaveOnlyExtraLabels) {
  SeriesRegistry reg;
  uint32_t s = reg.slot(FieldId::kHostCpuSeconds, kNodeEntity, Labels{{"mode", "user"}});
  EXPECT_EQ(reg.series(s).labels, "mode=\"user\"");
}

TEST(SeriesRegistry, HistogramPartsAreTypedAndKeepSeriesApart) {
  SeriesRegistry reg;
  const Labels engine{{"engine", "vllm"}};
  // A histogram field's series without a part is a bucket.
  const uint32_t bucket = reg.slot(FieldId::kServingLatency, kNodeEntity, Labels{{"le", "0.1"}});
  const uint32_t sum = reg.slot(FieldId::kServingLatency, kNodeEntity, engine, HistogramPart::kSum);
  const uint32_t count = reg.slot(FieldId::kServingLatency, kNodeEntity, engine, HistogramPart::kCount);
  EXPECT_EQ(reg.series(bucket).part, HistogramPart::kBucket);
  EXPECT_EQ(reg.series(sum).part, HistogramPart::kSum);
  EXPECT_NE(sum, count);  // same labels, another part: another series
  EXPECT_EQ(reg.slot(FieldId::kServingLatency, kNodeEntity, engine, HistogramPart::kSum), sum);
  EXPECT_EQ(reg.series(sum).labels, "engine=\"vllm\"");  // the part is no label
  EXPECT_EQ(histogram_suffix(HistogramPart::kCount), "_count");
  EXPECT_EQ(histogram_suffix(HistogramPart::kNone), "");
  // Not a histogram: no part.
  EXPECT_EQ(reg.series(reg.slot(FieldId::kGpuPower, 0)).part, HistogramPart::kNone);
}

TEST(SeriesRegistry, ExtraLabelsRenderSortedAfterTheGpuScope) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-a", .name = "H", .pci_bus_id = "", .serial = ""});
  const uint32_t s = reg.slot(FieldId::kGpuProcessMemoryUsed, 0, Labels{{"pid", "7"}, {"container", "c\"x"}});
  EXPECT_EQ(reg.series(s).labels, "gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"H\",container=\"c\\\"x\",pid=\"7\"");
  EXPECT_EQ(reg.series(s).extra.get("container"), "c\"x");
  std::lock_guard lock(reg.mutex());
  const Labels all = reg.all_labels(s);
  EXPECT_EQ(all.get("gpu_uuid"), "GPU-a");
  EXPECT_EQ(all.get("pid"), "7");
  EXPECT_EQ(all.size(), 5u);
}

TEST(Labels, Escaping) {
  EXPECT_EQ(label("a", "x\"y\\z\nw"), "a=\"x\\\"y\\\\z\\nw\"");
}

TEST(KeyFromText, ReadsTheKeysOfThePreviousReleasesJson) {
  // A quote or comma inside a value (a pod name an outside writer chose)
  // neither ends the value nor starts a label.
  const std::string key = "gpu_allocator_ooms_total{pid=\"7\"," + label("pod", "a\",pid=\"9") + ",pool=\"large\"}";
  const KeyText k = key_from_text(key);
  EXPECT_EQ(k.name, "gpu_allocator_ooms_total");
  EXPECT_EQ(k.labels.get("pid"), "7");
  EXPECT_EQ(k.labels.get("pod"), "a\",pid=\"9");
  EXPECT_EQ(k.labels.get("pool"), "large");
  EXPECT_EQ(k.labels.size(), 3u);
  EXPECT_EQ(k.part, HistogramPart::kNone);
  EXPECT_EQ(key_from_text("up").name, "up");
  EXPECT_TRUE(key_from_text("up{}").labels.empty());
  // A histogram's sum and count carry their part as a bare leading word; a bucket its le.
  const KeyText sum = key_from_text("serving_ttft_seconds{sum,engine=\"vllm\"}");
  EXPECT_EQ(sum.part, HistogramPart::kSum);
  EXPECT_EQ(sum.labels.get("engine"), "vllm");
  EXPECT_EQ(key_from_text("serving_ttft_seconds{count}").part, HistogramPart::kCount);
  EXPECT_EQ(key_from_text("serving_ttft_seconds{le=\"0.1\"}").part, HistogramPart::kBucket);
  // What render() writes reads back equal.
  const Labels l{{"a", "x\\y\nz\""}, {"b", ""}};
  EXPECT_EQ(key_from_text("m{" + l.render() + "}").labels, l);
}

TEST(MigLabels, SortedAndReadBack) {
  const Labels mig = mig_labels({.uuid = "MIG-1f2e", .profile = "1g.18gb", .gpu_instance = 9, .compute_instance = 0});
  EXPECT_EQ(mig.render(), "compute_instance_id=\"0\",gpu_instance_id=\"9\",mig_profile=\"1g.18gb\",mig_uuid=\"MIG-1f2e\"");
  EXPECT_EQ(mig.get("mig_profile"), "1g.18gb");
  EXPECT_EQ(mig.get("gpu_instance_id"), "9");
  EXPECT_EQ(mig.get("instance_id"), "");  // a suffix of a name is not the name
}

}  // namespace
}  // namespace gpulens
