// Serving engines scraped as engines: each engine's own names and units
// onto the catalog's serving fields, every series labelled with the engine
// and its endpoint, so that two engines on one node are two, never one lost
// or summed; SGLang's repeated tensor-parallel ranks counted once. The pages
// are stand-ins in the engines' real shapes (tests/data/serving).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include "sources/scrape/catalog_targets.h"
#include "model/testing/label_text.h"
#include "sources/scrape/scrape_source.h"
#include "sources/scrape/testing/page_server.h"
#include "store/live.h"

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
using scrape::Combine;
using testing::PageServer;

std::vector<CatalogTarget> targets(std::string_view name,
                                   std::vector<std::pair<std::string_view, std::string_view>> labels = {}) {
  return catalog_targets(name, labels);
}

std::string page(const std::string& file) {
  std::ifstream in(std::string(GPULENS_SOURCE_DIR) + "/tests/data/serving/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ServingTargets, EachEnginesNamesLandOnOneFieldWithTheEngine) {
  const std::vector<std::pair<std::string_view, std::string_view>> v1 = {{"engine", "0"}, {"model_name", "m"}};
  EXPECT_EQ(targets("vllm:kv_cache_usage_perc", v1),
            (std::vector<CatalogTarget>{{FieldId::kServingKvCacheUsage, 1, Labels{{"engine", "vllm"}}, Combine::kMax}}));
  EXPECT_EQ(targets("vllm:gpu_cache_usage_perc", {{"model_name", "m"}}), targets("vllm:kv_cache_usage_perc", v1));
  EXPECT_EQ(targets("sglang:token_usage", {{"tp_rank", "0"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingKvCacheUsage, 1, Labels{{"engine", "sglang"}}, Combine::kMax}}));
  EXPECT_EQ(targets("vllm:num_preemptions_total", v1),
            (std::vector<CatalogTarget>{{FieldId::kServingPreemptions, 1, Labels{{"engine", "vllm"}}}}));
  EXPECT_EQ(targets("vllm:prompt_tokens_total", v1),
            (std::vector<CatalogTarget>{{FieldId::kServingPromptTokens, 1, Labels{{"engine", "vllm"}}}}));
  EXPECT_EQ(targets("sglang:generation_tokens_total"),
            (std::vector<CatalogTarget>{{FieldId::kServingGenerationTokens, 1, Labels{{"engine", "sglang"}}}}));
  // V0's time_per_output_token and V1's inter_token_latency: one histogram.
  EXPECT_EQ(targets("vllm:time_per_output_token_seconds_bucket", {{"le", "0.05"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingInterTokenLatency, 1, Labels{{"engine", "vllm"}, {"le", "0.05"}}}}));
  EXPECT_EQ(targets("vllm:inter_token_latency_seconds_bucket", {{"le", "0.05"}}),
            targets("vllm:time_per_output_token_seconds_bucket", {{"le", "0.05"}}));
  EXPECT_EQ(targets("vllm:time_to_first_token_seconds_sum", v1),
            (std::vector<CatalogTarget>{histogram_target(FieldId::kServingTimeToFirstToken, HistogramPart::kSum, Labels{{"engine", "vllm"}})}));
  EXPECT_EQ(targets("tgi_request_queue_duration_count"),
            (std::vector<CatalogTarget>{histogram_target(FieldId::kServingQueueTime, HistogramPart::kCount, Labels{{"engine", "tgi"}})}));
  // _created gauges and families nobody judges stay out.
  EXPECT_TRUE(targets("vllm:time_to_first_token_seconds_created", v1).empty());
  EXPECT_TRUE(targets("vllm:cpu_cache_usage_perc", v1).empty());
  EXPECT_TRUE(targets("sglang:num_running_reqs", {{"tp_rank", "1"}}).empty());
  // Another gpulens: its engine and endpoint labels are kept as written.
  EXPECT_EQ(targets("serving_kv_cache_usage_ratio", {{"engine", "vllm"}, {"endpoint", "http://a:8000/metrics"}}),
            (std::vector<CatalogTarget>{
                {FieldId::kServingKvCacheUsage, 1, Labels{{"engine", "vllm"}, {"endpoint", "http://a:8000/metrics"}}, Combine::kMax}}));
}

// Waiting by reason (the reason kept), the prefix cache (SGLang's ratio;
// vLLM's two counters, parts of the ratio, not values) and TGI's batch
// tokens. vLLM V0 writes none of them.
TEST(ServingTargets, WaitingByReasonPrefixCacheAndBatchTokens) {
  const std::vector<std::pair<std::string_view, std::string_view>> cap = {
      {"engine", "0"}, {"model_name", "m"}, {"reason", "capacity"}};
  EXPECT_EQ(targets("vllm:num_requests_waiting_by_reason", cap),
            (std::vector<CatalogTarget>{
                {FieldId::kServingRequestsWaitingByReason, 1, Labels{{"engine", "vllm"}, {"reason", "capacity"}}}}));
  EXPECT_EQ(targets("vllm:num_requests_waiting_by_reason", {{"engine", "0"}, {"reason", "deferred"}}),
            (std::vector<CatalogTarget>{
                {FieldId::kServingRequestsWaitingByReason, 1, Labels{{"engine", "vllm"}, {"reason", "deferred"}}}}));
  EXPECT_TRUE(targets("vllm:num_requests_waiting_by_reason", {{"engine", "0"}}).empty());
  EXPECT_EQ(targets("serving_requests_waiting_by_reason",
                    {{"engine", "vllm"}, {"endpoint", "http://a:8000/metrics"}, {"reason", "capacity"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsWaitingByReason, 1,
                                         testing::labels_from_text("engine=\"vllm\",endpoint=\"http://a:8000/metrics\",reason=\"capacity\"")}}));
  EXPECT_EQ(targets("sglang:cache_hit_rate", {{"tp_rank", "0"}, {"model_name", "m"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingPrefixCacheHitRatio, 1, Labels{{"engine", "sglang"}}, Combine::kMax}}));
  EXPECT_TRUE(targets("sglang:cache_hit_rate", {{"tp_rank", "1"}}).empty());
  CatalogTarget hits{FieldId::kServingPrefixCacheHitRatio, 1, Labels{{"engine", "vllm"}}};
  hits.part = CatalogTarget::Part::kNumerator;
  CatalogTarget queries = hits;
  queries.part = CatalogTarget::Part::kDenominator;
  const std::vector<std::pair<std::string_view, std::string_view>> v1 = {{"engine", "0"}, {"model_name", "m"}};
  EXPECT_EQ(targets("vllm:prefix_cache_hits_total", v1), std::vector<CatalogTarget>{hits});
  EXPECT_EQ(targets("vllm:prefix_cache_queries_total", v1), std::vector<CatalogTarget>{queries});
  EXPECT_TRUE(targets("vllm:prefix_cache_hits_created", v1).empty());
  EXPECT_EQ(targets("tgi_batch_current_max_tokens"),
            (std::vector<CatalogTarget>{{FieldId::kServingBatchMaxTokens, 1, Labels{{"engine", "tgi"}}}}));
  EXPECT_EQ(targets("tgi_batch_current_size"),
            (std::vector<CatalogTarget>{{FieldId::kServingRequestsRunning, 1, Labels{{"engine", "tgi"}}}}));
  // The ratio of the counters' increases between two pages.
  EXPECT_DOUBLE_EQ(*scrape::ratio_of_increases({10, 100}, {40, 200}), 0.3);
  EXPECT_DOUBLE_EQ(*scrape::ratio_of_increases({10, 100}, {10, 200}), 0);
  EXPECT_FALSE(scrape::ratio_of_increases({10, 100}, {10, 100}).has_value()) << "nothing looked up";
  EXPECT_FALSE(scrape::ratio_of_increases({10, 100}, {5, 50}).has_value()) << "a restart";
  EXPECT_FALSE(scrape::ratio_of_increases({10, 100}, {200, 150}).has_value()) << "more found than looked up";
}

TEST(ServingTargets, TheEndpointFollowsTheEngineLabel) {
  EXPECT_EQ(scrape::with_endpoint(Labels{{"engine", "vllm"}}, "http://a:1/m").render(),
            "endpoint=\"http://a:1/m\",engine=\"vllm\"");
  EXPECT_EQ(scrape::with_endpoint(Labels{{"engine", "vllm"}, {"le", "0.1"}}, "x").render(),
            "endpoint=\"x\",engine=\"vllm\",le=\"0.1\"");
  // No engine (a node-wide series), or an endpoint already: unchanged.
  EXPECT_EQ(scrape::with_endpoint(Labels{{"le", "0.1"}}, "x"), Labels({{"le", "0.1"}}));
  EXPECT_EQ(scrape::with_endpoint(Labels{{"engine", "vllm"}, {"endpoint", "a"}}, "x"),
            Labels({{"engine", "vllm"}, {"endpoint", "a"}}));
}

double value_of(SeriesRegistry& reg, LiveStore& live, FieldId f, std::string_view text) {
  const testing::TextKey k = testing::key_from_text(text);
  const uint32_t s = reg.slot(f, kNodeEntity, k.labels, k.part);
  std::lock_guard lock(live.mutex());
  return live.present(s) ? live.value(s) : -1;
}

// Four engines on one node, two of them vLLM: each its own series.
TEST(ServingScrape, EveryEngineOnTheNodeIsKeptApartAndRanksAreNotMultiplied) {
  PageServer srv({{"/v1", page("vllm-v1.prom")},
                  {"/v0", page("vllm-v0.prom")},
                  {"/sglang", page("sglang-tp2.prom")},
                  {"/tgi", page("tgi.prom")}});
  SeriesRegistry reg;
  LiveStore live;
  SourceOptions o;
  o.scrape.targets = {srv.url("/v1"), srv.url("/v0"), srv.url("/sglang"), srv.url("/tgi")};
  o.scrape.interval_ms = 100;
  o.scrape.timeout_ms = 300;
  o.scrape.max_bytes = 64 << 10;
  auto src = make_scrape_source(o);
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  const Status s = src->sample(f);
  ASSERT_TRUE(s.is_ok()) << s.message();
  live.publish(idx, f);
  auto engine = [&](std::string_view kind, const std::string& path) {
    return "engine=\"" + std::string(kind) + "\",endpoint=\"" + srv.url(path) + "\"";
  };
  const std::string v1 = engine("vllm", "/v1"), v0 = engine("vllm", "/v0");
  const std::string sg = engine("sglang", "/sglang"), tgi = engine("tgi", "/tgi");
  // Two vLLM engines: neither lost, neither added to the other.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, v1), 48);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, v0), 12);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaiting, v1), 117);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingKvCacheUsage, v1), 0.999);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingKvCacheUsage, v0), 0.41);  // V0's gpu_cache_usage_perc
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPreemptions, v1), 53366);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingTimeToFirstToken, v1 + ",le=\"7680.0\""), 200);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingTimeToFirstToken, "count," + v1), 200);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingInterTokenLatency, "sum," + v1), 41);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingInterTokenLatency, v0 + ",le=\"0.05\""), 390);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingQueueTime, v1 + ",le=\"0.3\""), 20);
  // SGLang, two tensor-parallel ranks saying the same: once.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, sg), 30);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaiting, sg), 5);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingKvCacheUsage, sg), 0.62);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingGenerationTokens, sg), 777);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingTimeToFirstToken, "count," + sg), 10);
  // TGI: its queue and batch.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaiting, tgi), 14);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, tgi), 32);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingBatchMaxTokens, tgi), 16000);
  // vLLM V1's queue by reason; SGLang's prefix-cache ratio (rank 0's).
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaitingByReason, v1 + ",reason=\"capacity\""), 110);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaitingByReason, v1 + ",reason=\"deferred\""), 7);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, sg), 0.43);
  // Not said, absent: V0's queue by reason and prefix cache, TGI's prefix
  // cache, and V1's ratio from one page (it needs two).
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaitingByReason, v0 + ",reason=\"capacity\""), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v0), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, tgi), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v1), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingQueueTime, tgi + ",le=\"2\""), 90);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingLatency, "sum," + tgi), 320);
  // Nothing node-wide without an engine.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, ""), -1);
  // Each engine's model, from its own model_name label (TGI names none).
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingEngineInfo, v1 + ",model=\"meta-llama/Llama-3.1-8B-Instruct\""), 1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingEngineInfo, v0 + ",model=\"mistralai/Mistral-7B-v0.1\""), 1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingEngineInfo, sg + ",model=\"Qwen/Qwen2.5-72B-Instruct\""),
                   1);
  std::lock_guard lock(reg.mutex());
  size_t tgi_infos = 0;
  for (uint32_t slot : reg.slots_of(FieldId::kServingEngineInfo)) {
    if (reg.series(slot).extra.get("engine") == "tgi") ++tgi_infos;
  }
  EXPECT_EQ(tgi_infos, 0u);
}

