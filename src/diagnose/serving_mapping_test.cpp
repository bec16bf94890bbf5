// Serving engines' saturation signals through the mapping table: each
// engine's own names and units onto one signal, each latency histogram onto
// its own p99, SGLang's repeated tensor-parallel ranks counted once.
#include <gtest/gtest.h>

#include "diagnose/mapping.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

using testing::flat;
using testing::ramp;

HostSig host_sig(std::string_view name, std::vector<LabelPair> labels = {}) {
  const std::vector<Binding> b = map_series(name, labels);
  EXPECT_EQ(b.size(), 1u) << name;
  if (b.size() != 1) return HostSig::kCount;
  EXPECT_TRUE(b[0].kind == Binding::Kind::kHost || b[0].kind == Binding::Kind::kLatencyBucket) << name;
  return static_cast<HostSig>(b[0].sig);
}

TEST(ServingMapping, VllmV0AndV1NamesOfOneQuantityAreOneSignal) {
  EXPECT_EQ(host_sig("vllm:gpu_cache_usage_perc"), HostSig::kKvCacheUsage);
  EXPECT_EQ(host_sig("vllm:kv_cache_usage_perc"), HostSig::kKvCacheUsage);
  EXPECT_EQ(host_sig("sglang:token_usage"), HostSig::kKvCacheUsage);
  EXPECT_EQ(host_sig("vllm:time_per_output_token_seconds_bucket", {{"le", "0.1"}}), HostSig::kInterTokenP99);
  EXPECT_EQ(host_sig("vllm:inter_token_latency_seconds_bucket", {{"le", "0.1"}}), HostSig::kInterTokenP99);
  EXPECT_EQ(host_sig("sglang:time_per_output_token_seconds_bucket", {{"le", "0.1"}}), HostSig::kInterTokenP99);
  EXPECT_EQ(host_sig("vllm:time_to_first_token_seconds_bucket", {{"le", "1"}}), HostSig::kTtftP99);
  EXPECT_EQ(host_sig("vllm:request_queue_time_seconds_bucket", {{"le", "1"}}), HostSig::kQueueTimeP99);
  EXPECT_EQ(host_sig("tgi_request_queue_duration_bucket", {{"le", "1"}}), HostSig::kQueueTimeP99);
  EXPECT_EQ(host_sig("vllm:e2e_request_latency_seconds_bucket", {{"le", "1"}}), HostSig::kLatencyP99);
  EXPECT_EQ(host_sig("vllm:num_preemptions_total"), HostSig::kPreemptionRate);
  EXPECT_TRUE(map_series("vllm:num_preemptions_total", {})[0].counter);
  EXPECT_EQ(host_sig("vllm:prompt_tokens_total"), HostSig::kPromptTokensRate);
  EXPECT_EQ(host_sig("sglang:generation_tokens_total"), HostSig::kGenerationTokensRate);
  // Read by nobody: CPU swap space, a histogram without its bound.
  EXPECT_TRUE(map_series("vllm:cpu_cache_usage_perc", {}).empty());
  EXPECT_TRUE(map_series("vllm:time_to_first_token_seconds_bucket", {}).empty());
  EXPECT_TRUE(known_name("vllm:inter_token_latency_seconds_bucket"));
}

TEST(ServingMapping, SglangRanksOtherThanZeroAreNotRead) {
  const LabelPair r0[] = {{"tp_rank", "0"}, {"pp_rank", "0"}};
  const LabelPair tp1[] = {{"tp_rank", "1"}, {"pp_rank", "0"}};
  const LabelPair pp1[] = {{"tp_rank", "0"}, {"pp_rank", "1"}};
  EXPECT_EQ(map_series("sglang:num_running_reqs", r0).size(), 1u);
  EXPECT_TRUE(map_series("sglang:num_running_reqs", tp1).empty());
  EXPECT_TRUE(map_series("sglang:num_running_reqs", pp1).empty());
  // Another engine's rank-like label is its own business.
  EXPECT_EQ(map_series("vllm:num_requests_running", tp1).size(), 1u);
}

TEST(ServingMapping, EachHistogramGivesItsOwnP99AndRanksAreNotMultiplied) {
  SignalSetBuilder b;
  // A histogram whose `fast` fraction of `rate` requests per second end
  // within 0.1 s, and all within 1 s.
  auto add_hist = [&](std::string_view bucket, const std::vector<LabelPair>& labels, double fast, double rate) {
    std::vector<LabelPair> lo = labels, mid = labels, hi = labels;
    lo.emplace_back("le", "0.1");
    mid.emplace_back("le", "1");
    hi.emplace_back("le", "+Inf");
    b.add(bucket, lo, ramp(rate * fast));
    b.add(bucket, mid, ramp(rate));
    b.add(bucket, hi, ramp(rate));
  };
  const std::vector<LabelPair> gpu = {{"gpu", "0"}, {"instance", "n1:9400"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", gpu, flat(95));
  const std::vector<LabelPair> e = {{"instance", "n1:8000"}, {"model_name", "m"}};
  add_hist("vllm:e2e_request_latency_seconds_bucket", e, 0.999, 10);  // p99 within the first bucket
  add_hist("vllm:time_to_first_token_seconds_bucket", e, 0.5, 10);   // half beyond 0.1 s
  b.add("vllm:kv_cache_usage_perc", e, flat(0.999));
  b.add("vllm:num_preemptions_total", e, ramp(3));
  const std::vector<LabelPair> s0 = {{"instance", "n1:30000"}, {"tp_rank", "0"}};
  const std::vector<LabelPair> s1 = {{"instance", "n1:30000"}, {"tp_rank", "1"}};
  b.add("sglang:num_running_reqs", s0, flat(30));
  b.add("sglang:num_running_reqs", s1, flat(30));
  b.add("sglang:token_usage", s0, flat(0.5));
  b.add("sglang:token_usage", s1, flat(0.5));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  const HostSignals& h = set.hosts[0];
  ASSERT_FALSE(h.sig(HostSig::kLatencyP99).empty());
  ASSERT_FALSE(h.sig(HostSig::kTtftP99).empty());
  EXPECT_LT(h.sig(HostSig::kLatencyP99).back().v, 0.1);
  EXPECT_GT(h.sig(HostSig::kTtftP99).back().v, 0.5);  // half beyond 0.1 s: not the e2e histogram's
  ASSERT_FALSE(h.sig(HostSig::kKvCacheUsage).empty());
  EXPECT_DOUBLE_EQ(h.sig(HostSig::kKvCacheUsage).back().v, 0.999);  // the fullest engine, not 0.999 + 0.5
  ASSERT_FALSE(h.sig(HostSig::kPreemptionRate).empty());
  EXPECT_NEAR(h.sig(HostSig::kPreemptionRate).back().v, 3, 1e-9);
  ASSERT_FALSE(h.sig(HostSig::kRequestsRunning).empty());
  EXPECT_DOUBLE_EQ(h.sig(HostSig::kRequestsRunning).back().v, 30);  // rank 1 repeats rank 0: not 60
}

}  // namespace
}  // namespace gpulens::diagnose
