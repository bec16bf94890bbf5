// Scraped families beyond plain gauges and counters onto the catalog:
// Triton's latency summary and dcgm-exporter's DCGM_EXP_* families.
#include <gtest/gtest.h>

#include "sources/scrape/catalog_targets.h"

namespace gpulens {
namespace {

using scrape::catalog_targets;
using scrape::CatalogTarget;
using scrape::Combine;

std::vector<CatalogTarget> targets(std::string_view name,
                                   std::vector<std::pair<std::string_view, std::string_view>> labels = {}) {
  return catalog_targets(name, labels);
}

TEST(CatalogTargetsSummary, TritonsP99IsTheWorstModelsInSeconds) {
  EXPECT_EQ(targets("nv_inference_request_summary_us", {{"model", "m"}, {"version", "1"}, {"quantile", "0.99"}}),
            (std::vector<CatalogTarget>{{FieldId::kServingLatencyP99, 1e-6, "", Combine::kMax}}));
  // prometheus-cpp may print the bound with trailing digits.
  EXPECT_EQ(targets("nv_inference_request_summary_us", {{"model", "m"}, {"quantile", "0.990000"}}).size(), 1u);
  // gpulens' own name, scraped from another gpulens.
  EXPECT_EQ(targets("serving_request_latency_p99_seconds"),
            (std::vector<CatalogTarget>{{FieldId::kServingLatencyP99, 1, "", Combine::kMax}}));
}

TEST(CatalogTargetsSummary, OtherQuantilesSumCountAndOtherSummariesAreNotRead) {
  for (const char* q : {"0.5", "0.9", "0.95", "0.999"}) {
    EXPECT_TRUE(targets("nv_inference_request_summary_us", {{"model", "m"}, {"quantile", q}}).empty()) << q;
  }
  // A summary's _sum and _count are not a histogram's: they land nowhere.
  EXPECT_TRUE(targets("nv_inference_request_summary_us_sum", {{"model", "m"}, {"version", "1"}}).empty());
  EXPECT_TRUE(targets("nv_inference_request_summary_us_count", {{"model", "m"}, {"version", "1"}}).empty());
  EXPECT_TRUE(targets("nv_inference_queue_summary_us", {{"model", "m"}, {"quantile", "0.99"}}).empty());
  EXPECT_TRUE(targets("nv_inference_compute_infer_summary_us", {{"model", "m"}, {"quantile", "0.99"}}).empty());
  EXPECT_TRUE(targets("nv_inference_first_response_histogram_ms_bucket", {{"model", "m"}, {"le", "100"}}).empty());
  EXPECT_TRUE(targets("nv_inference_first_response_histogram_ms_sum", {{"model", "m"}}).empty());
}

}  // namespace
}  // namespace gpulens