// vLLM's prefix cache over two scrapes: the hits' increase over the
// queries' (300 of 1,000 tokens), its data-parallel engines summed first.
TEST(ServingScrape, ThePrefixCacheHitRatioIsTheCountersIncreaseBetweenScrapes) {
  auto v1_page = [](double hits0, double queries0, double hits1, double queries1) {
    std::string p;
    for (int dp = 0; dp < 2; ++dp) {
      const std::string l = "{engine=\"" + std::to_string(dp) + "\",model_name=\"m\"}";
      p += "vllm:prefix_cache_hits_total" + l + " " + std::to_string(dp ? hits1 : hits0) + "\n";
      p += "vllm:prefix_cache_queries_total" + l + " " + std::to_string(dp ? queries1 : queries0) + "\n";
      p += "vllm:prefix_cache_hits_created" + l + " 1.7461e+09\n";
    }
    p += "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 3";  // no final newline, as vLLM
    return p;
  };
  PageServer srv({{"/v1", v1_page(1000, 8000, 500, 2000)}});
  SeriesRegistry reg;
  LiveStore live;
  SourceOptions o;
  o.scrape.targets = {srv.url("/v1")};
  o.scrape.interval_ms = 50;
  o.scrape.timeout_ms = 300;
  o.scrape.max_bytes = 64 << 10;
  auto src = make_scrape_source(o);
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  const std::string v1 = "engine=\"vllm\",endpoint=\"" + srv.url("/v1") + "\"";
  auto scrape_until = [&](auto done) {
    for (int i = 0; i < 100; ++i) {
      Frame f(reg);
      f.clear(1000 + i);
      (void)src->sample(f);  // not ok while the page is refused (the last step)
      live.publish(idx, f);
      if (done()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  scrape_until([&] { return value_of(reg, live, FieldId::kServingRequestsWaiting, v1) == 3; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v1), -1) << "one page: no increase yet";
  // Hits +100 and +200, queries +400 and +600: 300 / 1,000.
  srv.set("/v1", v1_page(1100, 8400, 700, 2600));
  scrape_until([&] { return value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v1) >= 0; });
  EXPECT_NEAR(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v1), 0.3, 1e-12);
  // Nothing looked up since: absent, not 0 and not the last ratio.
  scrape_until([&] { return value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v1) < 0; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingPrefixCacheHitRatio, v1), -1);
  // A counter below zero refuses the page, as any value no engine can mean.
  srv.set("/v1", v1_page(-5, 8400, 700, 2600));
  scrape_until([&] { return value_of(reg, live, FieldId::kServingRequestsWaiting, v1) < 0; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceDownReason,
                            "source=\"scrape\",target=\"" + srv.url("/v1") + "\",reason=\"bad_values\""),
                   1);
}

