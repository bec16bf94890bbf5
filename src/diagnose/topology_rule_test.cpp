// The topology cause over synthetic placements: cross-NUMA processes fire,
// well-placed ones and NVLink-connected GPUs do not, missing data is "not
// assessed"; and the mapping reads the placement facts from info series.
#include <gtest/gtest.h>

#include "diagnose/engine.h"
#include "diagnose/mapping.h"
#include "diagnose/report.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 61;  // 15 s x 61 = 15 min
constexpr int64_t kStep = 15'000;

Series flat(double v, int from = 0) {
  Series s;
  for (int i = from; i < kPoints; ++i) s.push_back({i * kStep, v});
  return s;
}

// A busy GPU on NUMA node `node`, NVLink to every other of `count` GPUs
// unless `path` says otherwise.
GpuSignals gpu(int index, int node, int count = 8, const std::string& path = "NVLINK") {
  GpuSignals g;
  g.index = std::to_string(index);
  g.sig(GpuSig::kGpuUtil) = flat(0.95);
  g.sig(GpuSig::kSmActive) = flat(0.8);
  g.sig(GpuSig::kNumaNode) = flat(node);
  for (int p = 0; p < count; ++p) {
    if (p != index) g.peer_paths[std::to_string(p)] = path;
  }
  g.local_cpus = node == 0 ? "0-47" : "48-95";
  return g;
}

ProcessPlacement proc(const std::string& pid, int gpu_index, const std::string& cpus, const std::string& nodes,
                      int from = 0) {
  return {.pid = pid, .gpu = std::to_string(gpu_index), .cpus = cpus, .numa_nodes = nodes, .present = flat(1, from)};
}

SignalSet host(std::vector<GpuSignals> gpus, std::vector<ProcessPlacement> procs) {
  SignalSet set;
  HostSignals h;
  h.name = "n1";
  h.gpus = std::move(gpus);
  h.processes = std::move(procs);
  set.hosts.push_back(std::move(h));
  set.to_ms = (kPoints - 1) * kStep;
  return set;
}

