// The scrape source: names onto the catalog (units, recognition, the one
// mapping table), and the source against a loopback stand-in that answers
// dcgm-exporter and vLLM text, garbage, HTTP 500, or nothing at all.
#include <map>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "sources/scrape/catalog_targets.h"
#include "model/testing/label_text.h"
#include "sources/scrape/scrape_source.h"
#include "store/live.h"
#include "sources/scrape/testing/page_server.h"

namespace gpulens {
namespace {

using scrape::catalog_targets;
using scrape::CatalogTarget;

// The target of a histogram's _sum or _count.
CatalogTarget histogram_target(FieldId field, HistogramPart part, Labels extra) {
  CatalogTarget t{field, 1, std::move(extra)};
  t.histogram = part;
  return t;
}
using testing::PageServer;

std::vector<CatalogTarget> targets(std::string_view name,
                                   std::vector<std::pair<std::string_view, std::string_view>> labels = {}) {
  return catalog_targets(name, labels);
}

TEST(CatalogTargets, DcgmUnitsBecomeTheCatalogs) {
  EXPECT_EQ(targets("DCGM_FI_DEV_FB_USED"), (std::vector<CatalogTarget>{{FieldId::kGpuMemoryUsed, 1048576.0, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_DEV_GPU_UTIL"), (std::vector<CatalogTarget>{{FieldId::kGpuUtilization, 0.01, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_DEV_SM_CLOCK"), (std::vector<CatalogTarget>{{FieldId::kGpuSmClock, 1e6, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_PROF_SM_OCCUPANCY"), (std::vector<CatalogTarget>{{FieldId::kGpuSmOccupancy, 1, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
            (std::vector<CatalogTarget>{{FieldId::kGpuTensorActive, 1, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_PROF_DRAM_ACTIVE"), (std::vector<CatalogTarget>{{FieldId::kGpuDramActive, 1, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
            (std::vector<CatalogTarget>{{FieldId::kGpuClockEventReasons, 1, Labels{}}}));
  EXPECT_EQ(targets("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"), targets("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"));
  // Through the catalog's own DCGM rows: mJ -> J, MHz -> Hz.
  ASSERT_EQ(targets("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").size(), 1u);
  EXPECT_EQ(targets("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0].field, FieldId::kGpuEnergy);
  EXPECT_DOUBLE_EQ(targets("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")[0].scale, 0.001);
  ASSERT_EQ(targets("DCGM_FI_DEV_MEM_CLOCK").size(), 1u);
  EXPECT_DOUBLE_EQ(targets("DCGM_FI_DEV_MEM_CLOCK")[0].scale, 1e6);
  // A label row is no value.
  EXPECT_TRUE(targets("DCGM_FI_DRIVER_VERSION").empty());
}

// One truth: where the mapping table and the catalog's DCGM rows both know
// a name, they agree on the field's unit.
TEST(CatalogTargets, MappingTableAndDcgmRowsAgree) {
  int both = 0;
  for (const DcgmRow& row : dcgm_rows()) {
    if (row.value == DcgmValue::kLabel || row.field2 != FieldId::kCount || !row.extra.empty()) continue;
    if (diagnose::map_series(row.name, {}).empty()) continue;
    const auto t = targets(row.name);
    ASSERT_EQ(t.size(), 1u) << row.name;
    if (t[0].field != row.field) continue;  // e.g. PCIe bytes/s: a rate field beside the counter row
    EXPECT_NEAR(t[0].scale * row.scale, 1.0, 1e-9) << row.name;
    ++both;
  }
  EXPECT_GE(both, 10);
}

TEST(CatalogTargets, NodeExporterAndServingEngines) {
  EXPECT_EQ(targets("node_cpu_seconds_total", {{"cpu", "3"}, {"mode", "idle"}}),
            (std::vector<CatalogTarget>{{FieldId::kHostCpuSeconds, 1, Labels{{"mode", "idle"}}}}));
  EXPECT_EQ(targets("node_network_receive_bytes_total", {{"device", "eth0"}}),
            (std::vector<CatalogTarget>{{FieldId::kHostNetworkReceiveBytes, 1, Labels{{"device", "eth0"}}}}));
  EXPECT_EQ(targets("node_pressure_io_waiting_seconds_total"),
            (std::vector<CatalogTarget>{{FieldId::kHostPressureIoWaiting, 1, Labels{}}}));
  EXPECT_EQ(targets("vllm:num_requests_running", {{"model_name", "m"}, {"engine", "0"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsRunning, 1, Labels{{"engine", "vllm"}}}}));
  EXPECT_EQ(targets("sglang:num_queue_reqs", {{"model_name", "m"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsWaiting, 1, Labels{{"engine", "sglang"}}}}));
  EXPECT_EQ(targets("tgi_queue_size"),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsWaiting, 1, Labels{{"engine", "tgi"}}}}));
  EXPECT_EQ(targets("vllm:e2e_request_latency_seconds_bucket", {{"model_name", "m"}, {"le", "0.3"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingLatency, 1, Labels{{"engine", "vllm"}, {"le", "0.3"}}}}));
  EXPECT_EQ(targets("vllm:e2e_request_latency_seconds_sum", {{"model_name", "m"}}),
            (std::vector<CatalogTarget>{histogram_target(FieldId::kServingLatency, HistogramPart::kSum, Labels{{"engine", "vllm"}})}));
  EXPECT_EQ(targets("tgi_request_duration_count"),
            (std::vector<CatalogTarget>{histogram_target(FieldId::kServingLatency, HistogramPart::kCount, Labels{{"engine", "tgi"}})}));
  // Triton: microseconds -> seconds; with the successes, the mean latency.
  EXPECT_EQ(targets("nv_inference_request_duration_us", {{"model", "m"}, {"version", "1"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestDuration, 1e-6, Labels{{"engine", "triton"}}}}));
  EXPECT_EQ(targets("nv_inference_request_success", {{"model", "m"}, {"version", "1"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsSucceeded, 1, Labels{{"engine", "triton"}}}}));
  EXPECT_EQ(targets("nv_inference_pending_request_count", {{"model", "m"}, {"version", "1"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsWaiting, 1, Labels{{"engine", "triton"}}}}));
  EXPECT_TRUE(targets("node_cpu_seconds_total_sum").empty());
  EXPECT_TRUE(targets("go_goroutines").empty());
  EXPECT_TRUE(targets("vllm:num_requests_swapped").empty());
}

// The names docs/scrape.md lists as read.
TEST(CatalogTargets, EveryDocumentedNameMaps) {
  for (const char* n :
       {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MAX_SM_CLOCK", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_PCIE_LINK_GEN", "DCGM_FI_DEV_PCIE_LINK_WIDTH",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
        "node_pressure_cpu_waiting_seconds_total", "node_pressure_io_waiting_seconds_total",
        "node_disk_io_time_seconds_total", "node_infiniband_port_data_received_bytes_total",
        "vllm:num_requests_running", "vllm:num_requests_waiting", "sglang:num_running_reqs",
        "sglang:num_queue_reqs", "tgi_batch_current_size", "tgi_queue_size"}) {
    EXPECT_EQ(targets(n).size(), 1u) << n;
  }
  EXPECT_EQ(targets("node_cpu_seconds_total", {{"mode", "user"}}).size(), 1u);
  EXPECT_EQ(targets("node_network_transmit_bytes_total", {{"device", "eth0"}}).size(), 1u);
  EXPECT_EQ(targets("node_network_speed_bytes", {{"device", "eth0"}}).size(), 1u);
  EXPECT_EQ(targets("sglang:e2e_request_latency_seconds_bucket", {{"le", "1"}}).size(), 1u);
  EXPECT_EQ(targets("tgi_request_duration_bucket", {{"le", "1"}}).size(), 1u);
}

TEST(CatalogTargets, ExportersRecognisedByTheirNames) {
  using scrape::Exporter;
  EXPECT_EQ(scrape::recognise("DCGM_FI_DEV_GPU_UTIL"), Exporter::kDcgmExporter);
  EXPECT_EQ(scrape::recognise("node_load1"), Exporter::kNodeExporter);
  EXPECT_EQ(scrape::recognise("vllm:num_requests_running"), Exporter::kVllm);
  EXPECT_EQ(scrape::recognise("sglang:num_queue_reqs"), Exporter::kSglang);
  EXPECT_EQ(scrape::recognise("tgi_queue_size"), Exporter::kTgi);
  EXPECT_EQ(scrape::recognise("nv_inference_request_success"), Exporter::kTriton);
  EXPECT_EQ(scrape::recognise("go_goroutines"), Exporter::kUnknown);
  EXPECT_EQ(scrape::exporter_name(Exporter::kDcgmExporter), "dcgm-exporter");
}

// dcgm-exporter's line format and label order (4.x), two GPUs, one in a pod.
const std::string kDcgm =
    "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n"
    "# TYPE DCGM_FI_DEV_FB_USED gauge\n"
    "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\",DCGM_FI_DRIVER_VERSION=\"550.144.03\","
    "container=\"trainer\",namespace=\"ml\",pod=\"job-0\"} 2048\n"
    "DCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-bbbb\",pci_bus_id=\"00000000:0F:00.0\",device=\"nvidia1\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\",DCGM_FI_DRIVER_VERSION=\"550.144.03\"} 0\n"
    "# HELP DCGM_FI_PROF_SM_OCCUPANCY The ratio of number of warps resident on an SM.\n"
    "# TYPE DCGM_FI_PROF_SM_OCCUPANCY gauge\n"
    "DCGM_FI_PROF_SM_OCCUPANCY{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\",DCGM_FI_DRIVER_VERSION=\"550.144.03\","
    "container=\"trainer\",namespace=\"ml\",pod=\"job-0\"} 0.250000\n"
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-aaaa\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\",DCGM_FI_DRIVER_VERSION=\"550.144.03\","
    "container=\"trainer\",namespace=\"ml\",pod=\"job-0\"} 93\n";

// vLLM (prometheus_client text): two engines summed, a histogram.
const std::string kVllm =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 4.0\n"
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"0.3\",model_name=\"m\"} 10.0\n"
    "vllm:e2e_request_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 12.0\n"
    "vllm:e2e_request_latency_seconds_count{engine=\"0\",model_name=\"m\"} 12.0\n"
    "vllm:e2e_request_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 2.5\n"
    "vllm:e2e_request_latency_seconds_created{engine=\"0\",model_name=\"m\"} 1.7e9\n";

double value_of(SeriesRegistry& reg, LiveStore& live, FieldId f, int gpu, const Labels& extra = {},
                HistogramPart part = HistogramPart::kNone) {
  const uint32_t s = reg.slot(f, gpu, extra, part);
  return live.present(s) ? live.value(s) : -1;
}
double value_of(SeriesRegistry& reg, LiveStore& live, FieldId f, int gpu, std::string_view text) {
  const testing::TextKey k = testing::key_from_text(text);
  return value_of(reg, live, f, gpu, k.labels, k.part);
}

SourceOptions options(std::vector<std::string> targets) {
  SourceOptions o;
  o.scrape.targets = std::move(targets);
  o.scrape.interval_ms = 100;
  o.scrape.timeout_ms = 300;
  o.scrape.max_bytes = 64 << 10;
  return o;
}

TEST(ScrapeSource, ScrapedGpusBecomeTheGpusWithTheirPods) {
  PageServer srv({{"/dcgm", kDcgm}, {"/vllm", kVllm}});
  SeriesRegistry reg;
  LiveStore live;
  auto src = make_scrape_source(options({srv.url("/dcgm"), srv.url("/vllm")}));
  ASSERT_TRUE(src->open(reg).is_ok());
  EXPECT_TRUE(src->fills_gaps());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  Status s = src->sample(f);
  ASSERT_TRUE(s.is_ok()) << s.message();
  live.publish(idx, f);
  ASSERT_EQ(reg.gpu_count(), 2);
  EXPECT_EQ(reg.gpu(0)->uuid, "GPU-aaaa");
  EXPECT_EQ(reg.gpu(0)->name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(reg.gpu(0)->pci_bus_id, "00000000:07:00.0");
  EXPECT_EQ(reg.gpu(0)->driver, "550.144.03");
  EXPECT_EQ(reg.gpu(1)->uuid, "GPU-bbbb");
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMemoryUsed, 0), 2048.0 * 1048576);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMemoryUsed, 1), 0);  // a real 0 stays 0
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuSmOccupancy, 0), 0.25);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuUtilization, 0), 0.93);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuSmOccupancy, 1), -1);  // not given: absent
  // vLLM's data-parallel engines 0 and 1: one engine, their requests summed.
  const Labels vllm{{"engine", "vllm"}, {"endpoint", srv.url("/vllm")}};
  auto with = [](Labels l, std::string_view name, std::string_view value) {
    l.set(name, value);
    return l;
  };
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, kNodeEntity, vllm), 7);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingLatency, kNodeEntity, with(vllm, "le", "0.3")), 10);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingLatency, kNodeEntity, vllm, HistogramPart::kSum), 2.5);
  // The model its series name (model_name), once per engine.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingEngineInfo, kNodeEntity, with(vllm, "model", "m")), 1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceUp, kNodeEntity,
                            "source=\"scrape\",target=\"" + srv.url("/dcgm") + "\""),
                   1);
  {
    std::lock_guard lock(reg.mutex());
    EXPECT_NE(reg.dcgm_labels(0).find("container=\"trainer\",namespace=\"ml\",pod=\"job-0\""), std::string::npos)
        << reg.dcgm_labels(0);
    EXPECT_EQ(reg.dcgm_labels(1).find("pod="), std::string::npos);
  }
}

