// Families of foreign exporters beyond their plain gauges and counters:
// Triton's latency summary (its p99 beside a histogram's) and
// dcgm-exporter's windowed DCGM_EXP_* families, as the mapping table binds
// them and a replay of a dcgm-exporter scrape judges them.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/engine.h"
#include "diagnose/mapping.h"
#include "diagnose/replay_input.h"

namespace gpulens::diagnose {
namespace {

Series flat(double v, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, v});
  return s;
}

// Cumulative bucket counts growing at `rate` per second.
Series ramp(double rate, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, rate * static_cast<double>(i * step) / 1000.0});
  return s;
}

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

}  // namespace
}  // namespace gpulens::diagnose