TEST(ServingTargets, AnEnginesModelIsItsInfoSeries) {
  const std::vector<std::pair<std::string_view, std::string_view>> v1 = {{"engine", "0"}, {"model_name", "m"}};
  auto info = scrape::engine_info("vllm:num_requests_waiting", v1);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->field, FieldId::kServingEngineInfo);
  EXPECT_EQ(info->extra.render(), "engine=\"vllm\",model=\"m\"");
  EXPECT_TRUE(info->one);
  const std::vector<std::pair<std::string_view, std::string_view>> bucket = {{"le", "0.1"}, {"model_name", "m"}},
                                                                     own = {{"engine", "vllm"}, {"model", "m"}};
  EXPECT_EQ(scrape::engine_info("vllm:e2e_request_latency_seconds_bucket", bucket)->extra.render(),
            "engine=\"vllm\",model=\"m\"");  // no le on the info
  EXPECT_FALSE(scrape::engine_info("tgi_queue_size", {}).has_value());  // no model named
  EXPECT_FALSE(scrape::engine_info("serving_requests_waiting", own).has_value());
  // Another gpulens' serving_engine_info keeps its engine, endpoint and model.
  const auto t = targets("serving_engine_info", {{"engine", "vllm"}, {"endpoint", "http://a:8000/metrics"}, {"model", "m"}});
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].field, FieldId::kServingEngineInfo);
  EXPECT_EQ(t[0].extra.render(), "endpoint=\"http://a:8000/metrics\",engine=\"vllm\",model=\"m\"");
  EXPECT_TRUE(t[0].one);
  // The page function: the info carries endpoint and pid as the engine's series do.
  auto values = scrape::map_page("vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7\n", "http://h:1/metrics", "42");
  ASSERT_TRUE(values.ok()) << values.status().message();
  bool found = false;
  for (const auto& v : *values) {
    found |= v.field == FieldId::kServingEngineInfo &&
             v.extra == Labels{{"engine", "vllm"}, {"endpoint", "http://h:1/metrics"}, {"pid", "42"}, {"model", "m"}} &&
             v.value == 1;
  }
  EXPECT_TRUE(found);
}