TEST(ScrapeSource, ScrapedGpusJoinTheNodesGpusByUuid) {
  PageServer srv({{"/dcgm", kDcgm}});
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-bbbb", .name = "NVIDIA A100-SXM4-80GB"});  // as nvml found them
  reg.set_gpu(1, {.uuid = "GPU-cccc", .name = "NVIDIA A100-SXM4-80GB"});
  LiveStore live;
  auto src = make_scrape_source(options({srv.url("/dcgm")}));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  ASSERT_TRUE(src->sample(f).is_ok());
  live.publish(idx, f);
  EXPECT_EQ(reg.gpu_count(), 2);  // GPU-aaaa is not on this node: dropped
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMemoryUsed, 0), 0);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMemoryUsed, 1), -1);
}

// Triton (prometheus-cpp text) with summary_latencies=true: two models.
std::string triton_summary() {
  std::string out =
      "# HELP nv_inference_request_summary_us Summary of inference request duration in microseconds\n"
      "# TYPE nv_inference_request_summary_us summary\n";
  const std::pair<const char*, double> models[] = {{"resnet", 80'000}, {"bert", 260'000}};
  for (const auto& [model, p99] : models) {
    const std::string l = std::string("model=\"") + model + "\",version=\"1\"";
    for (const auto& [q, f] : {std::pair{"0.5", 0.4}, {"0.9", 0.7}, {"0.95", 0.8}, {"0.99", 1.0}, {"0.999", 1.5}}) {
      out += "nv_inference_request_summary_us{" + l + ",quantile=\"" + q + "\"} " + std::to_string(p99 * f) + "\n";
    }
    out += "nv_inference_request_summary_us_sum{" + l + "} 123456789\n";
    out += "nv_inference_request_summary_us_count{" + l + "} 4321\n";
  }
  return out;
}

