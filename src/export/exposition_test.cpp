// Exposition output, line by line, in both formats and with DCGM names.
#include "export/exposition.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

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
  const std::string labels =
      "{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"\",device=\"nvidia0\",modelName=\"NVIDIA H200\",Hostname=\"node-1\"}";
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_GPU_UTIL" + labels + " 95"));
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_FB_USED" + labels + " 2048"));
  EXPECT_TRUE(has(body, "DCGM_FI_PROF_PCIE_RX_BYTES" + labels + " 5000000000"));
  EXPECT_TRUE(has(body, "gpu_utilization_ratio{gpu=\"0\",gpu_uuid=\"GPU-a\",gpu_name=\"NVIDIA H200\"} 0.95"));
}

// One whole exposition under --dcgm-names only, against a file written in
// dcgm-exporter's format (tests/data/dcgm-exporter/golden.prom): names,
// HELP/TYPE from its CSV, label order, integer vs six-decimal values, XID 0
// on a GPU without one, remapped rows split by cause, NVLink summed over
// links and directions, pod labels on an assigned GPU.
TEST(Exposition, DcgmGolden) {
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  reg.set_hostname("gpu-node-3");
  for (int g = 0; g < 2; ++g) {
    reg.set_gpu(g, {.uuid = g ? "GPU-8b22c0a4-1f0e-4a41-9c1d-2d6f0a9e1b02" : "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",
                    .name = "NVIDIA H100 80GB HBM3",
                    .pci_bus_id = g ? "00000000:9A:00.0" : "00000000:18:00.0",
                    .serial = "",
                    .driver = "550.144.03",
                    .minor = g});
  }
  reg.set_gpu_pod(0, {.container = "trainer", .namespace_ = "default", .pod = "llm-train-0"});
  Frame f(reg);
  f.clear(1'700'000'000'000);
  for (int g = 0; g < 2; ++g) {
    f.set(FieldId::kGpuUp, g, 1);
    f.set(FieldId::kGpuUtilization, g, g ? 0.0 : 0.97);
    f.set(FieldId::kGpuMemoryUtil, g, g ? 0.0 : 0.415);
    f.set(FieldId::kGpuEncoderUtil, g, 0);
    f.set(FieldId::kGpuDecoderUtil, g, 0);
    f.set(FieldId::kGpuSmClock, g, 1980e6);
    f.set(FieldId::kGpuMemClock, g, 2619e6);
    f.set(FieldId::kGpuTemperature, g, 61 + g);
    f.set(FieldId::kGpuMemoryTemperature, g, 70 + g);
    f.set(FieldId::kGpuPower, g, 612.345 - g * 500);
    f.set(FieldId::kGpuEnergy, g, 123456.789);  // J -> 123456789 mJ
    f.set(FieldId::kGpuPcieReplays, g, 0);
    f.set(FieldId::kGpuMemoryUsed, g, 70000.7 * 1048576);  // truncated to MiB like DCGM
    f.set(FieldId::kGpuMemoryFree, g, 11000 * 1048576.0);
    f.set(FieldId::kGpuMemoryReserved, g, 559 * 1048576.0);
    f.set(FieldId::kGpuNvlinkTxBytes, g, "link=\"0\"", 1024 * 1000);
    f.set(FieldId::kGpuNvlinkRxBytes, g, "link=\"0\"", 1024 * 2000);
    f.set(FieldId::kGpuNvlinkTxBytes, g, "link=\"1\"", 1024 * 30);
    f.set(FieldId::kGpuRemappedRows, g, "cause=\"correctable\"", 2);
    f.set(FieldId::kGpuRemappedRows, g, "cause=\"uncorrectable\"", 0);
    f.set(FieldId::kGpuRowRemapFailure, g, 0);
    f.set(FieldId::kGpuGraphicsEngineActive, g, 0.95);
    f.set(FieldId::kGpuTensorActive, g, 0.4123456789);
    f.set(FieldId::kGpuDramActive, g, 0.5);
    f.set(FieldId::kGpuPcieTxRate, g, 1.5e9);
    f.set(FieldId::kGpuPcieRxRate, g, 12345678.9);
    f.set(FieldId::kGpuClockEventReasons, g, g ? 0x20 : 0);
  }
  f.set(FieldId::kGpuLastXid, 0, 79);
  live.publish(src, f);
  Renderer r;
  const DcgmPicks defaults = [] {
    DcgmPicks s;
    auto pick = [&s](const DcgmRow& row) { s.emplace(row.name, DcgmPick{row.type, std::string(row.help)}); };
    for (const DcgmRow& row : dcgm_rows()) {
      if (row.default_counter) pick(row);
    }
    pick(*find_dcgm_row("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"));
    pick(*find_dcgm_row("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
    return s;
  }();
  const std::string body(r.render(reg, live, {.native_names = false, .dcgm_names = true, .dcgm_rows = &defaults}));
  const std::string path = std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/golden.prom";
  if (std::getenv("GPULENS_UPDATE_GOLDEN")) {
    std::ofstream(path) << body;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(body, want.str());
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