const Finding* finding(const Report& r, size_t gpu_pos, std::string_view cause) {
  for (const Finding& f : r.hosts.at(0).gpus.at(gpu_pos).findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}
bool not_assessed(const Report& r, size_t gpu_pos) {
  for (const auto& n : r.hosts.at(0).gpus.at(gpu_pos).not_assessed) {
    if (n.cause == "topology") return true;
  }
  return false;
}

TEST(Topology, CrossNumaProcessFires) {
  const Report r = diagnose(host({gpu(4, 1)}, {proc("4104", 4, "0-47", "0")}), {});
  const Finding* f = finding(r, 0, "topology");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(f->layer, "io");
  ASSERT_FALSE(f->evidence.empty());
  EXPECT_EQ(f->evidence[0].signal, "gpu_numa_node");
  EXPECT_EQ(f->evidence[0].value, 1);
  EXPECT_EQ(f->evidence[0].threshold, 0);
  EXPECT_NE(f->evidence[0].detail.find("pid 4104"), std::string::npos) << f->evidence[0].detail;
  EXPECT_NE(f->action.find("numactl --cpunodebind=1 --membind=1"), std::string::npos) << f->action;
  EXPECT_NE(f->action.find("single-numa-node"), std::string::npos);
  EXPECT_FALSE(not_assessed(r, 0));
  EXPECT_NE(report_json(r).find("\"detail\":\"pid 4104 may run only on NUMA node(s) 0"), std::string::npos);
}

TEST(Topology, CpusOffTheGpusNodeFireEvenWithAllMemoryNodes) {
  // taskset-style pinning: memory may come from anywhere, CPUs are remote.
  const Report r = diagnose(host({gpu(4, 1)}, {proc("7", 4, "0-15", "0-1")}), {});
  ASSERT_NE(finding(r, 0, "topology"), nullptr) << report_text(r, false);
}

TEST(Topology, SameNumaOrUnpinnedDoesNotFire) {
  const Report same = diagnose(host({gpu(4, 1)}, {proc("1", 4, "48-95", "1")}), {});
  EXPECT_EQ(finding(same, 0, "topology"), nullptr) << report_text(same, false);
  const Report all = diagnose(host({gpu(4, 1)}, {proc("1", 4, "0-95", "0-1")}), {});
  EXPECT_EQ(finding(all, 0, "topology"), nullptr) << report_text(all, false);
}

TEST(Topology, MultiGpuProcessOverNvlinkDoesNotFire) {
  const Report r = diagnose(host({gpu(0, 0), gpu(4, 1)}, {proc("9", 0, "0-95", "0-1"), proc("9", 4, "0-95", "0-1")}), {});
  EXPECT_EQ(finding(r, 0, "topology"), nullptr) << report_text(r, false);
  EXPECT_EQ(finding(r, 1, "topology"), nullptr);
}

TEST(Topology, MultiGpuProcessWithoutNvlinkFires) {
  const Report r = diagnose(
      host({gpu(0, 0, 8, "SYS"), gpu(4, 1, 8, "SYS")}, {proc("9", 0, "0-95", "0-1"), proc("9", 4, "0-95", "0-1")}), {});
  const Finding* f = finding(r, 0, "topology");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  ASSERT_EQ(f->evidence.size(), 1u);
  EXPECT_EQ(f->evidence[0].signal, "gpu_topology_path");
  EXPECT_EQ(f->evidence[0].value, 50);  // SYS
  EXPECT_NE(f->evidence[0].detail.find("path SYS to GPU 4"), std::string::npos) << f->evidence[0].detail;
  EXPECT_NE(f->action.find("CUDA_VISIBLE_DEVICES"), std::string::npos);
  EXPECT_NE(finding(r, 1, "topology"), nullptr);
  // One process per GPU: not one job as far as the data says; a PCIe switch (PXB) is fine.
  const Report apart = diagnose(
      host({gpu(0, 0, 8, "SYS"), gpu(4, 1, 8, "SYS")}, {proc("1", 0, "0-95", "0-1"), proc("2", 4, "0-95", "0-1")}), {});
  EXPECT_EQ(finding(apart, 0, "topology"), nullptr);
  const Report pxb = diagnose(
      host({gpu(0, 0, 8, "PXB"), gpu(1, 0, 8, "PXB")}, {proc("9", 0, "0-95", "0-1"), proc("9", 1, "0-95", "0-1")}), {});
  EXPECT_EQ(finding(pxb, 0, "topology"), nullptr) << report_text(pxb, false);
}

TEST(Topology, HoldsOnlyWhileTheProcessRunsOnABusyGpu) {
  // The misplaced process appears after 12 of 15 minutes: shorter than 5 min,
  // so pending, not firing.
  const Report late = diagnose(host({gpu(4, 1)}, {proc("1", 4, "0-47", "0", 48)}), {});
  const Finding* pending = finding(late, 0, "topology");
  ASSERT_NE(pending, nullptr) << report_text(late, false);
  EXPECT_EQ(pending->state, State::kPending);
  EXPECT_FALSE(late.has_findings(Severity::kInfo));
  GpuSignals idle = gpu(4, 1);
  idle.sig(GpuSig::kGpuUtil) = flat(0.0);
  const Report r = diagnose(host({idle}, {proc("1", 4, "0-47", "0")}), {});
  EXPECT_EQ(finding(r, 0, "topology"), nullptr);
}

TEST(Topology, NotAssessedWithoutAffinityOrTopology) {
  const Report none = diagnose(host({gpu(4, 1)}, {}), {});
  EXPECT_TRUE(not_assessed(none, 0));
  EXPECT_EQ(finding(none, 0, "topology"), nullptr);
  GpuSignals bare = gpu(4, 1);
  bare.sig(GpuSig::kNumaNode).clear();
  bare.peer_paths.clear();
  bare.local_cpus.clear();
  const Report no_topo = diagnose(host({bare}, {proc("1", 4, "0-47", "0")}), {});
  EXPECT_TRUE(not_assessed(no_topo, 0));
}

TEST(Topology, MappingReadsPlacementFromInfoSeries) {
  SignalSetBuilder b;
  const Series one = flat(1);
  const LabelPair util[] = {{"gpu", "4"}, {"hostname", "n1"}};
  const LabelPair numa[] = {{"gpu", "4"}, {"hostname", "n1"}};
  const LabelPair topo[] = {{"gpu", "4"}, {"hostname", "n1"}, {"peer", "5"}, {"path", "SYS"}};
  const LabelPair local[] = {{"gpu", "4"}, {"hostname", "n1"}, {"cpus", "48-95"}};
  const LabelPair affinity[] = {{"hostname", "n1"}, {"pid", "42"}, {"gpu", "4"}, {"cpus", "0-47"}, {"numa_nodes", "0"}};
  ASSERT_TRUE(b.add("gpu_utilization_ratio", util, flat(0.9)));
  ASSERT_TRUE(b.add("gpu_numa_node", numa, flat(1)));
  ASSERT_TRUE(b.add("gpu_topology_info", topo, one));
  ASSERT_TRUE(b.add("gpu_cpu_affinity_info", local, one));
  ASSERT_TRUE(b.add("host_gpu_process_affinity_info", affinity, one));
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  const HostSignals& h = set.hosts[0];
  ASSERT_EQ(h.gpus.size(), 1u);
  EXPECT_EQ(h.gpus[0].peer_paths.at("5"), "SYS");
  EXPECT_EQ(h.gpus[0].local_cpus, "48-95");
  EXPECT_EQ(h.gpus[0].sig(GpuSig::kNumaNode).back().v, 1);
  ASSERT_EQ(h.processes.size(), 1u);
  EXPECT_EQ(h.processes[0].pid, "42");
  EXPECT_EQ(h.processes[0].numa_nodes, "0");
  EXPECT_EQ(h.processes[0].present.size(), static_cast<size_t>(kPoints));
  ASSERT_NE(finding(diagnose(set, {}), 0, "topology"), nullptr);
}

TEST(Topology, CpuLists) {
  EXPECT_EQ(*parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(*parse_cpu_list(""), std::vector<int>{});
  EXPECT_FALSE(parse_cpu_list("3-1"));
  EXPECT_FALSE(parse_cpu_list("a"));
  EXPECT_FALSE(parse_cpu_list("0-999999"));
}

}  // namespace
}  // namespace gpulens::diagnose
