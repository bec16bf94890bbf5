// Series become sorted remote_write label sets with the right sample names.
#include "export/remote_write/labels.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

using prompb::LabelPairs;

TEST(RemoteLabels, ParsesExpositionTextWithEscapes) {
  LabelPairs out;
  std::string bare;
  ASSERT_TRUE(parse_label_text(R"(a="x",b="q\"uo\\te\nd",c="")", out, &bare).is_ok());
  EXPECT_EQ(out, (LabelPairs{{"a", "x"}, {"b", "q\"uo\\te\nd"}, {"c", ""}}));
  EXPECT_EQ(bare, "");

  out.clear();
  ASSERT_TRUE(parse_label_text("model=\"m\",sum", out, &bare).is_ok());
  EXPECT_EQ(out, (LabelPairs{{"model", "m"}}));
  EXPECT_EQ(bare, "sum");

  Status s = parse_label_text("a=\"x", out, nullptr);
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "unterminated value of label a");
}

TEST(RemoteLabels, GpuSeriesSortedWithExternalLabels) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-1", .name = "NVIDIA H200", .pci_bus_id = "", .serial = ""});
  uint32_t slot = reg.slot(FieldId::kGpuNvlinkTxBytes, 0, "link=\"3\"");
  std::vector<std::pair<std::string, std::string>> ext{{"instance", "node7"}, {"gpu", "ignored"}};
  Result<LabelPairs> l = remote_labels(reg.series(slot), ext);
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
  Result<LabelPairs> l = remote_labels(reg.series(reg.slot(FieldId::kGpuPower, 0)), {});
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (LabelPairs{{"__name__", "gpu_power_watts"}, {"gpu", "0"}}));
}

TEST(RemoteLabels, HistogramSeriesNames) {
  SeriesRegistry reg;
  auto name_of = [&](std::string_view extra) {
    Result<LabelPairs> l = remote_labels(reg.series(reg.slot(FieldId::kServingLatency, kNodeEntity, extra)), {});
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
  Result<LabelPairs> l = remote_labels(reg.series(reg.slot(FieldId::kAgentSourceUp, kNodeEntity, "source=\"nvml\"")), ext);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(*l, (LabelPairs{{"Zone", "a"}, {"__name__", "gpulens_source_up"}, {"source", "nvml"}}));
}

}  // namespace
}  // namespace gpulens