// The one page-reading function the simulator's engines go through: the
// same names, labels and combining as a scrape.
TEST(ServingPage, APageMapsAsAScrapeDoesWithEndpointAndPid) {
  auto values = scrape::map_page(page("vllm-v1.prom"), "http://127.0.0.1:8000/metrics", "5000");
  ASSERT_TRUE(values.ok()) << values.status().message();
  auto find = [&](FieldId f, const std::string& extra) {
    for (const auto& v : *values) {
      const testing::TextKey k = testing::key_from_text(extra);
      if (v.field == f && v.part == k.part && v.extra == k.labels) return v.value;
    }
    return -1.0;
  };
  const std::string l = "engine=\"vllm\",endpoint=\"http://127.0.0.1:8000/metrics\",pid=\"5000\"";
  EXPECT_DOUBLE_EQ(find(FieldId::kServingKvCacheUsage, l), 0.999);
  EXPECT_DOUBLE_EQ(find(FieldId::kServingRequestsWaiting, l), 117);
  EXPECT_DOUBLE_EQ(find(FieldId::kServingPreemptions, l), 53366);
  EXPECT_DOUBLE_EQ(find(FieldId::kServingTimeToFirstToken, l + ",le=\"7680.0\""), 200);
  EXPECT_DOUBLE_EQ(find(FieldId::kServingTimeToFirstToken, "count," + l), 200);
  EXPECT_DOUBLE_EQ(find(FieldId::kServingRequestsWaitingByReason, l + ",reason=\"capacity\""), 110);
  EXPECT_DOUBLE_EQ(find(FieldId::kServingPrefixCacheHitRatio, l), -1) << "one page holds no increase";
}

