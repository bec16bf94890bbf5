// The scrape source on both generations of dcgm-exporter's names: the golden
// pages of --dcgm-names (classic) and --dcgm-names=4.9, written in
// dcgm-exporter's format (tests/data/dcgm-exporter/), fill the same catalog
// values; DCGM 4.6.x's percent under a _RATIO name; dcgm-exporter's pods in
// gpu_pod_info; node_exporter's unknown link speed.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "sources/scrape/catalog_targets.h"
#include "model/testing/label_text.h"
#include "sources/scrape/scrape_source.h"
#include "sources/scrape/testing/page_server.h"
#include "store/live.h"

namespace gpulens {
namespace {

using testing::PageServer;

std::string golden(const std::string& name) {
  std::ifstream in(std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One scrape of `url` by a fresh source into its own registry.
struct Scraped {
  SeriesRegistry reg;
  LiveStore live;
  explicit Scraped(const std::string& url) {
    SourceOptions o;
    o.scrape.targets = {url};
    o.scrape.interval_ms = 100;
    o.scrape.timeout_ms = 1000;
    o.scrape.max_bytes = 1 << 20;
    auto src = make_scrape_source(o);
    EXPECT_TRUE(src->open(reg).is_ok());
    const int idx = live.add_source("scrape", false, true);
    Frame f(reg);
    f.clear(1000);
    const Status s = src->sample(f);
    EXPECT_TRUE(s.is_ok()) << s.message();
    live.publish(idx, f);
  }
  // NaN when absent.
  double value(FieldId field, int gpu, std::string_view text = {}) {
    const uint32_t s = reg.slot(field, gpu, testing::labels_from_text(text));
    std::lock_guard lock(live.mutex());
    return live.present(s) ? live.value(s) : std::nan("");
  }
};

TEST(ScrapeDcgmNames, BothGenerationsFillTheSameCatalogValues) {
  const std::string classic_page = golden("golden.prom"), new_page = golden("golden-4.9.prom");
  ASSERT_FALSE(classic_page.empty());
  ASSERT_NE(new_page.find("DCGM_FI_DEV_GPU_UTIL_RATIO{"), std::string::npos);
  PageServer srv({{"/classic", classic_page}, {"/4.9", new_page}});
  Scraped classic(srv.url("/classic")), next(srv.url("/4.9"));
  ASSERT_EQ(classic.reg.gpu_count(), 2);
  ASSERT_EQ(next.reg.gpu_count(), 2);
  for (Scraped* s : {&classic, &next}) {
    EXPECT_EQ(s->reg.gpu(0)->driver, "550.144.03");  // DCGM_FI_DRIVER_VERSION or DCGM_FI_SYSTEM_DRIVER_VERSION
    EXPECT_EQ(s->reg.gpu(0)->name, "NVIDIA H100 80GB HBM3");
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuUtilization, 0), 0.97);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuSmClock, 0), 1980e6);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuMemClock, 0), 2619e6);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuTemperature, 1), 62);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuMemoryTemperature, 1), 71);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuPower, 0), 612.345);
    EXPECT_NEAR(s->value(FieldId::kGpuEnergy, 0), 123456.789, 1e-3);  // mJ or J
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuLastXid, 0), 79);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuRemappedRows, 0, "cause=\"correctable\""), 2);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuTensorActive, 0), 0.412346);
    EXPECT_DOUBLE_EQ(s->value(FieldId::kGpuPcieTxRate, 0), 1.5e9);
  }
  // MiB (truncated by DCGM) against bytes: the same within a MiB.
  EXPECT_NEAR(classic.value(FieldId::kGpuMemoryUsed, 0), next.value(FieldId::kGpuMemoryUsed, 0), 1048576);
  EXPECT_NEAR(next.value(FieldId::kGpuMemoryUsed, 0), 70000.7 * 1048576, 1);
  EXPECT_DOUBLE_EQ(next.value(FieldId::kGpuMemoryTotal, 0), 81559 * 1048576.0);  // FB_CAPACITY_BYTES
}

TEST(ScrapeDcgmNames, AUtilRatioAboveOneIsDcgm46sPercent) {
  // DCGM 4.6.x named field 203 (percent) DCGM_FI_DEV_GPU_UTIL_RATIO; 4.7
  // gave the name to a 0..1 ratio. Both read as the catalog's ratio.
  const std::string page =
      "# TYPE DCGM_FI_DEV_GPU_UTIL_RATIO gauge\n"
      "DCGM_FI_DEV_GPU_UTIL_RATIO{gpu=\"0\",UUID=\"GPU-a\",hostname=\"n1\",hpc_job=\"1234\"} 45\n"
      "DCGM_FI_DEV_GPU_UTIL_RATIO{gpu=\"1\",UUID=\"GPU-b\",hostname=\"n1\",hpc_job=\"1234\"} 0.450000\n"
      "DCGM_FI_DEV_GPU_UTIL_RATIO{gpu=\"2\",UUID=\"GPU-c\",hostname=\"n1\"} 0\n";
  PageServer srv({{"/m", page}});
  Scraped s(srv.url("/m"));
  ASSERT_EQ(s.reg.gpu_count(), 3);
  EXPECT_DOUBLE_EQ(s.value(FieldId::kGpuUtilization, 0), 0.45);
  EXPECT_DOUBLE_EQ(s.value(FieldId::kGpuUtilization, 1), 0.45);
  EXPECT_DOUBLE_EQ(s.value(FieldId::kGpuUtilization, 2), 0);
}

