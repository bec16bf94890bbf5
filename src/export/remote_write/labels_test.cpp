// Series become sorted remote_write label sets with the right sample names.
#include "export/remote_write/labels.h"
#include "model/testing/label_text.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

using prompb::LabelPairs;

TEST(RemoteLabels, ValuesGoOutUnescapedAsTheSeriesHoldsThem) {
  SeriesRegistry reg;
  const uint32_t slot = reg.slot(FieldId::kHostCpuSeconds, kNodeEntity, Labels{{"mode", "q\"uo\\te\nd"}});
  std::lock_guard lock(reg.mutex());
  Result<LabelPairs> l = remote_labels(reg, slot, {});
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(*l, (LabelPairs{{"__name__", "host_cpu_seconds_total"}, {"mode", "q\"uo\\te\nd"}}));
}

TEST(RemoteLabels, GpuSeriesSortedWithExternalLabels) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-1", .name = "NVIDIA H200", .pci_bus_id = "", .serial = ""});
  uint32_t slot = reg.slot(FieldId::kGpuNvlinkTxBytes, 0, Labels{{"link", "3"}});
  std::vector<std::pair<std::string, std::string>> ext{{"instance", "node7"}, {"gpu", "ignored"}};
  std::lock_guard lock(reg.mutex());
  Result<LabelPairs> l = remote_labels(reg, slot, ext);
  ASSERT_TRUE(l.ok()) << l.status().message();
  EXPECT_EQ(*l, (LabelPairs{{"__name__", "gpu_nvlink_tx_bytes_total"},
                            {"gpu", "0"},
                            {"gpu_name", "NVIDIA H200"},
                            {"gpu_uuid", "GPU-1"},
                            {"instance", "node7"},
                            {"link", "3"}}));
}

TEST(RemoteLabels, EmptyValuesAreLeftOut) {
  SeriesRegistry reg;  // GPU 0 unknown: uuid and name empty
  const uint32_t slot = reg.slot(FieldId::kGpuPower, 0);
  std::lock_guard lock(reg.mutex());
  Result<LabelPairs> l = remote_labels(reg, slot, {});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (LabelPairs{{"__name__", "gpu_power_watts"}, {"gpu", "0"}}));
}

TEST(RemoteLabels, HistogramSeriesNames) {
  SeriesRegistry reg;
  auto name_of = [&](std::string_view extra) {
    const testing::TextKey k = testing::key_from_text(extra);
    const uint32_t slot = reg.slot(FieldId::kServingLatency, kNodeEntity, k.labels, k.part);
    std::lock_guard lock(reg.mutex());
    Result<LabelPairs> l = remote_labels(reg, slot, {});
    EXPECT_TRUE(l.ok());
    return *l;
  };
  EXPECT_EQ(name_of("le=\"0.5\""),
            (LabelPairs{{"__name__", "serving_request_latency_seconds_bucket"}, {"le", "0.5"}}));
  EXPECT_EQ(name_of("sum"), (LabelPairs{{"__name__", "serving_request_latency_seconds_sum"}}));
  EXPECT_EQ(name_of("count"), (LabelPairs{{"__name__", "serving_request_latency_seconds_count"}}));
  // An engine's histogram: its _sum keeps the engine's labels.
  EXPECT_EQ(name_of("sum,engine=\"vllm\",endpoint=\"http://a:8000/metrics\""),
            (LabelPairs{{"__name__", "serving_request_latency_seconds_sum"},
                        {"endpoint", "http://a:8000/metrics"},
                        {"engine", "vllm"}}));
}

TEST(RemoteLabels, UppercaseNamesSortBeforeName) {
  SeriesRegistry reg;
  std::vector<std::pair<std::string, std::string>> ext{{"Zone", "a"}};
  const uint32_t slot = reg.slot(FieldId::kAgentSourceUp, kNodeEntity, Labels{{"source", "nvml"}});
  std::lock_guard lock(reg.mutex());
  Result<LabelPairs> l = remote_labels(reg, slot, ext);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (LabelPairs{{"Zone", "a"}, {"__name__", "gpulens_source_up"}, {"source", "nvml"}}));
}

}  // namespace
}  // namespace gpulens
