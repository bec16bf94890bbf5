// The scrape source on a dcgm-exporter with MIG GPUs and pods: GPU
// instances read back into gpu_mig_* series (the scrape's own, or nvml's
// where nvml found the GPU), device-wide values onto the parent GPU once,
// and dcgm-exporter's pods kept as the fallback of the agent's attribution.
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "export/exposition.h"
#include "model/testing/label_text.h"
#include "sources/scrape/scrape_source.h"
#include "sources/scrape/testing/page_server.h"
#include "store/live.h"

namespace gpulens {
namespace {

using testing::PageServer;

std::string read_file(const std::string& name) {
  std::ifstream in(std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

SourceOptions options(const std::string& target) {
  SourceOptions o;
  o.scrape.targets = {target};
  o.scrape.interval_ms = 50;
  o.scrape.timeout_ms = 300;
  o.scrape.max_bytes = 1 << 20;
  return o;
}

double value_of(SeriesRegistry& reg, LiveStore& live, FieldId f, int gpu, const Labels& extra = {}) {
  const uint32_t s = reg.slot(f, gpu, extra);
  std::lock_guard lock(live.mutex());
  return live.present(s) ? live.value(s) : -1;
}
double value_of(SeriesRegistry& reg, LiveStore& live, FieldId f, int gpu, std::string_view text) {
  const uint32_t s = reg.slot(f, gpu, testing::labels_from_text(text));
  std::lock_guard lock(live.mutex());
  return live.present(s) ? live.value(s) : -1;
}

// Samples until `done` holds (the target's thread scrapes every 50 ms).
template <typename Done>
void sample_until(Source& src, LiveStore& live, int idx, SeriesRegistry& reg, Done done) {
  for (int i = 0; i < 60; ++i) {
    Frame f(reg);
    f.clear(1000 + i);
    ASSERT_TRUE(src.sample(f).is_ok());
    live.publish(idx, f);
    if (done()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL() << "condition not met after 3 s";
}

DcgmPicks default_counters() {
  DcgmPicks s;
  for (const DcgmRow& row : dcgm_rows()) {
    if (row.default_counter) s.emplace(row.name, DcgmPick{row.type, std::string(row.help)});
  }
  return s;
}

std::set<std::string> sample_lines(std::string_view body) {
  std::set<std::string> out;
  size_t i = 0;
  while (i < body.size()) {
    const size_t nl = body.find('\n', i);
    const std::string_view line = body.substr(i, nl - i);
    if (!line.empty() && line[0] != '#') out.emplace(line);
    i = nl == std::string_view::npos ? body.size() : nl + 1;
  }
  return out;
}

// dcgm-exporter's page of a node with a whole GPU and a MIG GPU with two
// GPU instances, each with its pod (golden-mig.prom), scraped by an agent
// with no other GPU source and written out again under --dcgm-names: every
// series comes back with its labels and value, the instances included.
TEST(ScrapeMig, AScrapedMigPageComesBackUnderDcgmNames) {
  const std::string page = read_file("golden-mig.prom");
  ASSERT_FALSE(page.empty());
  PageServer srv({{"/metrics", page}});
  SeriesRegistry reg;
  reg.set_hostname("gpu-node-5");
  LiveStore live;
  auto src = make_scrape_source(options(srv.url("/metrics")));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  sample_until(*src, live, idx, reg, [] { return true; });
  ASSERT_EQ(reg.gpu_count(), 2);

  // The instances are entities of their own, with the scrape's labels.
  const std::string gi1 = "mig_profile=\"4g.40gb\",gpu_instance_id=\"1\"";
  const std::string gi2 = "mig_profile=\"3g.40gb\",gpu_instance_id=\"2\"";
  EXPECT_EQ(value_of(reg, live, FieldId::kGpuMigInfo, 1, gi1), 1);
  EXPECT_EQ(value_of(reg, live, FieldId::kGpuMigInfo, 1, gi2), 1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMigMemoryUsed, 1, gi1), 30000 * 1048576.0);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMigGraphicsEngineActive, 1, gi1), 0.75);
  // Device-wide: the parent's, once (not the sum of its instances').
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuTemperature, 1), 41);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuPower, 1), 251.5);
  // The MIG GPU has no GPU-wide memory use: none is made up from an instance.
  EXPECT_EQ(value_of(reg, live, FieldId::kGpuMemoryUsed, 1), -1);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMemoryUsed, 0), 60000 * 1048576.0);

  Renderer r;
  const DcgmPicks picks = default_counters();
  const std::string body(r.render(reg, live, {.native_names = false, .dcgm_names = true, .dcgm_rows = &picks}));
  const std::set<std::string> want = sample_lines(page), got = sample_lines(body);
  for (const std::string& line : want) EXPECT_TRUE(got.contains(line)) << "lost: " << line;
  for (const std::string& line : got) EXPECT_TRUE(want.contains(line)) << "made up: " << line;
}

