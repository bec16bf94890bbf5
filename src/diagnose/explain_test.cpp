// The explanation graph: one test per edge, and for each the symptom without
// its cause, which then stands alone.
#include "diagnose/explain.h"

#include <gtest/gtest.h>

#include "diagnose/report.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 61;  // 15 s x 61 = 15 min
constexpr int64_t kStep = 15'000;

Series flat(double v) { return testing::flat(v, kPoints, kStep); }
Series steps(double before, double after, int at) { return testing::steps(before, after, at, kPoints, kStep); }

GpuSignals busy_gpu(const std::string& index) {
  GpuSignals g;
  g.index = index;
  g.model = "NVIDIA H100 80GB HBM3";
  g.sig(GpuSig::kGpuUtil) = flat(0.95);
  g.sig(GpuSig::kSmActive) = flat(0.8);
  g.sig(GpuSig::kFbUsed) = flat(40e9);
  g.sig(GpuSig::kFbFree) = flat(40e9);
  g.sig(GpuSig::kLinkGen) = flat(5);
  g.sig(GpuSig::kLinkGenMax) = flat(5);
  g.sig(GpuSig::kLinkWidth) = flat(16);
  g.sig(GpuSig::kLinkWidthMax) = flat(16);
  g.sig(GpuSig::kPcieRxBps) = flat(2e9);
  g.sig(GpuSig::kThermalThrottle) = flat(0);
  g.sig(GpuSig::kLastXid) = flat(0);
  return g;
}

Report run(std::vector<GpuSignals> gpus, std::vector<ProcessPlacement> procs = {},
           void (*host_setup)(HostSignals&) = nullptr) {
  SignalSet set;
  HostSignals h;
  h.name = "n1";
  h.gpus = std::move(gpus);
  h.processes = std::move(procs);
  h.sig(HostSig::kCpuBusy) = flat(0.3);
  if (host_setup) host_setup(h);
  set.hosts.push_back(std::move(h));
  set.to_ms = (kPoints - 1) * kStep;
  return diagnose(set, {});
}

const Finding* find(const Report& r, size_t gpu, std::string_view cause) {
  for (const Finding& f : r.hosts.at(0).gpus.at(gpu).findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}

TEST(Explain, DegradedLinkExplainsHostTransfer) {
  GpuSignals g = busy_gpu("0");
  g.sig(GpuSig::kLinkGen) = flat(3);        // trained at Gen3: 15.75 GB/s, should be Gen5 (63 GB/s)
  g.sig(GpuSig::kPcieRxBps) = flat(14e9);   // 89 % of the Gen3 link, 22 % of Gen5
  const Report r = run({g});
  const Finding* ht = find(r, 0, "host_transfer");
  ASSERT_NE(ht, nullptr) << report_text(r, false);
  EXPECT_EQ(ht->explained_by.cause, "pcie_link_degraded");
  EXPECT_EQ(ht->explained_by.gpu, "0");
  EXPECT_NE(ht->explained_by.why.find("22 %"), std::string::npos) << ht->explained_by.why;
  // The root ranks first, its consequence right after it, indented in text.
  ASSERT_GE(r.hosts[0].gpus[0].findings.size(), 2u);
  EXPECT_EQ(r.hosts[0].gpus[0].findings[0].cause, "pcie_link_degraded");
  EXPECT_EQ(r.hosts[0].gpus[0].findings[1].cause, "host_transfer");
  EXPECT_NE(report_text(r, false).find("      \u21b3 host_transfer (io, warning)"), std::string::npos)
      << report_text(r, false);
  EXPECT_NE(report_json(r).find("\"explained_by\":{\"cause\":\"pcie_link_degraded\",\"gpu\":\"0\""),
            std::string::npos);
  // Its waste counts under the root.
  EXPECT_EQ(r.waste_by_cause.count("host_transfer"), 0u);
  EXPECT_GT(r.waste_by_cause.at("pcie_link_degraded"), 0);
}

TEST(Explain, SaturatedFullLinkStandsAlone) {
  GpuSignals g = busy_gpu("0");
  g.sig(GpuSig::kPcieRxBps) = flat(55e9);  // Gen5 x16 at 87 %: no degradation
  const Report r = run({g});
  const Finding* ht = find(r, 0, "host_transfer");
  ASSERT_NE(ht, nullptr);
  EXPECT_TRUE(ht->explained_by.cause.empty());
  EXPECT_EQ(find(r, 0, "pcie_link_degraded"), nullptr);
  EXPECT_NE(report_json(r).find("\"explained_by\":null"), std::string::npos);
}

TEST(Explain, FragmentationExplainsMemoryPressure) {
  GpuSignals g = busy_gpu("0");
  g.sig(GpuSig::kFbUsed) = flat(78e9);
  g.sig(GpuSig::kFbFree) = flat(2e9);
  g.sig(GpuSig::kFragmentation) = flat(0.6);
  const Report r = run({g});
  const Finding* mp = find(r, 0, "memory_pressure");
  ASSERT_NE(mp, nullptr) << report_text(r, false);
  EXPECT_EQ(mp->explained_by.cause, "memory_fragmentation");
  EXPECT_EQ(r.hosts[0].gpus[0].findings[0].cause, "memory_fragmentation");
}

TEST(Explain, FullMemoryWithoutFragmentationStandsAlone) {
  GpuSignals g = busy_gpu("0");
  g.sig(GpuSig::kFbUsed) = flat(78e9);
  g.sig(GpuSig::kFbFree) = flat(2e9);
  g.sig(GpuSig::kFragmentation) = flat(0.1);
  const Report r = run({g});
  const Finding* mp = find(r, 0, "memory_pressure");
  ASSERT_NE(mp, nullptr);
  EXPECT_TRUE(mp->explained_by.cause.empty());
}

TEST(Explain, FailedGpuExplainsOnlyItsOwnJobsStall) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 4; ++i) {
    GpuSignals g = busy_gpu(std::to_string(i));
    g.sig(GpuSig::kGpuUtil) = steps(0.95, 0, 5);
    g.sig(GpuSig::kSmActive) = steps(0.8, 0, 5);
    gpus.push_back(g);
  }
  gpus[0].sig(GpuSig::kLastXid) = steps(0, 79, 5);
  auto proc = [](std::string pid, std::string gpu) {
    return ProcessPlacement{.pid = pid, .gpu = gpu, .cpus = "0-95", .numa_nodes = "0-1", .present = flat(1)};
  };
  // Job A on GPUs 0-1 (pid 10), job B on GPUs 2-3 (pid 20).
  const Report r = run(gpus, {proc("10", "0"), proc("10", "1"), proc("20", "2"), proc("20", "3")});
  const Finding* peer = find(r, 1, "idle");
  ASSERT_NE(peer, nullptr) << report_text(r, false);
  EXPECT_EQ(peer->explained_by.cause, "hardware_errors");
  EXPECT_EQ(peer->explained_by.gpu, "0");
  // Job B stopped too, but not because of GPU 0: its idle stands alone.
  const Finding* other = find(r, 2, "idle");
  ASSERT_NE(other, nullptr) << report_text(r, false);
  EXPECT_TRUE(other->explained_by.cause.empty());
  EXPECT_TRUE(r.hosts[0].gpus[2].notes.empty());
}