TEST(ServingPage, ValuesNoEngineCanMeanRefuseThePage) {
  EXPECT_EQ(scrape::check_serving_value(FieldId::kServingKvCacheUsage, 0.999), "");
  EXPECT_EQ(scrape::check_serving_value(FieldId::kServingKvCacheUsage, 1.7),
            "serving_kv_cache_usage_ratio is 1.7, above 1 (a ratio)");
  EXPECT_EQ(scrape::check_serving_value(FieldId::kServingRequestsWaiting, -3), "serving_requests_waiting is -3, negative");
  EXPECT_NE(scrape::check_serving_value(FieldId::kServingRequestsWaiting, std::nan("")), "");
  EXPECT_NE(scrape::check_serving_value(FieldId::kServingPreemptions, 1e13), "");
  EXPECT_EQ(scrape::check_serving_value(FieldId::kGpuUtilization, -1), "") << "not a serving field";
  EXPECT_EQ(scrape::check_serving_value(FieldId::kServingPrefixCacheHitRatio, 1.2),
            "serving_prefix_cache_hit_ratio is 1.2, above 1 (a ratio)");
  EXPECT_EQ(scrape::check_serving_value(FieldId::kServingPrefixCacheHitRatio, 8.5e6, CatalogTarget::Part::kDenominator),
            "") << "a counter of the ratio is a count";
  EXPECT_EQ(scrape::check_serving_value(FieldId::kServingPrefixCacheHitRatio, -5, CatalogTarget::Part::kNumerator),
            "serving_prefix_cache_hit_ratio's hits counter is -5, negative");
  EXPECT_NE(scrape::check_serving_value(FieldId::kServingBatchMaxTokens, std::nan("")), "");
  auto nan = scrape::map_page("vllm:prefix_cache_queries_total{engine=\"0\"} NaN\n", "http://h:8000/metrics");
  ASSERT_FALSE(nan.ok());
  EXPECT_EQ(nan.status().message(),
            "http://h:8000/metrics: serving_prefix_cache_hit_ratio's queries counter is nan, not a number an engine can mean");
  auto bad = scrape::map_page("vllm:kv_cache_usage_perc{engine=\"0\"} 1.7\n", "http://h:8000/metrics");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "http://h:8000/metrics: serving_kv_cache_usage_ratio is 1.7, above 1 (a ratio)");
}