TEST(ScrapeSource, TritonsSummaryP99IsTheWorstModelInSeconds) {
  PageServer srv({{"/triton", triton_summary()}});
  SeriesRegistry reg;
  LiveStore live;
  auto src = make_scrape_source(options({srv.url("/triton")}));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  ASSERT_TRUE(src->sample(f).is_ok());
  live.publish(idx, f);
  const Labels triton{{"engine", "triton"}, {"endpoint", srv.url("/triton")}};
  EXPECT_NEAR(value_of(reg, live, FieldId::kServingLatencyP99, kNodeEntity, triton), 0.26, 1e-9);
  // Its _sum and _count fill no histogram.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingLatency, kNodeEntity, triton, HistogramPart::kSum), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingLatency, kNodeEntity, triton, HistogramPart::kCount), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestDuration, kNodeEntity, triton), -1);
}

TEST(ScrapeSource, BadTargetsAreDownWithTheirReasonWhileTheOthersServe) {
  PageServer srv({{"/dcgm", kDcgm}, {"/garbage", "<html><body>login</body></html>\n"},
               {"/big", std::string(100 << 10, '#')}});
  SeriesRegistry reg;
  LiveStore live;
  auto src = make_scrape_source(options(
      {srv.url("/dcgm"), srv.url("/garbage"), srv.url("/500"), srv.url("/hang"), srv.url("/big"), "http://127.0.0.1:1/metrics"}));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  Status s = src->sample(f);  // the first sample waits for every first answer, at most one timeout
  live.publish(idx, f);
  ASSERT_FALSE(s.is_ok());
  const std::string m = s.message();
  EXPECT_NE(m.find("5 of 6 targets down"), std::string::npos) << m;
  EXPECT_NE(m.find(srv.url("/garbage") + ":1: expected a metric name"), std::string::npos) << m;
  EXPECT_NE(m.find(srv.url("/500") + ": HTTP 500"), std::string::npos) << m;
  EXPECT_NE(m.find("timeout after 300 ms"), std::string::npos) << m;
  EXPECT_NE(m.find("exceeds 65536 bytes"), std::string::npos) << m;
  EXPECT_NE(m.find("http://127.0.0.1:1/metrics: connect 127.0.0.1:1: Connection refused"), std::string::npos) << m;
  auto up = [&](const std::string& path) {
    return value_of(reg, live, FieldId::kAgentSourceUp, kNodeEntity,
                    "source=\"scrape\",target=\"" + (path[0] == '/' ? srv.url(path) : path) + "\"");
  };
  EXPECT_EQ(up("/dcgm"), 1);
  EXPECT_EQ(up("/garbage"), 0);
  EXPECT_EQ(up("/500"), 0);
  EXPECT_EQ(up("/hang"), 0);
  EXPECT_EQ(up("/big"), 0);
  EXPECT_EQ(up("http://127.0.0.1:1/metrics"), 0);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuSmOccupancy, 0), 0.25);  // the good one still served
  // Why each is down (gpulens_source_down_reason), one reason per target,
  // none for the one that is up.
  auto down = [&](const std::string& path, std::string_view reason) {
    return value_of(reg, live, FieldId::kAgentSourceDownReason, kNodeEntity,
                    "source=\"scrape\",target=\"" + (path[0] == '/' ? srv.url(path) : path) + "\",reason=\"" +
                        std::string(reason) + "\"");
  };
  EXPECT_EQ(down("/garbage", "parse_error"), 1);
  EXPECT_EQ(down("/500", "http_status"), 1);
  EXPECT_EQ(down("/hang", "timeout"), 1);
  EXPECT_EQ(down("/big", "too_large"), 1);
  EXPECT_EQ(down("http://127.0.0.1:1/metrics", "refused"), 1);
  EXPECT_EQ(down("/500", "error"), -1);  // only its own reason
  for (std::string_view r : {"timeout", "refused", "unreachable", "tls", "http_status", "too_large", "too_many_series",
                             "parse_error", "bad_values", "error"}) {
    EXPECT_EQ(down("/dcgm", r), -1) << r;  // up: no reason at all
  }
}

