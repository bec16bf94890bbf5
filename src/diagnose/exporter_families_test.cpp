// Families of foreign exporters beyond their plain gauges and counters:
// Triton's latency summary (its p99 beside a histogram's) and
// dcgm-exporter's windowed DCGM_EXP_* families, as the mapping table binds
// them and a replay of a dcgm-exporter scrape judges them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "diagnose/engine.h"
#include "diagnose/live_input.h"
#include "diagnose/mapping.h"
#include "diagnose/replay_input.h"
#include "diagnose/testing/series.h"
#include "model/frame.h"
#include "store/live.h"

namespace gpulens::diagnose {
namespace {

using testing::flat;
using testing::ramp;

TEST(TritonSummary, OnlyTheP99QuantileIsASignal) {
  const LabelPair p99[] = {{"model", "m"}, {"version", "1"}, {"quantile", "0.99"}};
  const LabelPair p50[] = {{"model", "m"}, {"version", "1"}, {"quantile", "0.5"}};
  const LabelPair none[] = {{"model", "m"}, {"version", "1"}};
  const auto b = map_series("nv_inference_request_summary_us", p99);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].kind, Binding::Kind::kHost);
  EXPECT_EQ(b[0].sig, static_cast<uint8_t>(HostSig::kLatencyP99));
  EXPECT_DOUBLE_EQ(b[0].scale, 1e-6);
  EXPECT_FALSE(b[0].counter);
  EXPECT_TRUE(map_series("nv_inference_request_summary_us", p50).empty());
  EXPECT_TRUE(map_series("nv_inference_request_summary_us_sum", none).empty());
  EXPECT_TRUE(map_series("nv_inference_request_summary_us_count", none).empty());
  EXPECT_TRUE(map_series("nv_inference_queue_summary_us", p99).empty());
  EXPECT_TRUE(map_series("nv_inference_first_response_histogram_ms_bucket", {}).empty());
  // The catalog's own name for it, as the live history holds it.
  const auto own = map_series("serving_request_latency_p99_seconds", {});
  ASSERT_EQ(own.size(), 1u);
  EXPECT_EQ(own[0].sig, static_cast<uint8_t>(HostSig::kLatencyP99));
  EXPECT_DOUBLE_EQ(own[0].scale, 1.0);
}