// dcgm-exporter's MIG page of an A100 that nvml also found: the scrape
// fills the instance series nvml lacks (profiling fields: no GPM on A100)
// under nvml's own labels of the instance, adds no instance of its own,
// leaves a GPU instance nvml splits into compute instances alone, and waits
// for an instance nvml has not listed yet.
const std::string kMigPage =
    "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-m\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",Hostname=\"n1\","
    "container=\"server\",namespace=\"serve\",pod=\"vllm-0\"} 0.625000\n"
    "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-m\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"2g.20gb\",GPU_I_ID=\"2\",Hostname=\"n1\"} 0.125000\n"
    "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\",UUID=\"GPU-m\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\"5\",Hostname=\"n1\"} 0.5\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-m\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",Hostname=\"n1\"} 40\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-m\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",Hostname=\"n1\"} 40\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-m\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
    "modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"2g.20gb\",GPU_I_ID=\"2\",Hostname=\"n1\"} 40\n";

TEST(ScrapeMig, InstancesOfAnNvmlGpuFillNvmlsOwnSeries) {
  PageServer srv({{"/metrics", kMigPage}});
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-m", .name = "NVIDIA A100-SXM4-80GB"});  // as nvml found it
  LiveStore live;
  const int nvml = live.add_source("nvml", false);
  const Labels gi1 = mig_labels({.uuid = "MIG-1", .profile = "3g.40gb", .gpu_instance = 1, .compute_instance = 0});
  const Labels gi2a = mig_labels({.uuid = "MIG-2a", .profile = "1c.2g.20gb", .gpu_instance = 2, .compute_instance = 0});
  const Labels gi2b = mig_labels({.uuid = "MIG-2b", .profile = "1c.2g.20gb", .gpu_instance = 2, .compute_instance = 1});
  {
    Frame f(reg);
    f.clear(1000);
    for (const Labels* x : {&gi1, &gi2a, &gi2b}) f.set(FieldId::kGpuMigInfo, 0, *x, 1);
    f.set(FieldId::kGpuTemperature, 0, 39);  // nvml's own: wins
    live.publish(nvml, f);
  }
  auto src = make_scrape_source(options(srv.url("/metrics")));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  sample_until(*src, live, idx, reg, [&] { return value_of(reg, live, FieldId::kGpuMigSmActive, 0, gi1) >= 0; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMigSmActive, 0, gi1), 0.625);
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuTemperature, 0), 39);
  EXPECT_EQ(value_of(reg, live, FieldId::kGpuUtilization, 0), -1);  // an instance's GPU_UTIL is not the GPU's
  EXPECT_EQ(reg.gpu_count(), 1);
  {
    std::lock_guard lock(reg.mutex());
    EXPECT_EQ(reg.slots_of(FieldId::kGpuMigInfo).size(), 3u);  // nvml's three, none added
    for (uint32_t s : reg.slots_of(FieldId::kGpuMigSmActive)) {
      EXPECT_EQ(reg.series(s).extra, gi1);  // not on instance 2's compute instances, not on 5
    }
    // dcgm-exporter's pod of instance 1, where the agent attributes none.
    EXPECT_NE(std::string(reg.dcgm_mig_parts(0, 1).namespace_pod).find("pod=\"vllm-0\""), std::string::npos);
  }
  // GPU instance 5 appears in nvml later (a MIG reconfiguration, or nvml's
  // first pass came after the scrape's): its series follow.
  const Labels gi5 = mig_labels({.uuid = "MIG-5", .profile = "1g.10gb", .gpu_instance = 5, .compute_instance = 0});
  {
    Frame f(reg);
    f.clear(2000);
    for (const Labels* x : {&gi1, &gi2a, &gi2b, &gi5}) f.set(FieldId::kGpuMigInfo, 0, *x, 1);
    live.publish(nvml, f);
  }
  sample_until(*src, live, idx, reg, [&] { return value_of(reg, live, FieldId::kGpuMigSmActive, 0, gi5) >= 0; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMigSmActive, 0, gi5), 0.5);
  // GPU instance 1 re-created (MIG reconfigured): once the history dropped
  // the old instance's series, the scraped values follow to the new one.
  const Labels gi1new = mig_labels({.uuid = "MIG-1new", .profile = "3g.40gb", .gpu_instance = 1, .compute_instance = 0});
  {
    const std::vector<uint32_t> old{reg.slot(FieldId::kGpuMigInfo, 0, gi1), reg.slot(FieldId::kGpuMigSmActive, 0, gi1)};
    std::lock_guard lock(reg.mutex());
    reg.release_locked(old);  // forgets the lookup marks
    ASSERT_EQ(reg.release_locked(old).size(), 2u);
  }
  {
    Frame f(reg);
    f.clear(3000);
    for (const Labels* x : {&gi1new, &gi2a, &gi2b, &gi5}) f.set(FieldId::kGpuMigInfo, 0, *x, 1);
    live.publish(nvml, f);
  }
  sample_until(*src, live, idx, reg, [&] { return value_of(reg, live, FieldId::kGpuMigSmActive, 0, gi1new) >= 0; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuMigSmActive, 0, gi1new), 0.625);
  // The agent's attribution wins over the scraped one, and gives way again.
  reg.set_mig_pod(0, 1, {.container = "c", .namespace_ = "ns", .pod = "mine"});
  {
    std::lock_guard lock(reg.mutex());
    EXPECT_NE(std::string(reg.dcgm_mig_parts(0, 1).namespace_pod).find("pod=\"mine\""), std::string::npos);
  }
  reg.set_mig_pod(0, 1, {});
  std::lock_guard lock(reg.mutex());
  EXPECT_NE(std::string(reg.dcgm_mig_parts(0, 1).namespace_pod).find("pod=\"vllm-0\""), std::string::npos);
}

