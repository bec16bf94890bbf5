// Exposition output, line by line, in both formats and with DCGM names.
#include "export/exposition.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

struct Fixture {
  SeriesRegistry reg;
  LiveStore live;
  int src = live.add_source("s", false);
  Renderer r;

  Fixture() {
    reg.set_hostname("node-1");
    reg.set_gpu(0, {.uuid = "GPU-a", .name = "NVIDIA H200", .pci_bus_id = "", .serial = ""});
    Frame f(reg);
    f.clear(1'700'000'000'123);
    f.set(FieldId::kGpuUtilization, 0, 0.95);
    f.set(FieldId::kGpuPcieRxBytes, 0, 1e12);
    f.set(FieldId::kGpuMemoryUsed, 0, 2.0 * 1024 * 1024 * 1024);
    f.set(FieldId::kGpuInfo, 0, "driver=\"550\"", 1);
    f.set_node(FieldId::kServingLatency, "le=\"0.1\"", 5);
    f.set_node(FieldId::kServingLatency, "le=\"+Inf\"", 7);
    f.set_node(FieldId::kServingLatency, "sum", 1.5);
    f.set_node(FieldId::kServingLatency, "count", 7);
    f.set(FieldId::kGpuPcieRxRate, 0, 5e9);  // not native: only under DCGM names
    live.publish(src, f);
  }
};

bool has(std::string_view body, std::string_view line) {
  return body.find(std::string(line) + "\n") != std::string_view::npos;
}

TEST(Exposition, Text004) {
  Fixture fx;
  std::string body(fx.r.render(fx.reg, fx.live, {}));
  EXPECT_TRUE(has(body, "# TYPE gpu_utilization_ratio gauge"));
  EXPECT_TRUE(has(body, "gpu_utilization_ratio{gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"} 0.95"));
  EXPECT_TRUE(has(body, "# TYPE gpu_pcie_rx_bytes_total counter"));
  EXPECT_TRUE(has(body, "gpu_pcie_rx_bytes_total{gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"} 1000000000000"));
  EXPECT_TRUE(has(body, "# TYPE gpu_info gauge"));
  EXPECT_TRUE(has(body, "# TYPE serving_request_latency_seconds histogram"));
  EXPECT_TRUE(has(body, "serving_request_latency_seconds_bucket{le=\"0.1\"} 5"));
  EXPECT_TRUE(has(body, "serving_request_latency_seconds_sum 1.5"));
  EXPECT_TRUE(has(body, "serving_request_latency_seconds_count 7"));
  EXPECT_EQ(body.find("bytes_per_second"), std::string::npos);  // rates are not native
  EXPECT_EQ(body.find("gpu_power_watts"), std::string::npos);   // absent, not zero
  EXPECT_EQ(body.find("# EOF"), std::string::npos);
}

TEST(Exposition, OpenMetrics) {
  Fixture fx;
  std::string body(fx.r.render(fx.reg, fx.live, {.format = Format::kOpenMetrics}));
  EXPECT_TRUE(has(body, "# TYPE gpu_pcie_rx_bytes counter"));
  EXPECT_TRUE(has(body, "# TYPE gpu info"));
  EXPECT_TRUE(body.ends_with("# EOF\n"));
  std::string ts(fx.r.render(fx.reg, fx.live, {.format = Format::kOpenMetrics, .timestamps = true}));
  EXPECT_TRUE(has(ts, "gpu_utilization_ratio{gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"} 0.95 1700000000.123"));
}

TEST(Exposition, DcgmNamesScaleUnits) {
  Fixture fx;
  std::string body(fx.r.render(fx.reg, fx.live, {.dcgm_names = true}));
  const std::string labels = "{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"node-1\"}";
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_GPU_UTIL" + labels + " 95"));
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_FB_USED" + labels + " 2048"));
  EXPECT_TRUE(has(body, "DCGM_FI_PROF_PCIE_RX_BYTES" + labels + " 5000000000"));
  EXPECT_TRUE(has(body, "gpu_utilization_ratio{gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"} 0.95"));
}

TEST(Exposition, Negotiation) {
  EXPECT_EQ(negotiate(""), Format::kText004);
  EXPECT_EQ(negotiate("text/plain"), Format::kText004);
  EXPECT_EQ(negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                      "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            Format::kOpenMetrics);
  EXPECT_EQ(negotiate("application/openmetrics-text;version=0.0.1"), Format::kText004);
  EXPECT_EQ(negotiate("application/openmetrics-text;q=0.2,text/plain;q=0.9"), Format::kText004);
  EXPECT_EQ(negotiate("garbage;;;q=zz,,"), Format::kText004);
  EXPECT_EQ(negotiate(std::string(10000, ',')), Format::kText004);
}

TEST(Exposition, SteadyStateRenderReusesBuffer) {
  Fixture fx;
  auto first = fx.r.render(fx.reg, fx.live, {});
  const char* data = first.data();
  auto second = fx.r.render(fx.reg, fx.live, {});
  EXPECT_EQ(second.data(), data);
  EXPECT_EQ(first.size(), second.size());
}

TEST(Exposition, ValueFormatting) {
  std::string s;
  append_value(s, 0.1);
  s += ' ';
  append_value(s, 1e21);
  s += ' ';
  append_value(s, -0.0);
  EXPECT_EQ(s, "0.1 1e+21 0");
}

}  // namespace
}  // namespace gpulens