void nvlink_busy(GpuSignals& g) {
  g.sig(GpuSig::kSmActive) = flat(0.3);
  g.sig(GpuSig::kNvlinkUtil) = flat(0.7);
}

TEST(Explain, ThrottledGpuExplainsItsPeersWaiting) {
  GpuSignals slow = busy_gpu("0");
  slow.sig(GpuSig::kThermalThrottle) = flat(1);
  slow.sig(GpuSig::kSmClock) = flat(1.2e9);
  slow.sig(GpuSig::kSmClockMax) = flat(1.98e9);
  GpuSignals peer = busy_gpu("1");
  nvlink_busy(peer);  // waits in collectives for GPU 0
  const Report r = run({slow, peer});
  const Finding* comm = find(r, 1, "communication");
  ASSERT_NE(comm, nullptr) << report_text(r, false);
  EXPECT_EQ(comm->explained_by.cause, "thermal_throttle");
  EXPECT_EQ(comm->explained_by.gpu, "0");
  const std::string text = report_text(r, false);
  EXPECT_LT(text.find("GPU 0"), text.find("GPU 1")) << text;
  EXPECT_NE(text.find("\u21b3 explains communication on GPU 1"), std::string::npos) << text;
}

TEST(Explain, CommunicationWithoutASlowPeerStandsAlone) {
  GpuSignals a = busy_gpu("0"), b = busy_gpu("1");
  nvlink_busy(b);
  const Report r = run({a, b});
  const Finding* comm = find(r, 1, "communication");
  ASSERT_NE(comm, nullptr) << report_text(r, false);
  EXPECT_TRUE(comm->explained_by.cause.empty());
}

void tcp_fallback(HostSignals& h) {
  h.sig(HostSig::kIbRxBps) = flat(1e6);
  h.sig(HostSig::kIbTxBps) = flat(1e6);
  h.sig(HostSig::kNicRxBps) = flat(2.5e9);
  h.sig(HostSig::kNicTxBps) = flat(2.5e9);
  h.sig(HostSig::kNicSpeed) = flat(3.125e9);  // 25 GbE at 80 %
}

TEST(Explain, NetworkFallbackExplainsCommunication) {
  GpuSignals g = busy_gpu("0");
  g.sig(GpuSig::kSmActive) = flat(0.3);
  const Report r = run({g}, {}, tcp_fallback);
  const Finding* comm = find(r, 0, "communication");
  ASSERT_NE(comm, nullptr) << report_text(r, false);
  EXPECT_EQ(comm->explained_by.cause, "network_fallback");
  EXPECT_EQ(r.hosts[0].gpus[0].findings[0].cause, "network_fallback");
}

TEST(Explain, EveryEdgeIsListed) {
  size_t n = 0;
  for (const ExplanationEdge& e : explanation_edges()) n += !e.cause.empty() && !e.explains.empty();
  EXPECT_GE(n, 5u);
}

TEST(Report, GroupsIdenticalFindingsAcrossGpus) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 8; ++i) {
    GpuSignals g = busy_gpu(std::to_string(i));
    g.sig(GpuSig::kFragmentation) = flat(0.7);
    gpus.push_back(g);
  }
  const std::string text = report_text(run(gpus), false);
  EXPECT_NE(text.find("  GPUs 0\u20137  NVIDIA H100 80GB HBM3\n    WARNING  memory_fragmentation"), std::string::npos)
      << text;
  size_t actions = 0;
  for (size_t p = text.find("action:"); p != std::string::npos; p = text.find("action:", p + 1)) ++actions;
  EXPECT_EQ(actions, 1u) << text;
  // One timeline line for the eight GPUs.
  const size_t tl = text.find("\ntimeline");
  ASSERT_NE(tl, std::string::npos) << text;
  const size_t line = text.find("\n  GPUs 0\u20137 ", tl);
  ASSERT_NE(line, std::string::npos) << text;
  EXPECT_NE(text.substr(line, text.find('\n', line + 1) - line).find("memory_fragmentation   #####"),
            std::string::npos) << text;
}

}  // namespace
}  // namespace gpulens::diagnose