// A page with a value no engine can mean: its target is down with the
// reason, its engine's series absent; the good engine beside it is read.
TEST(ServingScrape, APageWithAnAbsurdValueIsDownAndItsEngineAbsent) {
  PageServer srv({{"/good", page("vllm-v1.prom")},
                  {"/nan", "vllm:num_requests_waiting{engine=\"0\"} NaN\nvllm:num_requests_running{engine=\"0\"} 3\n"},
                  {"/neg", "vllm:num_requests_waiting{engine=\"0\"} -4\n"}});
  SeriesRegistry reg;
  LiveStore live;
  SourceOptions o;
  o.scrape.targets = {srv.url("/good"), srv.url("/nan"), srv.url("/neg")};
  o.scrape.interval_ms = 100;
  o.scrape.timeout_ms = 300;
  o.scrape.max_bytes = 64 << 10;
  auto src = make_scrape_source(o);
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  const Status s = src->sample(f);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(srv.url("/nan") + ": serving_requests_waiting is nan"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(srv.url("/neg") + ": serving_requests_waiting is -4, negative: the engine's page is not read"),
            std::string::npos)
      << s.message();
  live.publish(idx, f);
  auto engine = [&](const std::string& path) { return "engine=\"vllm\",endpoint=\"" + srv.url(path) + "\""; };
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaiting, engine("/good")), 117);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsRunning, engine("/nan")), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kServingRequestsWaiting, engine("/neg")), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceUp, "source=\"scrape\",target=\"" + srv.url("/neg") + "\""), 0);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceUp, "source=\"scrape\",target=\"" + srv.url("/good") + "\""), 1);
  // gpulens_source_down_reason says why: bad values, not a parse error.
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceDownReason,
                            "source=\"scrape\",target=\"" + srv.url("/neg") + "\",reason=\"bad_values\""),
                   1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kAgentSourceDownReason,
                            "source=\"scrape\",target=\"" + srv.url("/nan") + "\",reason=\"bad_values\""),
                   1);
}

}  // namespace
}  // namespace gpulens