TEST(ScrapeDcgmNames, NewerLabelRowsNameTheGpu) {
  const std::string page =
      "DCGM_FI_DEV_GPU_TEMP_CELSIUS{gpu=\"0\",pci_bus_id=\"00000000:18:00.0\",device=\"nvidia0\","
      "hostname=\"n1\",DCGM_FI_DEV_NAME=\"NVIDIA H200\",DCGM_FI_DEV_SERIAL=\"1654922001234\","
      "DCGM_FI_DEV_UUID=\"GPU-x\",DCGM_FI_SYSTEM_DRIVER_VERSION=\"580.65.06\",hpc_job=\"77\"} 55\n";
  PageServer srv({{"/m", page}});
  Scraped s(srv.url("/m"));
  ASSERT_EQ(s.reg.gpu_count(), 1);
  EXPECT_EQ(s.reg.gpu(0)->uuid, "GPU-x");
  EXPECT_EQ(s.reg.gpu(0)->name, "NVIDIA H200");
  EXPECT_EQ(s.reg.gpu(0)->serial, "1654922001234");
  EXPECT_EQ(s.reg.gpu(0)->driver, "580.65.06");
  EXPECT_DOUBLE_EQ(s.value(FieldId::kGpuTemperature, 0), 55);
}

TEST(ScrapeDcgmNames, DcgmExportersPodsAreGpuPodInfoWithTheirOrigin) {
  PageServer srv({{"/classic", golden("golden.prom")}});
  Scraped s(srv.url("/classic"));
  const std::string labels =
      "resource=\"nvidia.com/gpu\",device=\"GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52\","
      "gpu_uuid=\"GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52\",namespace=\"default\",pod=\"llm-train-0\","
      "container=\"trainer\",origin=\"dcgm-exporter\"";
  EXPECT_DOUBLE_EQ(s.value(FieldId::kGpuPodInfo, kNodeEntity, labels), 1);
  int rows = 0;  // GPU 1 is in no pod: no row
  {
    std::lock_guard lock(s.live.mutex());
    for (uint32_t slot : s.reg.slots_of(FieldId::kGpuPodInfo)) rows += s.live.present(slot) ? 1 : 0;
  }
  EXPECT_EQ(rows, 1);
}

TEST(ScrapeDcgmNames, AGpuTheAgentAttributesItselfGetsNoScrapedPodInfo) {
  PageServer srv({{"/classic", golden("golden.prom")}});
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", .name = "NVIDIA H100 80GB HBM3"});
  reg.set_gpu_pod(0, {.container = "c", .namespace_ = "n", .pod = "own"}, PodOrigin::kAgent);
  SourceOptions o;
  o.scrape.targets = {srv.url("/classic")};
  o.scrape.interval_ms = 100;
  o.scrape.timeout_ms = 1000;
  o.scrape.max_bytes = 1 << 20;
  auto src = make_scrape_source(o);
  ASSERT_TRUE(src->open(reg).is_ok());
  Frame f(reg);
  f.clear(1000);
  ASSERT_TRUE(src->sample(f).is_ok());
  EXPECT_TRUE(reg.slots_of(FieldId::kGpuPodInfo).empty());
}

TEST(ScrapeNodeExporter, AnUnknownLinkSpeedIsAbsentNotNegative) {
  // A VM's virtio NIC: sysfs speed -1, which node_exporter multiplies by 125000.
  const std::string page =
      "# HELP node_network_speed_bytes Network device property: speed_bytes\n"
      "# TYPE node_network_speed_bytes gauge\n"
      "node_network_speed_bytes{device=\"eth0\"} -125000\n"
      "node_network_speed_bytes{device=\"eth1\"} 1.25e+09\n";
  PageServer srv({{"/node", page}});
  Scraped s(srv.url("/node"));
  EXPECT_TRUE(std::isnan(s.value(FieldId::kHostNetworkSpeed, kNodeEntity, "device=\"eth0\"")));
  EXPECT_DOUBLE_EQ(s.value(FieldId::kHostNetworkSpeed, kNodeEntity, "device=\"eth1\""), 1.25e9);
}

TEST(CatalogTargetsDcgmNames, NewNamesInTheirOwnUnits) {
  using scrape::catalog_targets;
  auto one = [](std::string_view name) {
    const auto t = catalog_targets(name, {});
    EXPECT_EQ(t.size(), 1u) << name;
    return t.empty() ? scrape::CatalogTarget{FieldId::kCount} : t[0];
  };
  EXPECT_EQ(one("DCGM_FI_DEV_FB_USED_BYTES").field, FieldId::kGpuMemoryUsed);
  EXPECT_DOUBLE_EQ(one("DCGM_FI_DEV_FB_USED_BYTES").scale, 1);
  EXPECT_DOUBLE_EQ(one("DCGM_FI_DEV_SM_CLOCK_HERTZ").scale, 1);
  EXPECT_DOUBLE_EQ(one("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL").scale, 1);
  EXPECT_TRUE(one("DCGM_FI_DEV_GPU_UTIL_RATIO").percent_or_ratio);
  EXPECT_FALSE(one("DCGM_FI_PROF_SM_UTIL_RATIO").percent_or_ratio);  // always a ratio
  EXPECT_EQ(one("DCGM_FI_PROF_SM_UTIL_RATIO").field, FieldId::kGpuSmActive);
  EXPECT_EQ(one("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND").field, FieldId::kGpuPcieRxRate);  // dcgm-exporter 4.10
  EXPECT_EQ(one("DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND").field, FieldId::kGpuNvlinkTxRate);
  EXPECT_EQ(one("DCGM_FI_DEV_XID_ERROR").field, FieldId::kGpuLastXid);
  EXPECT_TRUE(catalog_targets("DCGM_FI_SYSTEM_DRIVER_VERSION", {}).empty());  // a label row
}

}  // namespace
}  // namespace gpulens
