// Serving engines' saturation signals through the mapping table: each
// engine's own names and units onto one signal, each latency histogram onto
// its own p99, SGLang's repeated tensor-parallel ranks counted once.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

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

// Waiting by reason, the prefix cache and the batch's tokens: vLLM V1's,
// SGLang's and TGI's names (V0 has none of them), gpulens' own the same.
TEST(ServingMapping, WaitingForCapacityPrefixCacheAndBatchTokensAreSignals) {
  EXPECT_EQ(host_sig("vllm:num_requests_waiting_by_reason", {{"engine", "0"}, {"reason", "capacity"}}),
            HostSig::kWaitingForCapacity);
  EXPECT_EQ(host_sig("serving_requests_waiting_by_reason", {{"reason", "capacity"}}), HostSig::kWaitingForCapacity);
  const LabelPair deferred[] = {{"reason", "deferred"}};
  ASSERT_EQ(map_series("vllm:num_requests_waiting_by_reason", deferred).size(), 1u);
  EXPECT_EQ(map_series("vllm:num_requests_waiting_by_reason", deferred)[0].kind, Binding::Kind::kCarried);
  EXPECT_TRUE(map_series("vllm:num_requests_waiting_by_reason", {}).empty());  // no reason: nothing said
  EXPECT_TRUE(known_name("vllm:num_requests_waiting_by_reason"));
  EXPECT_EQ(host_sig("sglang:cache_hit_rate", {{"tp_rank", "0"}}), HostSig::kPrefixCacheHitRatio);
  EXPECT_TRUE(map_series("sglang:cache_hit_rate", std::vector<LabelPair>{{"tp_rank", "1"}}).empty());
  EXPECT_EQ(host_sig("serving_prefix_cache_hit_ratio"), HostSig::kPrefixCacheHitRatio);
  const auto hits = map_series("vllm:prefix_cache_hits_total", {});
  const auto queries = map_series("vllm:prefix_cache_queries_total", {});
  ASSERT_EQ(hits.size(), 1u);
  ASSERT_EQ(queries.size(), 1u);
  EXPECT_EQ(hits[0].kind, Binding::Kind::kPrefixHits);
  EXPECT_EQ(queries[0].kind, Binding::Kind::kPrefixQueries);
  EXPECT_TRUE(hits[0].counter && queries[0].counter);
  EXPECT_TRUE(map_series("vllm:prefix_cache_hits_created", {}).empty());
  EXPECT_TRUE(map_series("vllm:external_prefix_cache_hits_total", {}).empty());  // another cache (KV connector)
  EXPECT_EQ(host_sig("tgi_batch_current_max_tokens"), HostSig::kBatchMaxTokens);
  EXPECT_EQ(host_sig("serving_batch_max_tokens"), HostSig::kBatchMaxTokens);
}

