// The serving causes over synthetic engine signals: kv_cache_pressure and
// overload each on both sides of every threshold, neither on a busy healthy
// service, kernel_launch not chosen where one of them explains the latency.
#include <gtest/gtest.h>

#include <set>

#include "diagnose/engine.h"
#include "diagnose/report.h"
#include "diagnose/rules.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 61;  // 15 s x 61 = 15 min
constexpr int64_t kStep = 15'000;
constexpr int kIncident = 20;  // the incident starts here (10 min before the end)

Series flat(double v) { return testing::flat(v, kPoints, kStep); }
Series steps(double before, double after) { return testing::steps(before, after, kIncident, kPoints, kStep); }
// Flat, then growing by `per_point` each point from the incident on.
Series growing(double before, double per_point) {
  Series s;
  for (int i = 0; i < kPoints; ++i) {
    s.push_back({i * kStep, i < kIncident ? before : before + per_point * (i - kIncident + 1)});
  }
  return s;
}

// A busy inference GPU (high occupancy: no kernel_launch of its own).
GpuSignals busy_gpu() {
  GpuSignals g;
  g.index = "0";
  g.model = "NVIDIA H100 80GB HBM3";
  g.sig(GpuSig::kGpuUtil) = flat(0.95);
  g.sig(GpuSig::kSmActive) = flat(0.8);
  g.sig(GpuSig::kSmOccupancy) = flat(0.5);
  return g;
}

// One engine on the node, healthy: a short bounded queue, flat latency.
HostSignals healthy_engine() {
  HostSignals h;
  h.name = "n1";
  h.gpus.push_back(busy_gpu());
  h.sig(HostSig::kKvCacheUsage) = flat(0.6);
  h.sig(HostSig::kPreemptionRate) = flat(0);
  h.sig(HostSig::kRequestsRunning) = flat(64);
  h.sig(HostSig::kRequestsWaiting) = flat(2);
  h.sig(HostSig::kLatencyP99) = flat(0.08);
  h.sig(HostSig::kTtftP99) = flat(0.2);
  return h;
}

// The KV cache fills: preemptions, requests wait, p99 80 -> 260 ms.
HostSignals kv_full() {
  HostSignals h = healthy_engine();
  h.sig(HostSig::kKvCacheUsage) = steps(0.6, 0.99);
  h.sig(HostSig::kPreemptionRate) = steps(0, 5);
  h.sig(HostSig::kRequestsWaiting) = steps(2, 40);
  h.sig(HostSig::kLatencyP99) = steps(0.08, 0.26);
  return h;
}

// More traffic than the engine serves: the queue grows, KV fine, batch at its cap.
HostSignals overloaded() {
  HostSignals h = healthy_engine();
  h.sig(HostSig::kRequestsWaiting) = growing(2, 3);
  h.sig(HostSig::kLatencyP99) = steps(0.08, 0.26);
  h.sig(HostSig::kTtftP99) = steps(0.2, 2.0);
  return h;
}

// The host's serving signals as its one engine, on all its GPUs (what the
// mapping builds for a node with one engine).
EngineSignals only_engine(const HostSignals& h) {
  EngineSignals e{.kind = "vllm", .endpoint = "http://n1:8000/metrics"};
  for (HostSig s : {HostSig::kLatencyP99, HostSig::kLatencyMean, HostSig::kRequestsRunning, HostSig::kRequestsWaiting,
                    HostSig::kKvCacheUsage, HostSig::kPreemptionRate, HostSig::kTtftP99,
                    HostSig::kWaitingForCapacity, HostSig::kPrefixCacheHitRatio, HostSig::kBatchMaxTokens}) {
    e.sig(s) = h.sig(s);
  }
  for (const GpuSignals& g : h.gpus) e.gpus.push_back(g.index);
  e.joined_by = "only engine";
  return e;
}

Report run(HostSignals h) {
  if (h.engines.empty()) {
    EngineSignals e = only_engine(h);
    bool any = false;
    for (const Series& s : e.sigs) any |= !s.empty();
    if (any) h.engines.push_back(std::move(e));
  }
  SignalSet set;
  set.hosts.push_back(std::move(h));
  set.from_ms = 0;
  set.to_ms = (kPoints - 1) * kStep;
  return diagnose(set, {});
}