TEST(ScrapeSource, ATargetThatBreaksLosesItsValuesAndReloadChangesTargets) {
  PageServer srv({{"/dcgm", kDcgm}, {"/vllm", kVllm}});
  SeriesRegistry reg;
  LiveStore live;
  auto src = make_scrape_source(options({srv.url("/dcgm")}));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  ASSERT_TRUE(src->sample(f).is_ok());
  live.publish(idx, f);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuSmOccupancy, 0), 0.25);
  srv.set("/dcgm", "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 1\n");  // cut short: garbage
  Status s;
  for (int i = 0; i < 50; ++i) {  // the target's thread scrapes every 100 ms
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.clear(2000 + i);
    s = src->sample(f);
    if (!s.is_ok()) break;
  }
  live.publish(idx, f);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("unterminated label set"), std::string::npos) << s.message();
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuSmOccupancy, 0), -1);  // nothing stale kept

  ASSERT_TRUE(src->reconfigure(options({srv.url("/vllm")})).is_ok());
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.clear(3000 + i);
    s = src->sample(f);
    if (s.is_ok()) break;
  }
  live.publish(idx, f);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, kNodeEntity,
                            "engine=\"vllm\",endpoint=\"" + srv.url("/vllm") + "\""),
                   7);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceUp, kNodeEntity,
                            "source=\"scrape\",target=\"" + srv.url("/dcgm") + "\""),
                   -1);  // the removed target's series are gone
  EXPECT_FALSE(src->reconfigure(options({})).is_ok());
}