// vLLM's prefix cache: the ratio of the two counters' rates, per engine,
// its data-parallel engines summed first; SGLang's own gauge as it is.
TEST(ServingMapping, ThePrefixCacheHitRatioIsTheRatioOfTheCountersRates) {
  SignalSetBuilder b;
  b.add("DCGM_FI_DEV_GPU_UTIL", std::vector<LabelPair>{{"gpu", "0"}, {"instance", "n1:9400"}}, flat(95));
  for (const char* dp : {"0", "1"}) {
    const std::vector<LabelPair> e = {{"instance", "n1:8000"}, {"engine", dp}};
    b.add("vllm:prefix_cache_queries_total", e, ramp(std::string_view(dp) == "0" ? 1000 : 3000));
    b.add("vllm:prefix_cache_hits_total", e, ramp(std::string_view(dp) == "0" ? 100 : 500));
    b.add("vllm:num_requests_waiting_by_reason",
          std::vector<LabelPair>{{"instance", "n1:8000"}, {"engine", dp}, {"reason", "capacity"}}, flat(6));
    b.add("vllm:num_requests_waiting_by_reason",
          std::vector<LabelPair>{{"instance", "n1:8000"}, {"engine", dp}, {"reason", "deferred"}}, flat(50));
  }
  const std::vector<LabelPair> s0 = {{"instance", "n1:30000"}, {"tp_rank", "0"}};
  b.add("sglang:cache_hit_rate", s0, flat(0.43));
  b.add("tgi_batch_current_max_tokens", std::vector<LabelPair>{{"instance", "n1:3001"}}, flat(16000));
  // An engine whose counters were never looked up: no ratio, not 0.
  const std::vector<LabelPair> idle = {{"instance", "n1:8002"}};
  b.add("vllm:prefix_cache_queries_total", idle, flat(500));
  b.add("vllm:prefix_cache_hits_total", idle, flat(20));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  const auto& engines = set.hosts[0].engines;
  ASSERT_EQ(engines.size(), 4u);
  auto at = [&](std::string_view endpoint) -> const EngineSignals& {
    for (const EngineSignals& e : engines) {
      if (e.endpoint == endpoint) return e;
    }
    ADD_FAILURE() << endpoint;
    return engines[0];
  };
  const EngineSignals& v = at("n1:8000");
  ASSERT_FALSE(v.sig(HostSig::kPrefixCacheHitRatio).empty());
  EXPECT_NEAR(v.sig(HostSig::kPrefixCacheHitRatio).back().v, 600.0 / 4000.0, 1e-12);  // not 0.1 + 0.167
  ASSERT_FALSE(v.sig(HostSig::kWaitingForCapacity).empty());
  EXPECT_DOUBLE_EQ(v.sig(HostSig::kWaitingForCapacity).back().v, 12);  // the deferred 100 are not for capacity
  EXPECT_TRUE(v.sig(HostSig::kBatchMaxTokens).empty());
  EXPECT_DOUBLE_EQ(at("n1:30000").sig(HostSig::kPrefixCacheHitRatio).back().v, 0.43);
  EXPECT_DOUBLE_EQ(at("n1:3001").sig(HostSig::kBatchMaxTokens).back().v, 16000);
  EXPECT_TRUE(at("n1:3001").sig(HostSig::kPrefixCacheHitRatio).empty());
  EXPECT_TRUE(at("n1:8002").sig(HostSig::kPrefixCacheHitRatio).empty());
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

// Adds a series whose labels are built strings (the builder keeps copies).
void put(SignalSetBuilder& b, std::string_view name, const std::vector<std::pair<std::string, std::string>>& owned,
         Series points) {
  std::vector<LabelPair> labels;
  for (const auto& [k, v] : owned) labels.emplace_back(k, v);
  b.add(name, labels, std::move(points));
}

// Each engine is an entity of its own: its series judged alone, joined to
// its GPUs by its pid on their process list, else by its pod, else as the
// host's only engine; two engines' KV caches never combined.
TEST(ServingMapping, EnginesAreJoinedToTheirGpusByPidThenPod) {
  SignalSetBuilder b;
  for (const char* g : {"0", "1", "2", "3"}) {
    const std::string pod = std::string(g) < "2" ? "chat-0" : "summ-0";
    put(b, "DCGM_FI_DEV_GPU_UTIL", {{"gpu", g}, {"UUID", std::string("GPU-") + g}, {"Hostname", "n1"},
                                   {"namespace", "ml"}, {"pod", pod}}, flat(95));
  }
  // gpulens' own series: engine A by pid (its process on GPUs 0 and 1),
  // engine B by pod (Prometheus' Kubernetes discovery labels).
  for (const char* g : {"0", "1"}) {
    put(b, "host_gpu_process_affinity_info", {{"pid", "5000"}, {"gpu", g}, {"cpus", "0-3"}, {"numa_nodes", "0"},
                                             {"hostname", "n1"}}, flat(1));
  }
  put(b, "serving_kv_cache_usage_ratio",
        {{"engine", "vllm"}, {"endpoint", "http://n1:8000/metrics"}, {"pid", "5000"}, {"hostname", "n1"}}, flat(0.4));
  put(b, "vllm:kv_cache_usage_perc",
        {{"engine", "0"}, {"model_name", "Qwen"}, {"instance", "10.0.0.9:8000"}, {"hostname", "n1"},
         {"namespace", "ml"}, {"pod", "summ-0"}}, flat(0.99));
  put(b, "vllm:kv_cache_usage_perc",
        {{"engine", "1"}, {"model_name", "Qwen"}, {"instance", "10.0.0.9:8000"}, {"hostname", "n1"},
         {"namespace", "ml"}, {"pod", "summ-0"}}, flat(0.97));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  const HostSignals& h = set.hosts[0];
  ASSERT_EQ(h.engines.size(), 2u);
  const EngineSignals& a = h.engines[0].endpoint == "http://n1:8000/metrics" ? h.engines[0] : h.engines[1];
  const EngineSignals& e = &a == &h.engines[0] ? h.engines[1] : h.engines[0];
  EXPECT_EQ(a.kind, "vllm");
  EXPECT_EQ(a.joined_by, "pid");
  EXPECT_EQ(a.gpus, (std::vector<std::string>{"0", "1"}));
  EXPECT_DOUBLE_EQ(a.sig(HostSig::kKvCacheUsage).back().v, 0.4);
  EXPECT_EQ(e.kind, "vllm");
  EXPECT_EQ(e.endpoint, "10.0.0.9:8000");
  EXPECT_EQ(e.model, "Qwen");
  EXPECT_EQ(e.pod, "ml/summ-0");
  EXPECT_EQ(e.joined_by, "pod");
  EXPECT_EQ(e.gpus, (std::vector<std::string>{"2", "3"}));
  // Its two data-parallel engines: the fullest, never a sum; not engine A's.
  EXPECT_DOUBLE_EQ(e.sig(HostSig::kKvCacheUsage).back().v, 0.99);
}

TEST(ServingMapping, TheOnlyEngineOwnsTheHostsGpusAndTwoUnknownOnesAreUnjoined) {
  for (int engines : {1, 2}) {
    SignalSetBuilder b;
    for (const char* g : {"0", "1"}) {
      put(b, "DCGM_FI_DEV_GPU_UTIL", {{"gpu", g}, {"UUID", std::string("GPU-") + g}, {"instance", "n1:9400"}}, flat(95));
    }
    for (int i = 0; i < engines; ++i) {
      put(b, "sglang:num_queue_reqs", {{"instance", "n1:3000" + std::to_string(i)}, {"tp_rank", "0"}}, flat(4));
      put(b, "sglang:num_queue_reqs", {{"instance", "n1:3000" + std::to_string(i)}, {"tp_rank", "1"}}, flat(4));
    }
    SignalSet set = b.build();
    ASSERT_EQ(set.hosts.size(), 1u);
    const HostSignals& h = set.hosts[0];
    ASSERT_EQ(h.engines.size(), static_cast<size_t>(engines));
    for (const EngineSignals& e : h.engines) {
      EXPECT_EQ(e.kind, "sglang");
      EXPECT_DOUBLE_EQ(e.sig(HostSig::kRequestsWaiting).back().v, 4);  // rank 1 repeats rank 0: not 8
      EXPECT_EQ(e.joined_by, engines == 1 ? "only engine" : "");
      EXPECT_EQ(e.gpus, engines == 1 ? (std::vector<std::string>{"0", "1"}) : std::vector<std::string>{});
    }
  }
}

TEST(ServingMapping, AnEngineSayingWhatNoEngineCanMeanIsMarked) {
  SignalSetBuilder b;
  put(b, "DCGM_FI_DEV_GPU_UTIL", {{"gpu", "0"}, {"UUID", "GPU-0"}, {"instance", "n1:9400"}}, flat(95));
  put(b, "vllm:kv_cache_usage_perc", {{"instance", "n1:8000"}}, flat(1.7));
  put(b, "vllm:num_requests_waiting", {{"instance", "n1:8001"}}, flat(-3));
  put(b, "vllm:num_requests_waiting", {{"instance", "n1:8002"}}, flat(3));
  put(b, "sglang:cache_hit_rate", {{"instance", "n1:8003"}}, flat(1.2));
  put(b, "vllm:prefix_cache_hits_total", {{"instance", "n1:8004"}}, flat(std::nan("")));
  put(b, "vllm:num_requests_waiting_by_reason", {{"instance", "n1:8005"}, {"reason", "capacity"}}, flat(-1));
  put(b, "tgi_batch_current_max_tokens", {{"instance", "n1:8006"}}, flat(1e13));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  ASSERT_EQ(set.hosts[0].engines.size(), 7u);
  std::map<std::string, std::string> invalid;  // by endpoint
  for (const EngineSignals& e : set.hosts[0].engines) invalid[e.endpoint] = e.invalid;
  EXPECT_EQ(invalid["n1:8000"], "kv_cache_usage 1.7 (above 1)");
  EXPECT_EQ(invalid["n1:8001"], "requests_waiting -3 (negative)");
  EXPECT_EQ(invalid["n1:8002"], "");
  EXPECT_EQ(invalid["n1:8003"], "prefix_cache_hit_ratio 1.2 (above 1)");
  EXPECT_EQ(invalid["n1:8004"], "prefix_cache_hit_ratio nan (not a number)");
  EXPECT_EQ(invalid["n1:8005"], "requests_waiting_for_capacity -1 (negative)");
  EXPECT_EQ(invalid["n1:8006"], "batch_max_tokens 1e+13 (absurd)");
}

// gpulens' own recordings: the model of each engine rides on
// serving_engine_info{engine, endpoint, model} beside its serving_* series.
TEST(ServingMapping, AnEnginesModelComesFromItsInfoSeries) {
  SignalSetBuilder b;
  put(b, "gpu_utilization_ratio", {{"gpu", "0"}, {"gpu_uuid", "GPU-0"}, {"instance", "n1:9108"}}, flat(0.95));
  for (const char* port : {"8000", "8001"}) {
    const std::string ep = std::string("http://127.0.0.1:") + port + "/metrics";
    put(b, "serving_requests_waiting", {{"engine", "vllm"}, {"endpoint", ep}, {"instance", "n1:9108"}}, flat(3));
    put(b, "serving_engine_info",
        {{"engine", "vllm"}, {"endpoint", ep}, {"model", std::string("model-") + port}, {"instance", "n1:9108"}},
        flat(1));
  }
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  ASSERT_EQ(set.hosts[0].engines.size(), 2u);
  EXPECT_EQ(set.hosts[0].engines[0].model, "model-8000");
  EXPECT_EQ(set.hosts[0].engines[1].model, "model-8001");
  EXPECT_EQ(set.hosts[0].engines[1].describe(), "vllm at http://127.0.0.1:8001/metrics (model-8001)");
}

// Prometheus' Kubernetes discovery: the engine's instance is its pod's IP,
// not the GPU's node; its pod finds the node whose GPU serves that pod.
TEST(ServingMapping, AnEngineUnderItsPodsAddressJoinsTheNodeOfItsPodsGpu) {
  SignalSetBuilder b;
  for (const char* node : {"n1", "n2"}) {
    put(b, "DCGM_FI_DEV_GPU_UTIL", {{"gpu", "0"}, {"UUID", std::string("GPU-") + node}, {"Hostname", node},
                                    {"namespace", "ml"}, {"pod", std::string("chat-") + node}}, flat(95));
  }
  put(b, "vllm:num_requests_waiting", {{"instance", "10.1.2.3:8000"}, {"namespace", "ml"}, {"pod", "chat-n2"}}, flat(7));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 2u);
  EXPECT_TRUE(set.hosts[0].engines.empty());
  ASSERT_EQ(set.hosts[1].name, "n2");
  ASSERT_EQ(set.hosts[1].engines.size(), 1u);
  EXPECT_EQ(set.hosts[1].engines[0].joined_by, "pod");
  EXPECT_EQ(set.hosts[1].engines[0].gpus, std::vector<std::string>{"0"});
  EXPECT_DOUBLE_EQ(set.hosts[1].engines[0].sig(HostSig::kRequestsWaiting).back().v, 7);
}

}  // namespace
}  // namespace gpulens::diagnose