const Finding* find(const Report& r, std::string_view cause) {
  for (const Finding& f : r.hosts.at(0).gpus.at(0).findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}
bool not_assessed(const Report& r, std::string_view cause) {
  for (const auto& n : r.hosts.at(0).gpus.at(0).not_assessed) {
    if (n.cause == cause) return true;
  }
  return false;
}

TEST(ServingRules, BusyHealthyServiceHasNeither) {
  const Report r = run(healthy_engine());
  EXPECT_EQ(find(r, "kv_cache_pressure"), nullptr) << report_text(r, false);
  EXPECT_EQ(find(r, "overload"), nullptr) << report_text(r, false);
}

TEST(ServingRules, FullKvCacheWithPreemptionsAndDegradedLatencyIsKvCachePressure) {
  const Report r = run(kv_full());
  const Finding* f = find(r, "kv_cache_pressure");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  EXPECT_EQ(f->layer, "memory");
  EXPECT_EQ(find(r, "overload"), nullptr) << "the KV cache is the limit: not a capacity problem";
  EXPECT_NE(f->action.find("max-num-seqs"), std::string::npos);
  EXPECT_EQ(r.hosts[0].gpus[0].findings.front().cause, "kv_cache_pressure") << report_text(r, false);
  // The waste summary charges the cause its GPU time: the SMs' idle share
  // (1 - 0.8) over the ~10 minutes it fired (5 min pending excluded).
  ASSERT_TRUE(r.waste_by_cause.contains("kv_cache_pressure"));
  EXPECT_GT(r.waste_by_cause.at("kv_cache_pressure"), 0.2 * 240);
  EXPECT_LT(r.waste_by_cause.at("kv_cache_pressure"), 0.2 * 900);
}

TEST(ServingRules, KvCachePressureThresholdsBothSides) {
  {  // usage just below full: not pressure
    HostSignals h = kv_full();
    h.sig(HostSig::kKvCacheUsage) = steps(0.6, kKvCacheFull - 0.01);
    EXPECT_EQ(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // at full
    HostSignals h = kv_full();
    h.sig(HostSig::kKvCacheUsage) = steps(0.6, kKvCacheFull);
    EXPECT_NE(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // full, but nothing preempted and nobody waits: the cache is well used
    HostSignals h = kv_full();
    h.sig(HostSig::kPreemptionRate) = flat(0);
    h.sig(HostSig::kRequestsWaiting) = flat(0);
    EXPECT_EQ(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // full and preempting, nobody waiting: still pressure
    HostSignals h = kv_full();
    h.sig(HostSig::kRequestsWaiting) = flat(0);
    EXPECT_NE(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // full and squeezed but latency flat: no finding
    HostSignals h = kv_full();
    h.sig(HostSig::kLatencyP99) = flat(0.08);
    EXPECT_EQ(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // latency up by less than the factor (2x): not degraded
    HostSignals h = kv_full();
    h.sig(HostSig::kLatencyP99) = steps(0.08, 0.15);
    EXPECT_EQ(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // for less than the duration (5 min): pending, no finding yet
    HostSignals h = kv_full();
    Series kv = flat(0.6);
    for (int i = kPoints - 10; i < kPoints; ++i) kv[static_cast<size_t>(i)].v = 0.99;  // the last 2.25 min
    h.sig(HostSig::kKvCacheUsage) = kv;
    const Report r = run(std::move(h));
    const Finding* f = find(r, "kv_cache_pressure");
    EXPECT_TRUE(f == nullptr || f->state != State::kFiring) << report_text(r, false);
  }
}

const Evidence* evidence(const Finding& f, std::string_view signal) {
  for (const Evidence& e : f.evidence) {
    if (e.signal == signal) return &e;
  }
  return nullptr;
}

// vLLM V1 says why requests wait: only those waiting for capacity are the
// cache's pressure; requests deferred for another reason are not.
TEST(ServingRules, KvCachePressureReadsTheRequestsWaitingForCapacity) {
  {  // full, not preempting, 40 waiting but none for capacity: not pressure
    HostSignals h = kv_full();
    h.sig(HostSig::kPreemptionRate) = flat(0);
    h.sig(HostSig::kWaitingForCapacity) = flat(0);
    EXPECT_EQ(find(run(std::move(h)), "kv_cache_pressure"), nullptr);
  }
  {  // one waiting for capacity: pressure, with that count as evidence
    HostSignals h = kv_full();
    h.sig(HostSig::kPreemptionRate) = flat(0);
    h.sig(HostSig::kWaitingForCapacity) = steps(0, 1);
    const Report r = run(std::move(h));
    const Finding* f = find(r, "kv_cache_pressure");
    ASSERT_NE(f, nullptr) << report_text(r, false);
    const Evidence* e = evidence(*f, "requests_waiting_for_capacity");
    ASSERT_NE(e, nullptr) << report_text(r, false);
    EXPECT_DOUBLE_EQ(e->value, 1);
    EXPECT_DOUBLE_EQ(e->threshold, 1);
    EXPECT_EQ(evidence(*f, "requests_waiting"), nullptr) << "the reasoned count replaces the total";
  }
  {  // an engine that does not say why: the total, as before
    const Report r = run(kv_full());
    const Finding* f = find(r, "kv_cache_pressure");
    ASSERT_NE(f, nullptr);
    EXPECT_NE(evidence(*f, "requests_waiting"), nullptr);
    EXPECT_EQ(evidence(*f, "requests_waiting_for_capacity"), nullptr);
  }
}

// A low prefix-cache hit ratio while the cache is full: the action says so.
TEST(ServingRules, ALowPrefixCacheHitRatioAddsPrefixCachingToTheAction) {
  for (const double ratio : {kPrefixCacheLow - 0.01, kPrefixCacheLow}) {
    HostSignals h = kv_full();
    h.sig(HostSig::kPrefixCacheHitRatio) = flat(ratio);
    const Report r = run(std::move(h));
    const Finding* f = find(r, "kv_cache_pressure");
    ASSERT_NE(f, nullptr) << report_text(r, false);
    const Evidence* e = evidence(*f, "prefix_cache_hit_ratio");
    ASSERT_NE(e, nullptr);
    EXPECT_NEAR(e->value, ratio, 1e-9);
    const bool low = ratio < kPrefixCacheLow;
    EXPECT_EQ(f->action.find("Its prefix cache finds 29 % of the prompt tokens it looks up") != std::string::npos, low)
        << f->action;
    EXPECT_EQ(f->action.find("--enable-prefix-caching, SGLang without --disable-radix-cache") != std::string::npos, low)
        << f->action;
  }
  const Report r = run(kv_full());  // not exposed: no evidence, no sentence
  ASSERT_NE(find(r, "kv_cache_pressure"), nullptr);
  EXPECT_EQ(evidence(*find(r, "kv_cache_pressure"), "prefix_cache_hit_ratio"), nullptr);
  EXPECT_EQ(find(r, "kv_cache_pressure")->action.find("Its prefix cache"), std::string::npos);
}

// TGI's batch tokens: the batch is at its cap when its tokens are, even
// with fewer (longer) requests running than at the peak.
TEST(ServingRules, OverloadReadsTheBatchTokensWhereTheEngineGivesThem) {
  {  // fewer requests, tokens at their peak: at the cap, overload
    HostSignals h = overloaded();
    h.sig(HostSig::kRequestsRunning) = steps(64, 40);
    h.sig(HostSig::kBatchMaxTokens) = flat(16000);
    const Report r = run(std::move(h));
    const Finding* f = find(r, "overload");
    ASSERT_NE(f, nullptr) << report_text(r, false);
    const Evidence* e = evidence(*f, "batch_max_tokens");
    ASSERT_NE(e, nullptr);
    EXPECT_DOUBLE_EQ(e->value, 16000);
    EXPECT_DOUBLE_EQ(e->threshold, kBatchAtPeak * 16000);
  }
  {  // both below their peaks: not at the cap
    HostSignals h = overloaded();
    h.sig(HostSig::kRequestsRunning) = steps(64, 40);
    h.sig(HostSig::kBatchMaxTokens) = steps(16000, 16000 * kBatchAtPeak - 100);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // tokens just at 90 % of their peak: at the cap
    HostSignals h = overloaded();
    h.sig(HostSig::kRequestsRunning) = steps(64, 40);
    h.sig(HostSig::kBatchMaxTokens) = steps(16000, 16000 * kBatchAtPeak);
    EXPECT_NE(find(run(std::move(h)), "overload"), nullptr);
  }
}

TEST(ServingRules, GrowingQueueAtTheCapWithBusyGpusIsOverload) {
  const Report r = run(overloaded());
  const Finding* f = find(r, "overload");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  EXPECT_EQ(f->layer, "capacity");
  EXPECT_NE(f->action.find("add replicas"), std::string::npos) << f->action;
  EXPECT_NE(f->action.find("requests a minute"), std::string::npos) << f->action;
  EXPECT_EQ(find(r, "kv_cache_pressure"), nullptr);
}

TEST(ServingRules, OverloadThresholdsBothSides) {
  {  // a long but steady queue: bounded, not overload
    HostSignals h = overloaded();
    h.sig(HostSig::kRequestsWaiting) = steps(2, 30);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // the KV cache full: that is the limit, not capacity
    HostSignals h = overloaded();
    h.sig(HostSig::kKvCacheUsage) = flat(kKvCacheFull);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // KV just below full: overload
    HostSignals h = overloaded();
    h.sig(HostSig::kKvCacheUsage) = flat(kKvCacheFull - 0.01);
    EXPECT_NE(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // GPU util below busy_util (0.8): not busy with work, more GPUs would not help
    HostSignals h = overloaded();
    h.gpus[0].sig(GpuSig::kGpuUtil) = flat(0.79);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // SM occupancy below sm_occupancy (0.3): not useful work
    HostSignals h = overloaded();
    h.gpus[0].sig(GpuSig::kSmOccupancy) = flat(0.29);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // the running batch fell well below its peak: not at the cap
    HostSignals h = overloaded();
    h.sig(HostSig::kRequestsRunning) = steps(64, 64 * kBatchAtPeak - 4);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // latency flat: the queue grows but users do not wait longer yet
    HostSignals h = overloaded();
    h.sig(HostSig::kLatencyP99) = flat(0.08);
    h.sig(HostSig::kTtftP99) = flat(0.2);
    EXPECT_EQ(find(run(std::move(h)), "overload"), nullptr);
  }
  {  // only time to first token degraded: still degraded
    HostSignals h = overloaded();
    h.sig(HostSig::kLatencyP99) = flat(0.08);
    EXPECT_NE(find(run(std::move(h)), "overload"), nullptr);
  }
}

TEST(ServingRules, KernelLaunchIsNotChosenWhereAnEngineCauseExplainsTheLatency) {
  HostSignals h = kv_full();
  h.gpus[0].sig(GpuSig::kSmOccupancy) = flat(0.2);  // low occupancy: kernel_launch's condition holds too
  const Report r = run(std::move(h));
  EXPECT_NE(find(r, "kv_cache_pressure"), nullptr) << report_text(r, false);
  EXPECT_EQ(find(r, "kernel_launch"), nullptr) << report_text(r, false);
  // Without the engine's KV-cache signals, the same GPU is kernel_launch.
  HostSignals plain = kv_full();
  plain.gpus[0].sig(GpuSig::kSmOccupancy) = flat(0.2);
  plain.sig(HostSig::kKvCacheUsage).clear();
  plain.sig(HostSig::kPreemptionRate).clear();
  const Report r2 = run(std::move(plain));
  EXPECT_NE(find(r2, "kernel_launch"), nullptr) << report_text(r2, false);
  EXPECT_TRUE(not_assessed(r2, "kv_cache_pressure"));
}

// Two engines on one node, each on its own GPU: each judged on its own
// series, its finding on its own GPU, the healthy one's GPU clean.
TEST(ServingRules, EachEngineIsJudgedAloneOnItsOwnGpus) {
  HostSignals h = healthy_engine();
  GpuSignals g1 = busy_gpu();
  g1.index = "1";
  h.gpus.push_back(g1);
  EngineSignals healthy = only_engine(healthy_engine());
  healthy.gpus = {"0"};
  healthy.joined_by = "pid";
  healthy.pid = "5000";
  EngineSignals full = only_engine(kv_full());
  full.endpoint = "http://n1:8001/metrics";
  full.gpus = {"1"};
  full.joined_by = "pid";
  full.pid = "5001";
  h.engines = {healthy, full};
  const Report r = run(std::move(h));
  ASSERT_EQ(r.hosts[0].gpus.size(), 2u);
  EXPECT_TRUE(r.hosts[0].gpus[0].findings.empty()) << report_text(r, false);
  ASSERT_FALSE(r.hosts[0].gpus[1].findings.empty()) << report_text(r, false);
  const Finding& f = r.hosts[0].gpus[1].findings.front();
  EXPECT_EQ(f.cause, "kv_cache_pressure");
  EXPECT_EQ(f.evidence.front().detail,
            "engine vllm at http://n1:8001/metrics pid 5001 on GPU 1 (joined by pid)");
}

TEST(ServingRules, AnUnjoinedEngineIsNotJudgedAndSaysSo) {
  HostSignals h = kv_full();
  EngineSignals a = only_engine(kv_full()), b = only_engine(healthy_engine());
  a.gpus.clear();
  a.joined_by.clear();
  b.gpus.clear();
  b.joined_by.clear();
  b.endpoint = "http://n1:8001/metrics";
  h.engines = {a, b};
  const Report r = run(std::move(h));
  EXPECT_EQ(find(r, "kv_cache_pressure"), nullptr) << report_text(r, false);
  bool said = false;
  for (const auto& n : r.hosts[0].gpus[0].not_assessed) {
    said |= n.cause == "kv_cache_pressure" &&
            n.reason.find("engine vllm at http://n1:8000/metrics is joined to no GPU") != std::string::npos;
  }
  EXPECT_TRUE(said) << report_text(r, false);
}

TEST(ServingRules, AnEngineWithValuesNoEngineCanMeanIsNotJudged) {
  HostSignals h = kv_full();
  EngineSignals e = only_engine(h);
  e.invalid = "kv_cache_usage 1.7 (above 1)";
  h.engines = {e};
  const Report r = run(std::move(h));
  EXPECT_EQ(find(r, "kv_cache_pressure"), nullptr) << report_text(r, false);
  bool said = false;
  for (const auto& n : r.hosts[0].gpus[0].not_assessed) {
    said |= n.cause == "kv_cache_pressure" && n.reason.find("said kv_cache_usage 1.7 (above 1)") != std::string::npos;
  }
  EXPECT_TRUE(said) << report_text(r, false);
}

TEST(ServingRules, OverloadSaysHowManyReplicasTheArrivalsNeed) {
  HostSignals h = overloaded();
  // The queue grows by 3 requests a point (12 a minute) while the engine
  // serves 0.1 requests a second: arrivals 0.1 + 0.2 = 0.3/s, 3 replicas.
  EngineSignals e = only_engine(h);
  e.completions = flat(0.1);
  h.engines = {e};
  const Report r = run(std::move(h));
  const Finding* f = find(r, "overload");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  EXPECT_NE(f->action.find("The measured arrivals, 0.3 requests/s against 0.1 served by this one, need 3 replicas of "
                           "it (2 more)."),
            std::string::npos)
      << f->action;
  // Serving 1 a second, the same growth needs 2.
  HostSignals h2 = overloaded();
  EngineSignals e2 = only_engine(h2);
  e2.completions = flat(1);
  h2.engines = {e2};
  const Report r2 = run(std::move(h2));
  ASSERT_NE(find(r2, "overload"), nullptr);
  EXPECT_NE(find(r2, "overload")->action.find("need 2 replicas of it (1 more)."), std::string::npos)
      << find(r2, "overload")->action;
}

// An engine whose page stopped answering: its series end there, and its
// finding no longer holds at the next point.
TEST(ServingRules, AnEngineThatStopsAnsweringStopsItsFindingsAtTheNextPoint) {
  HostSignals h = kv_full();
  EngineSignals e = only_engine(h);
  for (Series& s : e.sigs) {
    if (!s.empty()) s.pop_back();  // the last scrape failed: no point there
  }
  h.engines = {e};
  const Report r = run(std::move(h));
  const Finding* f = find(r, "kv_cache_pressure");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  EXPECT_FALSE(f->ongoing) << report_text(r, false);
  const Report full = run(kv_full());
  EXPECT_TRUE(find(full, "kv_cache_pressure")->ongoing);
}

// "Low occupancy matters only with high p99": the p99 of the engine on that
// GPU. Engine A's p99 degrades on GPU 0, engine B's stays flat on GPU 1,
// while the host's p99 (what a node-wide view sees) degrades: GPU 0 is
// kernel_launch, GPU 1 is not (small_batch), and GPU 2, with no engine, is
// judged on no other GPU's engine.
TEST(ServingRules, KernelLaunchJudgesTheP99OfTheEngineOnThatGpu) {
  HostSignals h;
  h.name = "n1";
  for (const char* index : {"0", "1", "2"}) {
    GpuSignals g = busy_gpu();
    g.index = index;
    g.sig(GpuSig::kSmOccupancy) = flat(0.2);  // low occupancy everywhere
    h.gpus.push_back(g);
  }
  h.sig(HostSig::kLatencyP99) = steps(0.08, 0.26);  // the host's: degraded
  EngineSignals a{.kind = "vllm", .endpoint = "http://n1:8000/metrics", .model = "m-a", .pid = "5000"};
  a.sig(HostSig::kLatencyP99) = steps(0.08, 0.26);
  a.gpus = {"0"};
  a.joined_by = "pid";
  EngineSignals b{.kind = "vllm", .endpoint = "http://n1:8001/metrics", .model = "m-b", .pid = "5001"};
  b.sig(HostSig::kLatencyP99) = flat(0.08);
  b.gpus = {"1"};
  b.joined_by = "pid";
  h.engines = {a, b};
  const Report r = run(h);
  auto causes = [&](const Report& rep, size_t gpu) {
    std::set<std::string> out;
    for (const Finding& f : rep.hosts.at(0).gpus.at(gpu).findings) out.insert(f.cause);
    return out;
  };
  ASSERT_EQ(r.hosts.at(0).gpus.size(), 3u);
  EXPECT_TRUE(causes(r, 0).contains("kernel_launch")) << report_text(r, false);
  EXPECT_FALSE(causes(r, 1).contains("kernel_launch")) << report_text(r, false);
  EXPECT_TRUE(causes(r, 1).contains("small_batch")) << report_text(r, false);
  EXPECT_FALSE(causes(r, 2).contains("kernel_launch")) << report_text(r, false);
  bool said = false;
  for (const auto& n : r.hosts[0].gpus[2].not_assessed) {
    said |= n.cause == "kernel_launch" && n.reason.find("no serving latency from an engine on this GPU") == 0;
  }
  EXPECT_TRUE(said) << report_text(r, false);
  // The evidence names the engine whose p99 it is.
  for (const Finding& f : r.hosts[0].gpus[0].findings) {
    if (f.cause != "kernel_launch") continue;
    bool named = false;
    for (const auto& e : f.evidence) named |= e.signal == "latency_p99" && e.detail.find("(m-a)") != std::string::npos;
    EXPECT_TRUE(named) << report_text(r, false);
  }
  // The other side: engine B degrades, engine A stays flat, the host's p99
  // flat: kernel_launch moves to GPU 1.
  h.sig(HostSig::kLatencyP99) = flat(0.08);
  h.engines[0].sig(HostSig::kLatencyP99) = flat(0.08);
  h.engines[1].sig(HostSig::kLatencyP99) = steps(0.08, 0.26);
  const Report swapped = run(h);
  EXPECT_FALSE(causes(swapped, 0).contains("kernel_launch")) << report_text(swapped, false);
  EXPECT_TRUE(causes(swapped, 1).contains("kernel_launch")) << report_text(swapped, false);
  // No engine at all (older recordings): the host's p99 judges every GPU.
  HostSignals plain = h;
  plain.engines.clear();
  plain.sig(HostSig::kLatencyP99) = steps(0.08, 0.26);
  SignalSet set;
  set.hosts.push_back(std::move(plain));
  set.from_ms = 0;
  set.to_ms = (kPoints - 1) * kStep;
  const Report host_only = diagnose(set, {});
  for (size_t g = 0; g < 3; ++g) EXPECT_TRUE(causes(host_only, g).contains("kernel_launch")) << g;
}

TEST(ServingRules, NoEngineNoWordAboutEngines) {
  HostSignals h;
  h.name = "n1";
  h.gpus.push_back(busy_gpu());
  const Report r = run(std::move(h));
  EXPECT_FALSE(not_assessed(r, "kv_cache_pressure"));
  EXPECT_FALSE(not_assessed(r, "overload"));
}

}  // namespace
}  // namespace gpulens::diagnose