// A series absent for a whole history window gives its slot back (History::
// reclaim); a target that comes back must not write into the slot's new owner.
TEST(ScrapeSource, SeriesBackAfterTheirSlotWasReclaimedLookItUpAgain) {
  PageServer srv({{"/dcgm", kDcgm}});
  SeriesRegistry reg;
  LiveStore live;
  auto src = make_scrape_source(options({srv.url("/dcgm")}));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  ASSERT_TRUE(src->sample(f).is_ok());
  const uint32_t occ = reg.slot(FieldId::kGpuSmOccupancy, 0);
  srv.set("/dcgm", "<html>\n");
  Status s;
  for (int i = 0; i < 50 && s.is_ok(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.clear(2000 + i);
    s = src->sample(f);
  }
  live.publish(idx, f);
  ASSERT_FALSE(s.is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // more attempts fail meanwhile
  {
    std::lock_guard lock(reg.mutex());
    reg.release_locked({occ});  // forgets the lookup marks
    ASSERT_EQ(reg.release_locked({occ}), std::vector<uint32_t>{occ});
  }
  const uint32_t other = reg.slot(FieldId::kGpuPower, 5);  // reuses the freed slot
  ASSERT_EQ(other, occ);
  srv.set("/dcgm", kDcgm);
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    f.clear(3000 + i);
    s = src->sample(f);
    if (s.is_ok()) break;
  }
  live.publish(idx, f);
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuPower, 5), -1);  // not the scraped occupancy
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuSmOccupancy, 0), 0.25);
}

}  // namespace
}  // namespace gpulens