// A whole GPU nvml found with no pod attributed by the agent (no kubelet
// socket, no process in a pod) carries dcgm-exporter's pod; the agent's own
// wins; a pod dcgm-exporter no longer lists is dropped.
TEST(ScrapeMig, DcgmExporterPodsFillTheAgentsAttribution) {
  const std::string with_pod =
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-w\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
      "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"n1\",container=\"trainer\",namespace=\"ml\",pod=\"job-0\"} 93\n";
  const std::string without_pod =
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-w\",pci_bus_id=\"00000000:07:00.0\",device=\"nvidia0\","
      "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"n1\"} 93\n";
  PageServer srv({{"/metrics", with_pod}});
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-w", .name = "NVIDIA H100 80GB HBM3"});
  reg.set_gpu_pod(0, {});  // nvml's pass: no pod of its own
  LiveStore live;
  auto src = make_scrape_source(options(srv.url("/metrics")));
  ASSERT_TRUE(src->open(reg).is_ok());
  const int idx = live.add_source("scrape", false, true);
  auto labels = [&] {
    std::lock_guard lock(reg.mutex());
    return reg.dcgm_labels(0);
  };
  sample_until(*src, live, idx, reg, [&] { return labels().find("pod=") != std::string::npos; });
  EXPECT_NE(labels().find(",container=\"trainer\",namespace=\"ml\",pod=\"job-0\""), std::string::npos) << labels();
  reg.set_gpu_pod(0, {.container = "c", .namespace_ = "ns", .pod = "mine"});
  EXPECT_NE(labels().find("pod=\"mine\""), std::string::npos) << labels();
  reg.set_gpu_pod(0, {});
  EXPECT_NE(labels().find("pod=\"job-0\""), std::string::npos) << labels();
  srv.set("/metrics", without_pod);  // the job ended
  sample_until(*src, live, idx, reg, [&] { return labels().find("pod=") == std::string::npos; });
  EXPECT_DOUBLE_EQ(value_of(reg, live, FieldId::kGpuUtilization, 0), 0.93);
}

}  // namespace
}  // namespace gpulens