TEST(TritonSummary, TheWorstModelsP99InSeconds) {
  SignalSetBuilder b;
  const LabelPair g[] = {{"gpu", "0"}};
  const LabelPair a[] = {{"model", "a"}, {"version", "1"}, {"quantile", "0.99"}};
  const LabelPair c[] = {{"model", "c"}, {"version", "1"}, {"quantile", "0.99"}};
  const LabelPair c50[] = {{"model", "c"}, {"version", "1"}, {"quantile", "0.5"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", g, flat(50));
  b.add("nv_inference_request_summary_us", a, flat(80'000));   // 80 ms
  b.add("nv_inference_request_summary_us", c, flat(260'000));  // 260 ms
  b.add("nv_inference_request_summary_us", c50, flat(900'000));  // not a p99: ignored
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  const Series& p99 = set.hosts[0].sig(HostSig::kLatencyP99);
  ASSERT_EQ(p99.size(), 3u);
  for (const Point& p : p99) EXPECT_NEAR(p.v, 0.26, 1e-12);
}

// Summary and histogram on one host: the larger per timestamp; a timestamp
// only one of them has keeps that one's value.
TEST(TritonSummary, BesideAHistogramTheLargerP99PerTimestamp) {
  SignalSetBuilder b;
  const LabelPair g[] = {{"gpu", "0"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", g, flat(50, 5));
  // vLLM: every request under 0.1 s: p99 = 0.099 s at t = 15, 30, 45, 60 s.
  const LabelPair le1[] = {{"model_name", "m"}, {"le", "0.1"}};
  const LabelPair inf[] = {{"model_name", "m"}, {"le", "+Inf"}};
  b.add("vllm:e2e_request_latency_seconds_bucket", le1, ramp(10, 5));
  b.add("vllm:e2e_request_latency_seconds_bucket", inf, ramp(10, 5));
  // Triton: 50 ms, then 300 ms, and one point past the histogram's.
  const LabelPair q[] = {{"model", "t"}, {"version", "1"}, {"quantile", "0.99"}};
  b.add("nv_inference_request_summary_us", q,
        Series{{15000, 50'000}, {30000, 300'000}, {45000, 50'000}, {75000, 200'000}});
  const SignalSet set = b.build();
  const Series& p99 = set.hosts[0].sig(HostSig::kLatencyP99);
  ASSERT_EQ(p99.size(), 5u);
  EXPECT_EQ(p99[0].t_ms, 15000);
  EXPECT_NEAR(p99[0].v, 0.099, 1e-9);  // histogram larger
  EXPECT_NEAR(p99[1].v, 0.3, 1e-9);    // summary larger
  EXPECT_NEAR(p99[2].v, 0.099, 1e-9);
  EXPECT_NEAR(p99[3].v, 0.099, 1e-9);  // t = 60 s: the histogram alone
  EXPECT_EQ(p99[4].t_ms, 75000);
  EXPECT_NEAR(p99[4].v, 0.2, 1e-9);    // the summary alone
}

TEST(DcgmExp, BindingsOfTheWindowedFamilies) {
  const LabelPair xid[] = {{"gpu", "0"}, {"window_size_in_ms", "300000"}, {"xid", "79"}};
  auto b = map_series("DCGM_EXP_XID_ERRORS_COUNT", xid);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].sig, static_cast<uint8_t>(GpuSig::kLastXid));
  EXPECT_EQ(b[0].transform, Binding::Transform::kEventCode);
  EXPECT_DOUBLE_EQ(b[0].code, 79);
  EXPECT_FALSE(b[0].counter);  // a count in a window, not a counter: no rate
  const LabelPair quiet[] = {{"gpu", "0"}, {"window_size_in_ms", "300000"}};
  ASSERT_EQ(map_series("DCGM_EXP_XID_ERRORS_COUNT", quiet).size(), 1u);
  EXPECT_DOUBLE_EQ(map_series("DCGM_EXP_XID_ERRORS_COUNT", quiet)[0].code, 0);
  b = map_series("DCGM_EXP_GPU_HEALTH_STATUS", {});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].sig, static_cast<uint8_t>(GpuSig::kHealthStatus));
  // Carried, not judged.
  for (const char* n : {"DCGM_EXP_CLOCK_EVENTS_COUNT", "DCGM_EXP_P2P_STATUS", "gpu_clock_events_recent",
                        "gpu_p2p_status"}) {
    b = map_series(n, {});
    ASSERT_EQ(b.size(), 1u) << n;
    EXPECT_EQ(b[0].kind, Binding::Kind::kCarried) << n;
  }
}

// The live history holds the catalog's names and labels.
TEST(DcgmExp, TheLiveHistorysNamesGiveTheSameSignals) {
  SignalSetBuilder b;
  const LabelPair g[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}};
  const LabelPair x[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"xid", "31"}};
  const LabelPair ok[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"watch", "MEM"}, {"error", "DCGM_FR_OK"}};
  const LabelPair bad[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"watch", "PCIE"}, {"error", "DCGM_FR_PCI_REPLAY_RATE"}};
  const LabelPair ce[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"reason", "sw_power_cap"}};
  b.add("gpu_utilization_ratio", g, flat(0.9), true);
  b.add("gpu_xid_errors_recent", x, Series{{0, 0}, {15000, 2}, {30000, 0}}, true);
  b.add("gpu_health_status", ok, flat(0), true);
  b.add("gpu_health_status", bad, Series{{0, 0}, {15000, 0}, {30000, 20}}, true);
  b.add("gpu_clock_events_recent", ce, flat(12), true);
  EXPECT_EQ(b.known_series(), 5u);
  const SignalSet set = b.build();
  const GpuSignals& gpu = set.hosts[0].gpus[0];
  const Series& last = gpu.sig(GpuSig::kLastXid);
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[0].v, 0);
  EXPECT_EQ(last[1].v, 31);
  EXPECT_EQ(last[2].v, 0);
  const Series& health = gpu.sig(GpuSig::kHealthStatus);  // worst watch
  ASSERT_EQ(health.size(), 3u);
  EXPECT_EQ(health[1].v, 0);
  EXPECT_EQ(health[2].v, 20);
  ASSERT_EQ(gpu.health_watches.size(), 2u);
  EXPECT_TRUE(gpu.health_watches.contains("PCIE (DCGM_FR_PCI_REPLAY_RATE)"));
  EXPECT_TRUE(gpu.health_watches.contains("MEM (DCGM_FR_OK)"));
  // Clock-event counts feed no signal: the throttle reasons stay absent.
  EXPECT_TRUE(gpu.sig(GpuSig::kPowerThrottle).empty());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const Finding* finding(const GpuReport& g, std::string_view cause) {
  for (const Finding& f : g.findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}

// `diagnose --replay` of a dcgm-exporter scrape with the DCGM_EXP_* rows on
// (tests/data/dcgm-exporter/dcgm-exp.prom): an XID counted in the window and
// a health watch at FAIL are hardware findings; WARN, clock events and P2P
// status are not judged.
TEST(DcgmExp, ReplayOfAScrapeJudgesWindowedXidsAndFailedHealthWatches) {
  constexpr int64_t kAt = 1'764'410'400'000;
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(
      slurp(std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/dcgm-exp.prom"), "dcgm-exp.prom", info,
      {}, kAt);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(info.unknown_series, 0u);
  const Report r = diagnose(*set, Thresholds{});
  ASSERT_EQ(r.hosts.size(), 1u);
  ASSERT_EQ(r.hosts[0].gpus.size(), 2u);
  // GPU 0: XID 31 twice in the window (an application's page fault): a warning.
  const GpuReport& g0 = r.hosts[0].gpus[0];
  ASSERT_EQ(g0.findings.size(), 1u);
  const Finding* hw0 = finding(g0, "hardware_errors");
  ASSERT_NE(hw0, nullptr);
  EXPECT_EQ(hw0->severity, Severity::kWarning);
  EXPECT_EQ(hw0->state, State::kFiring);
  EXPECT_NE(hw0->action.find("Hardware fault (XID 31)."), std::string::npos) << hw0->action;
  // GPU 1: the PCIE watch failed: critical, naming the watch and its code;
  // the THERMAL watch at WARN is not named.
  const GpuReport& g1 = r.hosts[0].gpus[1];
  ASSERT_EQ(g1.findings.size(), 1u);
  const Finding* hw1 = finding(g1, "hardware_errors");
  ASSERT_NE(hw1, nullptr);
  EXPECT_EQ(hw1->severity, Severity::kCritical);
  EXPECT_NE(hw1->action.find("DCGM health watch failed: PCIE (DCGM_FR_PCI_REPLAY_RATE)"), std::string::npos)
      << hw1->action;
  EXPECT_EQ(hw1->action.find("THERMAL"), std::string::npos) << hw1->action;
  bool named = false;
  for (const Evidence& e : hw1->evidence) {
    if (e.signal != "health_status") continue;
    EXPECT_EQ(e.value, 20);
    EXPECT_EQ(e.threshold, 20);
    EXPECT_EQ(e.detail, "PCIE (DCGM_FR_PCI_REPLAY_RATE)");
    named = true;
  }
  EXPECT_TRUE(named);
}

// A Triton page beside a dcgm-exporter page, replayed: the summary's p99
// is the host's p99 signal (the worst model, in seconds).
TEST(TritonSummary, ReplayOfATritonScrapeHasTheP99) {
  const std::string text =
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"n1\"} 90\n"
      "# TYPE nv_inference_request_summary_us summary\n"
      "nv_inference_request_summary_us_count{model=\"a\",version=\"1\"} 10\n"
      "nv_inference_request_summary_us_sum{model=\"a\",version=\"1\"} 900000\n"
      "nv_inference_request_summary_us{model=\"a\",version=\"1\",quantile=\"0.5\"} 50000\n"
      "nv_inference_request_summary_us{model=\"a\",version=\"1\",quantile=\"0.99\"} 120000\n"
      "nv_inference_request_summary_us{model=\"b\",version=\"1\",quantile=\"0.99\"} 310000\n";
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(text, "triton.prom", info, {}, 1'764'410'400'000);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->hosts.size(), 1u);  // one GPU host and one other: the same node
  const Series& p99 = set->hosts[0].sig(HostSig::kLatencyP99);
  ASSERT_EQ(p99.size(), 1u);
  EXPECT_NEAR(p99[0].v, 0.31, 1e-12);
  EXPECT_TRUE(set->hosts[0].sig(HostSig::kLatencyMean).empty());  // _sum/_count are not the mean's
}

// The agent's history after a scrape: the catalog's names carry the p99, a
// failed health watch and a windowed XID into the live diagnosis.
TEST(DcgmExp, TheLiveDiagnosisJudgesTheScrapedFields) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-live", .name = "NVIDIA A100-SXM4-80GB"});
  reg.set_gpu(1, {.uuid = "GPU-two", .name = "NVIDIA A100-SXM4-80GB"});
  LiveStore live;
  const int src = live.add_source("scrape", false, true);
  Frame frame{reg};
  History history(200);
  const int64_t t0 = 1'764'410'400'000;
  for (int i = 0; i < 20; ++i) {
    const int64_t t = t0 + i * 15'000;
    frame.clear(t);
    for (int g = 0; g < 2; ++g) frame.set(FieldId::kGpuUtilization, g, 0.9);
    frame.set(FieldId::kGpuHealthStatus, 0, Labels{{"watch", "MEM"}, {"error", "DCGM_FR_OK"}}, 0);
    frame.set(FieldId::kGpuHealthStatus, 0, Labels{{"watch", "PCIE"}, {"error", "DCGM_FR_PCI_REPLAY_RATE"}}, i >= 10 ? 20 : 0);
    frame.set(FieldId::kGpuXidErrorsRecent, 1, Labels{{"xid", "31"}}, i >= 15 ? 1 : 0);
    frame.set_node(FieldId::kServingLatencyP99, 0.26);
    live.publish(src, frame);
    history.record(reg, live, t);
  }
  const int64_t now = t0 + 19 * 15'000;
  const SignalSet set = signals_from_history(reg, history, now - 600'000, now);
  ASSERT_EQ(set.hosts.size(), 1u);
  ASSERT_FALSE(set.hosts[0].sig(HostSig::kLatencyP99).empty());
  EXPECT_NEAR(set.hosts[0].sig(HostSig::kLatencyP99).back().v, 0.26, 1e-6);
  const Report r = diagnose_live(reg, history, now, Thresholds{}, 600'000);
  ASSERT_EQ(r.hosts.at(0).gpus.size(), 2u);
  const Finding* hw0 = finding(r.hosts[0].gpus[0], "hardware_errors");
  ASSERT_NE(hw0, nullptr);
  EXPECT_EQ(hw0->severity, Severity::kCritical);
  EXPECT_EQ(hw0->since_ms, t0 + 10 * 15'000);
  EXPECT_NE(hw0->action.find("DCGM health watch failed: PCIE (DCGM_FR_PCI_REPLAY_RATE)"), std::string::npos)
      << hw0->action;
  const Finding* hw1 = finding(r.hosts[0].gpus[1], "hardware_errors");
  ASSERT_NE(hw1, nullptr);
  EXPECT_EQ(hw1->severity, Severity::kWarning);
  EXPECT_EQ(hw1->since_ms, t0 + 15 * 15'000);
  EXPECT_NE(hw1->action.find("XID 31"), std::string::npos) << hw1->action;
}

}  // namespace
}  // namespace gpulens::diagnose
