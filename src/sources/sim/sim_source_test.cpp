// The simulator's values agree across layers and are deterministic.
#include "sources/sim/sim_source.h"
#include "model/testing/label_text.h"

#include <gtest/gtest.h>

#include "store/live.h"

namespace gpulens {
namespace {

const std::string kDir = std::string(GPULENS_SOURCE_DIR) + "/scenarios";

struct SimRun {
  SeriesRegistry reg;
  LiveStore live;
  int src = live.add_source("sim", true);
  std::unique_ptr<Source> sim;

  explicit SimRun(const std::string& scenario, uint64_t seed = 1) {
    auto s = sim::load_scenario(scenario, kDir);
    EXPECT_TRUE(s.ok()) << s.status().message();
    sim = make_sim_source(std::move(*s), seed, 1.0);
    EXPECT_TRUE(sim->open(reg).is_ok());
  }
  explicit SimRun(sim::Scenario s) {
    sim = make_sim_source(std::move(s), 1, 1.0);
    EXPECT_TRUE(sim->open(reg).is_ok());
  }
  // Samples at t = 0, step, 2*step ... until `until_ms`.
  void advance(int64_t until_ms, int64_t step_ms = 1000) {
    Frame f(reg);
    for (; t_ <= until_ms; t_ += step_ms) {
      f.clear(1'700'000'000'000 + t_);
      EXPECT_TRUE(sim->sample(f).is_ok());
      live.publish(src, f);
    }
  }
  double get(FieldId id, int gpu, std::string_view text) {
    const testing::TextKey k = testing::key_from_text(text);
    const uint32_t s = reg.slot(id, gpu, k.labels, k.part);
    return live.present(s) ? live.value(s) : -1;
  }
  double get(FieldId id, int gpu, const Labels& extra = {}) {
    uint32_t s = reg.slot(id, gpu, extra);
    return live.present(s) ? live.value(s) : -1;
  }
  int64_t t_ = 0;
};

TEST(SimSource, DeterministicForASeed) {
  SimRun a("healthy-training"), b("healthy-training"), c("healthy-training", 2);
  a.advance(10'000);
  b.advance(10'000);
  c.advance(10'000);
  EXPECT_EQ(a.get(FieldId::kGpuPower, 3), b.get(FieldId::kGpuPower, 3));
  EXPECT_NE(a.get(FieldId::kGpuPower, 3), c.get(FieldId::kGpuPower, 3));
  EXPECT_EQ(a.reg.gpu(0)->uuid, b.reg.gpu(0)->uuid);
}

TEST(SimSource, HealthyTrainingIsBusyEverywhere) {
  SimRun r("healthy-training");
  r.advance(5'000);
  for (int g = 0; g < 8; ++g) {
    EXPECT_GT(r.get(FieldId::kGpuSmActive, g), 0.75);
    EXPECT_GT(r.get(FieldId::kGpuSmOccupancy, g), 0.3);
    EXPECT_EQ(r.get(FieldId::kGpuUp, g), 1);
    EXPECT_EQ(r.get(FieldId::kGpuPcieLinkGen, g), 5);
    EXPECT_LE(r.get(FieldId::kGpuPower, g), r.get(FieldId::kGpuPowerLimit, g));
  }
}

TEST(SimSource, StarvedPipelineShowsOnHostAndGpu) {
  SimRun r("input-pipeline-cpu");
  double sm = 0;
  const int n = 60;
  for (int i = 0; i < n; ++i) {
    r.advance(i * 1000);
    sm += r.get(FieldId::kGpuSmActive, 0);
  }
  EXPECT_LT(sm / n, 0.45);
  const double busy = r.get(FieldId::kHostCpuSeconds, kNodeEntity, Labels{{"mode", "user"}}) +
                      r.get(FieldId::kHostCpuSeconds, kNodeEntity, Labels{{"mode", "system"}});
  const double idle = r.get(FieldId::kHostCpuSeconds, kNodeEntity, Labels{{"mode", "idle"}});
  EXPECT_GT(busy, 10 * idle);
  EXPECT_LT(r.get(FieldId::kGpuPcieRxUtil, 0), 0.1);
}

TEST(SimSource, XidLosesOneGpuAndStallsPeers) {
  SimRun r("xid-79");
  r.advance(60'000);
  EXPECT_EQ(r.get(FieldId::kGpuUp, 4), 1);
  EXPECT_EQ(r.get(FieldId::kGpuXidErrors, 4, Labels{{"xid", "79"}}), -1);  // not yet
  r.advance(180'000);
  EXPECT_EQ(r.get(FieldId::kGpuUp, 4), 0);
  EXPECT_EQ(r.get(FieldId::kGpuXidErrors, 4, Labels{{"xid", "79"}}), 1);
  EXPECT_EQ(r.get(FieldId::kGpuLastXid, 4), 79);
  EXPECT_EQ(r.get(FieldId::kGpuPower, 4), -1);  // a lost GPU reports nothing else
  EXPECT_EQ(r.get(FieldId::kGpuUp, 3), 1);
  EXPECT_GT(r.get(FieldId::kGpuUtilization, 3), 0.9);
  EXPECT_LT(r.get(FieldId::kGpuSmActive, 3), 0.05);
}

// A scenario job with an id: its GPUs carry gpu_job_info with their ranks,
// the lost GPU's too; a GPU outside the job none.
TEST(SimSource, JobIdGivesEachOfItsGpusItsRank) {
  auto s = sim::parse_scenario(
      "name: x\nnode: {gpus: 4}\njob: {gpus: [0, 2, 3], id: run-7, source: environment, first_rank: 8, world_size: 16}\n"
      "phases: [{duration: 1h, workload: {kind: training, duty: 0.9}}]\nfaults: [{kind: xid, xid: 79, gpu: 3, after: 1m}]\n",
      "j.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  SimRun r(std::move(*s));
  r.advance(120'000);
  auto job = [](int rank, int local) {
    return "job_id=\"run-7\",source=\"environment\",rank=\"" + std::to_string(rank) + "\",local_rank=\"" +
           std::to_string(local) + "\",world_size=\"16\"";
  };
  EXPECT_EQ(r.get(FieldId::kGpuJobInfo, 0, job(8, 0)), 1);
  EXPECT_EQ(r.get(FieldId::kGpuJobInfo, 2, job(9, 1)), 1);
  EXPECT_EQ(r.get(FieldId::kGpuUp, 3), 0);
  EXPECT_EQ(r.get(FieldId::kGpuJobInfo, 3, job(10, 2)), 1);  // lost, still its job's
  EXPECT_EQ(r.reg.slots_of(FieldId::kGpuJobInfo).size(), 3u);  // GPU 1 is in no job
}

TEST(SimSource, HangStallsEveryGpuWithNoneLost) {
  SimRun r("nccl-hang");
  r.advance(120'000, 10'000);
  EXPECT_GT(r.get(FieldId::kGpuSmActive, 0), 0.5);  // before the hang
  r.advance(300'000, 10'000);
  for (int g = 0; g < 8; ++g) {
    EXPECT_EQ(r.get(FieldId::kGpuUp, g), 1);
    EXPECT_GT(r.get(FieldId::kGpuUtilization, g), 0.9);
    EXPECT_LT(r.get(FieldId::kGpuSmActive, g), 0.05);
  }
}

TEST(SimSource, ThermalFaultOnlyOnItsGpu) {
  SimRun r("thermal-throttle-one-gpu");
  r.advance(120'000, 10'000);
  EXPECT_EQ(r.get(FieldId::kGpuClockEventActive, 5, Labels{{"reason", "sw_thermal"}}), 1);
  EXPECT_GT(r.get(FieldId::kGpuTemperature, 5), 85);
  EXPECT_LT(r.get(FieldId::kGpuSmClock, 5), 0.75 * r.get(FieldId::kGpuSmClockMax, 5));
  for (int g : {0, 4, 6}) {
    EXPECT_EQ(r.get(FieldId::kGpuClockEventActive, g, Labels{{"reason", "sw_thermal"}}), 0);
    EXPECT_LT(r.get(FieldId::kGpuTemperature, g), 80);
  }
  EXPECT_GT(r.get(FieldId::kGpuClockEventSeconds, 5, Labels{{"reason", "hw_thermal"}}), 30);
}

TEST(SimSource, IdleLinkDownshiftsDegradedLinkStaysLow) {
  SimRun r("pcie-link-degraded");
  r.advance(5'000);
  EXPECT_EQ(r.get(FieldId::kGpuPcieLinkGen, 2), 3);
  EXPECT_EQ(r.get(FieldId::kGpuPcieLinkWidth, 2), 8);
  EXPECT_EQ(r.get(FieldId::kGpuPcieLinkGenMax, 2), 5);
  EXPECT_GT(r.get(FieldId::kGpuUtilization, 2), 0.8);
  EXPECT_EQ(r.get(FieldId::kGpuPcieLinkGen, 6), 1);  // idle: down-shifted by design
  EXPECT_LT(r.get(FieldId::kGpuUtilization, 6), 0.05);
}

TEST(SimSource, CountersIntegrateRates) {
  SimRun r("pcie-saturated-h2d");
  r.advance(0);
  const double b0 = r.get(FieldId::kGpuPcieRxBytes, 0);
  r.advance(10'000);
  const double rate = (r.get(FieldId::kGpuPcieRxBytes, 0) - b0) / 10.0;
  EXPECT_NEAR(rate, 54e9, 3e9);
  EXPECT_GT(r.get(FieldId::kGpuPcieRxUtil, 0), 0.8);
}

TEST(SimSource, LatencyHistogramMatchesScenarioQuantiles) {
  SimRun r("small-batch-inference");
  r.advance(60'000);
  const double count = r.get(FieldId::kServingLatency, kNodeEntity, "count");
  EXPECT_NEAR(count, 60 * 60, 60);
  // p99 = 45 ms: about 99 % of requests below the 50 ms bucket, fewer below 25 ms.
  const double le50 = r.get(FieldId::kServingLatency, kNodeEntity, Labels{{"le", "0.05"}});
  EXPECT_GT(le50 / count, 0.98);
  EXPECT_LT(r.get(FieldId::kServingLatency, kNodeEntity, Labels{{"le", "0.025"}}) / count, 0.6);
  EXPECT_EQ(r.get(FieldId::kServingLatency, kNodeEntity, Labels{{"le", "+Inf"}}), count);
}

TEST(SimSource, NcclFallbackLoadsEthernetNotInfiniband) {
  SimRun r("nccl-tcp-fallback");
  r.advance(0);
  const double eth0 = r.get(FieldId::kHostNetworkReceiveBytes, kNodeEntity, Labels{{"device", "eth0"}});
  const double ib0 = r.get(FieldId::kHostInfinibandReceiveBytes, kNodeEntity, Labels{{"device", "mlx5_0"}, {"port", "1"}});
  r.advance(10'000);
  const double eth_rate = (r.get(FieldId::kHostNetworkReceiveBytes, kNodeEntity, Labels{{"device", "eth0"}}) - eth0) / 10;
  const double ib_rate =
      (r.get(FieldId::kHostInfinibandReceiveBytes, kNodeEntity, Labels{{"device", "mlx5_0"}, {"port", "1"}}) - ib0) / 10;
  EXPECT_GT(eth_rate, 0.9 * r.get(FieldId::kHostNetworkSpeed, kNodeEntity, Labels{{"device", "eth0"}}));
  EXPECT_EQ(ib_rate, 0);
}

TEST(SimSource, JobPinnedOffItsGpusNode) {
  SimRun r("topology-cross-numa");
  r.advance(0);
  EXPECT_EQ(r.get(FieldId::kGpuNumaNode, 4), 1);
  EXPECT_EQ(r.get(FieldId::kGpuCpuAffinity, 4, Labels{{"cpus", "48-95"}}), 1);
  EXPECT_EQ(r.get(FieldId::kGpuTopology, 4, Labels{{"peer", "0"}, {"path", "NVLINK"}}), 1);
  // The job's process on GPU 4 is pinned to node 0; GPU 0's runs at home.
  EXPECT_EQ(r.get(FieldId::kHostProcessCpuAffinity, kNodeEntity, Labels{{"pid", "4004"}, {"gpu", "4"}, {"cpus", "0-47"}, {"numa_nodes", "0"}}), 1);
  EXPECT_EQ(r.get(FieldId::kHostProcessCpuAffinity, kNodeEntity, Labels{{"pid", "3000"}, {"gpu", "0"}, {"cpus", "0-47"}, {"numa_nodes", "0"}}), 1);
}

TEST(SimSource, PcieLinksAndOneProcessJob) {
  auto s = sim::parse_scenario("name: x\nnode: {gpus: 4, cpus: 64, gpu_links: pcie}\n"
                               "job: {gpus: [1, 2], processes: one}\nphases: [{duration: 1m}]\n", "x");
  ASSERT_TRUE(s.ok()) << s.status().message();
  SimRun r(std::move(*s));
  r.advance(0);
  EXPECT_EQ(r.get(FieldId::kGpuTopology, 1, Labels{{"peer", "0"}, {"path", "NODE"}}), 1);
  EXPECT_EQ(r.get(FieldId::kGpuTopology, 1, Labels{{"peer", "2"}, {"path", "SYS"}}), 1);
  EXPECT_EQ(r.get(FieldId::kGpuNvlinkUtil, 1), -1);  // no NVLink at all
  // One process (pid 4001) on both GPUs, allowed on both of their nodes.
  EXPECT_EQ(r.get(FieldId::kHostProcessCpuAffinity, kNodeEntity, Labels{{"pid", "4001"}, {"gpu", "1"}, {"cpus", "0-63"}, {"numa_nodes", "0,1"}}), 1);
  EXPECT_EQ(r.get(FieldId::kHostProcessCpuAffinity, kNodeEntity, Labels{{"pid", "4001"}, {"gpu", "2"}, {"cpus", "0-63"}, {"numa_nodes", "0,1"}}), 1);
  EXPECT_EQ(r.get(FieldId::kHostProcessCpuAffinity, kNodeEntity, Labels{{"pid", "3000"}, {"gpu", "0"}, {"cpus", "0-31"}, {"numa_nodes", "0"}}), 1);
}

TEST(SimSource, AllocatorValuesArriveThroughThePushPathWithThePid) {
  SimRun r("allocator-fragmentation");
  r.advance(15 * 60'000, 30'000);  // into the fragmented phase
  for (int g = 0; g < 8; ++g) {
    const std::string pid = "pid=\"" + std::to_string(3000 + g) + "\"";
    // Joined by the push receiver: the process's pid is a label, as a real push has.
    EXPECT_EQ(r.get(FieldId::kGpuMemoryFragmentation, g), -1);
    const double slack = r.get(FieldId::kGpuMemoryFragmentation, g, pid);
    EXPECT_GT(slack, 0.55) << g;
    const double ext = r.get(FieldId::kGpuAllocatorExternalFragmentation, g, pid + ",pool=\"large\",stream=\"0\"");
    EXPECT_GT(ext, 0.5) << g;
    const double reserved = r.get(FieldId::kGpuAllocatorReserved, g, pid);
    const double allocated = r.get(FieldId::kGpuAllocatorAllocated, g, pid);
    EXPECT_NEAR(1 - allocated / reserved, slack, 1e-9);
    EXPECT_GT(r.get(FieldId::kGpuAllocatorRetries, g, pid), 0);
  }
  // The simulator's private store adds none of the receiver's own series.
  EXPECT_EQ(r.get(FieldId::kAgentPushGroups, kNodeEntity), -1);
}

TEST(SimSource, BrokenScenarioReportsOnOpen) {
  SourceOptions o;
  o.sim.scenario = "does-not-exist";
  o.sim.scenario_dir = kDir;
  SeriesRegistry reg;
  Status s = make_sim_source(o)->open(reg);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("does-not-exist"), std::string::npos);
}

}  // namespace
}  // namespace gpulens
