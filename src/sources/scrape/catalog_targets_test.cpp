// Scraped families beyond plain gauges and counters onto the catalog:
// Triton's latency summary and dcgm-exporter's DCGM_EXP_* families.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sources/scrape/catalog_targets.h"
#include "model/testing/label_text.h"
#include "sources/scrape/scrape_source.h"
#include "sources/scrape/testing/page_server.h"
#include "store/live.h"

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
            (std::vector<CatalogTarget>{{FieldId::kServingLatencyP99, 1e-6, Labels{{"engine", "triton"}}, Combine::kMax}}));
  // prometheus-cpp may print the bound with trailing digits.
  EXPECT_EQ(targets("nv_inference_request_summary_us", {{"model", "m"}, {"quantile", "0.990000"}}).size(), 1u);
  // gpulens' own name, scraped from another gpulens.
  EXPECT_EQ(targets("serving_request_latency_p99_seconds"),
            (std::vector<CatalogTarget>{{FieldId::kServingLatencyP99, 1, Labels{}, Combine::kMax}}));
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

// dcgm-exporter's windowed counts are gauges under gpulens names, with the
// catalog's labels; the window label is dropped.
TEST(CatalogTargetsExp, DcgmExpFamiliesLandOnTheirGaugesWithTheCatalogsLabels) {
  const std::pair<std::string_view, std::string_view> gpu[] = {{"gpu", "0"}, {"UUID", "GPU-a"}};
  auto with = [&](std::vector<std::pair<std::string_view, std::string_view>> more) {
    more.insert(more.begin(), std::begin(gpu), std::end(gpu));
    return more;
  };
  EXPECT_EQ(targets("DCGM_EXP_XID_ERRORS_COUNT", with({{"window_size_in_ms", "300000"}, {"xid", "31"}})),
            (std::vector<CatalogTarget>{{FieldId::kGpuXidErrorsRecent, 1, Labels{{"xid", "31"}}}}));
  // A quiet GPU's zero-valued series has no xid: none in the window.
  EXPECT_EQ(targets("DCGM_EXP_XID_ERRORS_COUNT", with({{"window_size_in_ms", "300000"}})),
            (std::vector<CatalogTarget>{{FieldId::kGpuXidErrorsRecent, 1, Labels{}}}));
  EXPECT_EQ(targets("DCGM_EXP_CLOCK_EVENTS_COUNT", with({{"clock_event", "power_cap"}, {"window_size_in_ms", "1"}})),
            (std::vector<CatalogTarget>{{FieldId::kGpuClockEventsRecent, 1, Labels{{"reason", "sw_power_cap"}}}}));
  EXPECT_EQ(targets("DCGM_EXP_CLOCK_EVENTS_COUNT", with({{"clock_event", "clocks_setting"}}))[0].extra.render(),
            "reason=\"applications_clocks\"");
  EXPECT_EQ(targets("DCGM_EXP_CLOCK_EVENTS_COUNT", with({{"clock_event", "hw_thermal"}}))[0].extra.render(),
            "reason=\"hw_thermal\"");
  EXPECT_EQ(targets("DCGM_EXP_GPU_HEALTH_STATUS",
                    with({{"DCGM_FI_DRIVER_VERSION", "550.144.03"}, {"health_error_code", "DCGM_FR_PCI_REPLAY_RATE"},
                          {"health_watch", "PCIE"}})),
            (std::vector<CatalogTarget>{
                {FieldId::kGpuHealthStatus, 1, Labels{{"watch", "PCIE"}, {"error", "DCGM_FR_PCI_REPLAY_RATE"}}}}));
  EXPECT_EQ(targets("DCGM_EXP_P2P_STATUS", with({{"link_status", "OK"}, {"peer_gpu", "3"}})),
            (std::vector<CatalogTarget>{{FieldId::kGpuP2pStatus, 1, Labels{{"peer_gpu", "3"}, {"status", "OK"}}}}));
  // The same from another gpulens, under the catalog's own names.
  EXPECT_EQ(targets("gpu_xid_errors_recent", with({{"xid", "79"}})),
            (std::vector<CatalogTarget>{{FieldId::kGpuXidErrorsRecent, 1, Labels{{"xid", "79"}}}}));
  EXPECT_EQ(targets("gpu_clock_events_recent", with({{"reason", "sw_power_cap"}}))[0].extra.render(),
            "reason=\"sw_power_cap\"");
  EXPECT_EQ(targets("gpu_health_status", with({{"watch", "MEM"}, {"error", "DCGM_FR_OK"}})),
            (std::vector<CatalogTarget>{{FieldId::kGpuHealthStatus, 1, Labels{{"watch", "MEM"}, {"error", "DCGM_FR_OK"}}}}));
  EXPECT_EQ(targets("gpu_p2p_status", with({{"peer_gpu", "1"}, {"status", "OK"}}))[0].field, FieldId::kGpuP2pStatus);
  // The windowed count is not the cumulative counter, nor the last XID.
  EXPECT_EQ(targets("gpu_xid_errors_total", with({{"xid", "79"}}))[0].field, FieldId::kGpuXidErrors);
  EXPECT_EQ(targets("DCGM_FI_DEV_XID_ERRORS", with({}))[0].field, FieldId::kGpuLastXid);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The scrape of tests/data/dcgm-exporter/dcgm-exp.prom (dcgm-exporter's
// format): every DCGM_EXP_* series is a catalog series of its GPU.
TEST(CatalogTargetsExp, AScrapedDcgmExporterFillsTheExpFieldsOfItsGpus) {
  testing::PageServer srv(
      {{"/dcgm", slurp(std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/dcgm-exp.prom")}});
  SeriesRegistry reg;
  LiveStore live;
  SourceOptions o;
  o.scrape.targets = {srv.url("/dcgm")};
  o.scrape.interval_ms = 100;
  o.scrape.timeout_ms = 300;
  o.scrape.max_bytes = 64 << 10;
  auto src = make_scrape_source(o);
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  Frame f(reg);
  f.clear(1000);
  ASSERT_TRUE(src->sample(f).is_ok());
  live.publish(idx, f);
  ASSERT_EQ(reg.gpu_count(), 2);
  auto value = [&](FieldId id, int gpu, std::string_view text) {
    const uint32_t s = reg.slot(id, gpu, testing::labels_from_text(text));
    std::lock_guard lock(live.mutex());
    return live.present(s) ? live.value(s) : -1;
  };
  EXPECT_EQ(value(FieldId::kGpuXidErrorsRecent, 0, "xid=\"31\""), 2);
  EXPECT_EQ(value(FieldId::kGpuXidErrorsRecent, 1, ""), 0);
  EXPECT_EQ(value(FieldId::kGpuClockEventsRecent, 0, "reason=\"sw_power_cap\""), 12);
  EXPECT_EQ(value(FieldId::kGpuClockEventsRecent, 0, "reason=\"gpu_idle\""), 3);
  EXPECT_EQ(value(FieldId::kGpuClockEventsRecent, 1, ""), 0);
  EXPECT_EQ(value(FieldId::kGpuHealthStatus, 1, "watch=\"PCIE\",error=\"DCGM_FR_PCI_REPLAY_RATE\""), 20);
  EXPECT_EQ(value(FieldId::kGpuHealthStatus, 1, "watch=\"THERMAL\",error=\"DCGM_FR_CLOCK_THROTTLE_THERMAL\""), 10);
  EXPECT_EQ(value(FieldId::kGpuHealthStatus, 0, "watch=\"PCIE\",error=\"DCGM_FR_OK\""), 0);
  EXPECT_EQ(value(FieldId::kGpuP2pStatus, 0, "peer_gpu=\"1\",status=\"OK\""), 0);
  EXPECT_EQ(value(FieldId::kGpuP2pStatus, 1, "peer_gpu=\"0\",status=\"OK\""), 0);
  // Nothing counted twice: the windowed XID count is no cumulative counter.
  EXPECT_EQ(value(FieldId::kGpuXidErrors, 0, "xid=\"31\""), -1);
  EXPECT_EQ(value(FieldId::kGpuXidErrors, 0, ""), -1);
  size_t health = 0;
  {
    std::lock_guard lock(reg.mutex());
    for (uint32_t s : reg.slots_of(FieldId::kGpuHealthStatus)) health += reg.series(s).gpu == 0;
  }
  EXPECT_EQ(health, 10u);  // one per watch
}

// Another gpulens scraped: a GPU series keeps its own labels (the XID code,
// the clock-event reason), so that its series do not add up on one.
TEST(CatalogTargetsGpulens, GpuSeriesKeepTheirOwnLabels) {
  EXPECT_EQ(targets("gpu_clock_event_active", {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"gpu_name", "NVIDIA H200"},
                                               {"reason", "sw_thermal_slowdown"}}),
            (std::vector<CatalogTarget>{{FieldId::kGpuClockEventActive, 1, Labels{{"reason", "sw_thermal_slowdown"}}}}));
  EXPECT_EQ(targets("gpu_xid_errors_total", {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"xid", "79"}, {"instance", "n:9400"}}),
            (std::vector<CatalogTarget>{{FieldId::kGpuXidErrors, 1, Labels{{"xid", "79"}}}}));
  // dcgm-exporter's names keep only the labels their catalog field has.
  EXPECT_EQ(targets("DCGM_FI_DEV_GPU_TEMP", {{"gpu", "0"}, {"UUID", "GPU-a"}, {"modelName", "m"}, {"Hostname", "n"}}),
            (std::vector<CatalogTarget>{{FieldId::kGpuTemperature, 1, Labels{}}}));
}

}  // namespace
}  // namespace gpulens
