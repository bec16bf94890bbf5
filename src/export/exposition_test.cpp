// Exposition output, line by line, in both formats and with DCGM names.
#include "export/exposition.h"
#include "model/testing/label_text.h"
#include "model/xid.h"

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
    f.set(FieldId::kGpuInfo, 0, Labels{{"driver", "550"}}, 1);
    f.set_node(FieldId::kServingLatency, Labels{{"le", "0.1"}}, 5);
    f.set_node(FieldId::kServingLatency, Labels{{"le", "+Inf"}}, 7);
    f.set_node(FieldId::kServingLatency, HistogramPart::kSum, {}, 1.5);
    f.set_node(FieldId::kServingLatency, HistogramPart::kCount, {}, 7);
    f.set(FieldId::kGpuPcieRxRate, 0, 5e9);  // not native: only under DCGM names
    live.publish(src, f);
  }
};

bool has(std::string_view body, std::string_view line) {
  return body.find(std::string(line) + "\n") != std::string_view::npos;
}

// Compares with tests/data/dcgm-exporter/<name>; GPULENS_UPDATE_GOLDEN=1
// rewrites it (then review the diff).
void expect_golden(const std::string& body, const std::string& name) {
  const std::string path = std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/" + name;
  if (std::getenv("GPULENS_UPDATE_GOLDEN")) std::ofstream(path) << body;
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(body, want.str());
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

// A serving engine's histogram: its _sum and _count keep the engine's
// labels (pseudo-extras "sum,..." and "count,..."), so two engines are two.
TEST(Exposition, EngineHistogramsKeepTheirLabelsOnSumAndCount) {
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  Frame f(reg);
  f.clear(1'700'000'000'000);
  for (const char* ep : {"http://a:8000/metrics", "http://a:8001/metrics"}) {
    const std::string e = std::string("engine=\"vllm\",endpoint=\"") + ep + "\"";
    testing::set_text(f, FieldId::kServingTimeToFirstToken, kNodeEntity, e + ",le=\"+Inf\"", 3);
    testing::set_text(f, FieldId::kServingTimeToFirstToken, kNodeEntity, "sum," + e, 0.5);
    testing::set_text(f, FieldId::kServingTimeToFirstToken, kNodeEntity, "count," + e, 3);
  }
  live.publish(src, f);
  Renderer r;
  const std::string body(r.render(reg, live, {}));
  EXPECT_TRUE(has(body, "# TYPE serving_time_to_first_token_seconds histogram"));
  for (const char* ep : {"http://a:8000/metrics", "http://a:8001/metrics"}) {
    const std::string e = std::string("endpoint=\"") + ep + "\",engine=\"vllm\"";  // sorted by name
    EXPECT_TRUE(has(body, "serving_time_to_first_token_seconds_bucket{" + e + ",le=\"+Inf\"} 3")) << body;
    EXPECT_TRUE(has(body, "serving_time_to_first_token_seconds_sum{" + e + "} 0.5")) << body;
    EXPECT_TRUE(has(body, "serving_time_to_first_token_seconds_count{" + e + "} 3")) << body;
  }
  EXPECT_EQ(body.find("{sum"), std::string::npos);
  EXPECT_EQ(body.find("{count"), std::string::npos);
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
std::string dcgm_golden_body(DcgmGeneration naming) {
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
  reg.set_dcgm_driver_label(true, dcgm_driver_row(naming));
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
    f.set(FieldId::kGpuNvlinkTxBytes, g, Labels{{"link", "0"}}, 1024 * 1000);
    f.set(FieldId::kGpuNvlinkRxBytes, g, Labels{{"link", "0"}}, 1024 * 2000);
    f.set(FieldId::kGpuNvlinkTxBytes, g, Labels{{"link", "1"}}, 1024 * 30);
    f.set(FieldId::kGpuRemappedRows, g, Labels{{"cause", "correctable"}}, 2);
    f.set(FieldId::kGpuRemappedRows, g, Labels{{"cause", "uncorrectable"}}, 0);
    f.set(FieldId::kGpuRowRemapFailure, g, 0);
    f.set(FieldId::kGpuGraphicsEngineActive, g, 0.95);
    f.set(FieldId::kGpuTensorActive, g, 0.4123456789);
    f.set(FieldId::kGpuDramActive, g, 0.5);
    f.set(FieldId::kGpuPcieTxRate, g, 1.5e9);
    f.set(FieldId::kGpuPcieRxRate, g, 12345678.9);
    f.set(FieldId::kGpuClockEventReasons, g, g ? 0x20 : 0);
    // Not among the classic default counters; dcgm-exporter 4.9's
    // FB_CAPACITY_BYTES and NVLINK_THROUGHPUT_BYTES_PER_SECOND read them.
    f.set(FieldId::kGpuMemoryTotal, g, 81559 * 1048576.0);
    f.set(FieldId::kGpuNvlinkTxRate, g, 1e9);
    f.set(FieldId::kGpuNvlinkRxRate, g, 2e9 + g);
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
  return std::string(
      r.render(reg, live, {.native_names = false, .dcgm_names = true, .dcgm_naming = naming, .dcgm_rows = &defaults}));
}

TEST(Exposition, DcgmGolden) { expect_golden(dcgm_golden_body(DcgmGeneration::kClassic), "golden.prom"); }

// The same node under --dcgm-names=4.9 (tests/data/dcgm-exporter/golden-4.9.prom):
// dcgm-exporter 4.9's default names (DCGM 4.7's), in their units (Hz, J,
// 0..1 ratios, bytes, B/s), DCGM_FI_SYSTEM_DRIVER_VERSION as the label, the
// names it did not rename (PCIe link, clock events) as they were.
TEST(Exposition, DcgmGolden49) {
  const std::string body = dcgm_golden_body(DcgmGeneration::kDcgm49);
  expect_golden(body, "golden-4.9.prom");
  EXPECT_EQ(body.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos);
  EXPECT_EQ(body.find("DCGM_FI_DRIVER_VERSION="), std::string::npos);
}

// A counters file in dcgm-exporter 4.9's names loads, and its names are
// written as listed whatever --dcgm-names says (the file picks the naming),
// its label row naming the driver label.
TEST(Exposition, ACountersFileIn49NamesWritesThoseNames) {
  auto sel = parse_collectors(
      "DCGM_FI_DEV_GPU_UTIL_RATIO, gauge, GPU utilization (ratio).\n"
      "DCGM_FI_DEV_FB_USED_BYTES, gauge, Framebuffer memory used (in bytes).\n"
      "DCGM_FI_SYSTEM_DRIVER_VERSION, label, Driver Version\n",
      "counters-4.9.csv");
  ASSERT_TRUE(sel.ok()) << sel.status().message();
  EXPECT_TRUE(sel->from_file);
  EXPECT_EQ(sel->driver_row, "DCGM_FI_SYSTEM_DRIVER_VERSION");
  EXPECT_TRUE(sel->fields.test(static_cast<size_t>(FieldId::kGpuUtilization)));
  EXPECT_TRUE(sel->fields.test(static_cast<size_t>(FieldId::kGpuMemoryUsed)));
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  reg.set_hostname("n1");
  reg.set_gpu(0, {.uuid = "GPU-a", .name = "NVIDIA H200", .driver = "580.65.06"});
  reg.set_dcgm_driver_label(sel->driver_label, sel->driver_row);
  Frame f(reg);
  f.clear(1000);
  f.set(FieldId::kGpuUtilization, 0, 0.5);
  f.set(FieldId::kGpuMemoryUsed, 0, 4096.0);
  live.publish(src, f);
  Renderer r;
  const std::string body(r.render(reg, live, {.native_names = false, .dcgm_names = true,
                                              .dcgm_naming = DcgmGeneration::kClassic, .dcgm_rows = &sel->dcgm,
                                              .dcgm_file_rows = true}));
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_GPU_UTIL_RATIO{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"\",device=\"nvidia0\","
                        "modelName=\"NVIDIA H200\",Hostname=\"n1\",DCGM_FI_SYSTEM_DRIVER_VERSION=\"580.65.06\"} 0.500000"))
      << body;
  EXPECT_NE(body.find("\nDCGM_FI_DEV_FB_USED_BYTES{gpu=\"0\""), std::string::npos) << body;
  EXPECT_EQ(body.find("DCGM_FI_DEV_GPU_UTIL{"), std::string::npos);
}

// A node with one whole GPU and one A100 in MIG mode with two GPU
// instances (tests/data/dcgm-exporter/golden-mig.prom): as dcgm-exporter
// (its default -d f) the MIG GPU's series are replaced by one per GPU
// instance, GPU_I_PROFILE and GPU_I_ID after modelName, the parent's gpu,
// UUID and device kept; memory and engine activity are the instance's own
// (a GPU instance split into two compute instances: memory shared, activity
// their mean), clocks, power, temperatures and XID the parent's, and what
// gpulens has no per-instance value for (FB_RESERVED, PCIe rates) absent;
// each instance carries its own pod; XID series carry err_code/err_msg.
TEST(Exposition, DcgmGoldenMig) {
  SeriesRegistry reg;
  LiveStore live;
  const int src = live.add_source("s", false);
  reg.set_hostname("gpu-node-5");
  reg.set_gpu(0, {.uuid = "GPU-2d7c1a0e-5b3f-4c8e-9a61-0f4b8e2d3c11", .name = "NVIDIA A100-SXM4-80GB",
                  .pci_bus_id = "00000000:07:00.0", .serial = "", .driver = "550.144.03", .minor = 0});
  reg.set_gpu(1, {.uuid = "GPU-9e4f2b61-7a0c-4d3e-8b15-6c2a9f0e7d42", .name = "NVIDIA A100-SXM4-80GB",
                  .pci_bus_id = "00000000:0F:00.0", .serial = "", .driver = "550.144.03", .minor = 1});
  reg.set_gpu_pod(0, {.container = "trainer", .namespace_ = "ml", .pod = "train-0"});
  // The GPU-level pod of a MIG GPU is not an instance's.
  reg.set_gpu_pod(1, {.container = "x", .namespace_ = "x", .pod = "x"});
  reg.set_mig_pod(1, 1, {.container = "server", .namespace_ = "serve", .pod = "vllm-7b-0"});
  const Labels gi1 = mig_labels({.uuid = "MIG-5b0c2e1d-8f3a-5e7b-a1c4-3d9e6f2a0b17", .profile = "4g.40gb",
                                      .gpu_instance = 1, .compute_instance = 0});
  const Labels gi2a = mig_labels({.uuid = "MIG-7c1d3f2e-9a4b-5f8c-b2d5-4e0f7a3b1c28", .profile = "1c.3g.40gb",
                                       .gpu_instance = 2, .compute_instance = 0});
  const Labels gi2b = mig_labels({.uuid = "MIG-8d2e4a3f-0b5c-5a9d-c3e6-5f1a8b4c2d39", .profile = "1c.3g.40gb",
                                       .gpu_instance = 2, .compute_instance = 1});
  Frame f(reg);
  f.clear(1'700'000'000'000);
  for (int g = 0; g < 2; ++g) {
    f.set(FieldId::kGpuUp, g, 1);
    f.set(FieldId::kGpuSmClock, g, 1410e6);
    f.set(FieldId::kGpuMemClock, g, 1593e6);
    f.set(FieldId::kGpuTemperature, g, 40 + g);
    f.set(FieldId::kGpuMemoryTemperature, g, 50 + g);
    f.set(FieldId::kGpuPower, g, 250.5 + g);
    f.set(FieldId::kGpuEnergy, g, 1000.0 * (g + 1));
    f.set(FieldId::kGpuPcieReplays, g, 0);
    f.set(FieldId::kGpuMemoryReserved, g, 800 * 1048576.0);
    f.set(FieldId::kGpuPcieTxRate, g, 1e6);
    f.set(FieldId::kGpuPcieRxRate, g, 2e6);
    f.set(FieldId::kGpuRowRemapFailure, g, 0);
  }
  // GPU 0 is whole; GPU 1 in MIG mode has no GPU-wide utilisation or memory
  // use (NVML: NOT_SUPPORTED), only its instances'.
  f.set(FieldId::kGpuUtilization, 0, 0.9);
  f.set(FieldId::kGpuMemoryUsed, 0, 60000 * 1048576.0);
  f.set(FieldId::kGpuMemoryFree, 0, 21000 * 1048576.0);
  f.set(FieldId::kGpuGraphicsEngineActive, 0, 0.88);
  f.set(FieldId::kGpuMemoryUsed, 1, 99 * 1048576.0);  // must not leak onto an instance
  f.set(FieldId::kGpuLastXid, 1, 31);
  for (const Labels* x : {&gi1, &gi2a, &gi2b}) f.set(FieldId::kGpuMigInfo, 1, *x, 1);
  f.set(FieldId::kGpuMigMemoryUsed, 1, gi1, 30000 * 1048576.0);
  f.set(FieldId::kGpuMigMemoryFree, 1, gi1, 10440 * 1048576.0);
  f.set(FieldId::kGpuMigGraphicsEngineActive, 1, gi1, 0.75);
  f.set(FieldId::kGpuMigTensorActive, 1, gi1, 0.5);
  for (const Labels* x : {&gi2a, &gi2b}) {
    f.set(FieldId::kGpuMigMemoryUsed, 1, *x, 12 * 1048576.0);
    f.set(FieldId::kGpuMigMemoryFree, 1, *x, 40000 * 1048576.0);
  }
  f.set(FieldId::kGpuMigGraphicsEngineActive, 1, gi2a, 0.0);
  f.set(FieldId::kGpuMigGraphicsEngineActive, 1, gi2b, 0.1);
  live.publish(src, f);
  Renderer r;
  const DcgmPicks defaults = [] {
    DcgmPicks s;
    for (const DcgmRow& row : dcgm_rows()) {
      if (row.default_counter) s.emplace(row.name, DcgmPick{row.type, std::string(row.help)});
    }
    return s;
  }();
  const std::string body(r.render(reg, live, {.native_names = false, .dcgm_names = true, .dcgm_rows = &defaults}));
  expect_golden(body, "golden-mig.prom");
  // The facts the golden file holds, spelled out.
  const std::string gi2 =
      "{gpu=\"1\",UUID=\"GPU-9e4f2b61-7a0c-4d3e-8b15-6c2a9f0e7d42\",pci_bus_id=\"00000000:0F:00.0\","
      "device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\","
      "Hostname=\"gpu-node-5\",DCGM_FI_DRIVER_VERSION=\"550.144.03\"";
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_FB_USED" + gi2 + "} 12"));
  EXPECT_TRUE(has(body, "DCGM_FI_PROF_GR_ENGINE_ACTIVE" + gi2 + "} 0.050000"));
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_GPU_TEMP" + gi2 + "} 41"));
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_XID_ERRORS" + gi2 + ",err_code=\"31\",err_msg=\"GPU memory page fault\"} 31"));
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_GPU_TEMP" + gi2.substr(0, gi2.find(",GPU_I_PROFILE")) +
                            ",GPU_I_PROFILE=\"4g.40gb\",GPU_I_ID=\"1\",Hostname=\"gpu-node-5\","
                            "DCGM_FI_DRIVER_VERSION=\"550.144.03\",container=\"server\",namespace=\"serve\","
                            "pod=\"vllm-7b-0\"} 41"));
  EXPECT_EQ(body.find("DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-9e4f2b61-7a0c-4d3e-8b15-6c2a9f0e7d42\","
                      "pci_bus_id=\"00000000:0F:00.0\",device=\"nvidia1\",modelName=\"NVIDIA A100-SXM4-80GB\","
                      "Hostname"),
            std::string::npos);  // no GPU-wide series for the MIG GPU
  EXPECT_EQ(body.find("pod=\"x\""), std::string::npos);
  EXPECT_EQ(body.find("DCGM_FI_DEV_FB_RESERVED{gpu=\"1\""), std::string::npos);
  EXPECT_EQ(body.find("DCGM_FI_PROF_PCIE_TX_BYTES{gpu=\"1\""), std::string::npos);
  EXPECT_TRUE(has(body, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-2d7c1a0e-5b3f-4c8e-9a61-0f4b8e2d3c11\","
                        "pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\","
                        "Hostname=\"gpu-node-5\",DCGM_FI_DRIVER_VERSION=\"550.144.03\",container=\"trainer\","
                        "err_code=\"0\",err_msg=\"No Error\",namespace=\"ml\",pod=\"train-0\"} 0"));
}

TEST(Exposition, XidMessages) {
  EXPECT_EQ(xid_message(0), "No Error");
  EXPECT_EQ(xid_message(79), "GPU has fallen off the bus");
  EXPECT_EQ(xid_message(172), "Uncorrectable SRAM Error");
  EXPECT_EQ(xid_message(173), "Unknown Error");
  EXPECT_EQ(xid_message(-1), "Unknown Error");
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
