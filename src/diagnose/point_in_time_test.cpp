// Diagnosis of a plain scrape (no timestamps): one point in time. Real
// formats: the dcgm-exporter exposition of tests/data/dcgm-exporter and a
// node_exporter 1.5 page captured from Debian's prometheus-node-exporter
// (tests/data/scrapes). What needs no duration is judged (hardware_errors);
// every cause with a duration is listed as not assessed with what it needs.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "diagnose/engine.h"
#include "diagnose/replay_input.h"
#include "diagnose/report.h"
#include "util/testing/temp_dir.h"

namespace gpulens::diagnose {
namespace {

const std::string kData = std::string(GPULENS_SOURCE_DIR) + "/tests/data/";
constexpr int64_t kAt = 1'764'410'400'000;  // 2025-11-29T10:00:00Z

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const NotAssessed* not_assessed(const GpuReport& g, std::string_view cause) {
  for (const NotAssessed& n : g.not_assessed) {
    if (n.cause == cause) return &n;
  }
  return nullptr;
}

TEST(PointInTime, DcgmExporterScrapeGivesTheFindingsThatNeedNoDuration) {
  ReplayInfo info;
  Result<SignalSet> set =
      load_replay_text(slurp(kData + "dcgm-exporter/golden.prom"), "dcgm.prom", info, {}, kAt);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(info.point_in_time);
  EXPECT_TRUE(set->point_in_time);
  EXPECT_TRUE(info.stats.warnings.empty());  // text 0.0.4 has no # EOF: no warning
  EXPECT_EQ(set->from_ms, kAt);
  EXPECT_EQ(set->to_ms, kAt);
  const Report r = diagnose(*set, Thresholds{});
  SCOPED_TRACE(report_text(r, false));
  EXPECT_TRUE(r.point_in_time);
  ASSERT_EQ(r.hosts.size(), 1u);
  EXPECT_EQ(r.hosts[0].host, "gpu-node-3");
  ASSERT_EQ(r.hosts[0].gpus.size(), 2u);
  // GPU 0 had XID 79 (fell off the bus): critical, at once.
  const GpuReport& g0 = r.hosts[0].gpus[0];
  ASSERT_EQ(g0.findings.size(), 1u);
  EXPECT_EQ(g0.findings[0].cause, "hardware_errors");
  EXPECT_EQ(g0.findings[0].severity, Severity::kCritical);
  EXPECT_EQ(g0.findings[0].state, State::kFiring);
  EXPECT_EQ(g0.findings[0].since_ms, kAt);
  EXPECT_EQ(g0.findings[0].waste_gpu_seconds, 0);
  EXPECT_EQ(g0.findings[0].held_ms, 0);
  EXPECT_TRUE(r.has_findings(Severity::kWarning));  // exit 3 with the default --fail-on
  // GPU 1 is well; every cause with a duration is not assessed, with it.
  const GpuReport& g1 = r.hosts[0].gpus[1];
  EXPECT_TRUE(g1.findings.empty());
  for (const GpuReport* g : {&g0, &g1}) {
    for (std::string_view cause : cause_order()) {
      if (cause == "hardware_errors") {
        EXPECT_EQ(not_assessed(*g, cause), nullptr);
        continue;
      }
      const NotAssessed* n = not_assessed(*g, cause);
      ASSERT_NE(n, nullptr) << cause;
      EXPECT_NE(n->reason.find("a plain scrape is one point in time"), std::string::npos) << n->reason;
    }
  }
  EXPECT_EQ(not_assessed(g1, "idle")->reason, "needs 10m of data; a plain scrape is one point in time");
  EXPECT_EQ(not_assessed(g1, "host_transfer")->reason, "needs 3m of data; a plain scrape is one point in time");
  const std::string json = report_json(r);
  EXPECT_NE(json.find("\"point_in_time\":true"), std::string::npos);
  const std::string text = report_text(r, false);
  EXPECT_NE(text.find("one point in time"), std::string::npos);
  EXPECT_NE(text.find("CRITICAL  hardware_errors (health)  at 2025-11-29T10:00:00Z"), std::string::npos);
  EXPECT_NE(text.find("waste: not computed from one point in time"), std::string::npos);
  EXPECT_EQ(text.find("timeline"), std::string::npos);
}

TEST(PointInTime, AConditionThatHoldsAtThePointIsSaidSo) {
  // An idle GPU holding 20 GiB: idle holds now but needs 10 minutes.
  const std::string scrape =
      "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
      "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
      "Hostname=\"n1\"} 0\n"
      "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
      "Hostname=\"n1\"} 20480\n"
      "DCGM_FI_DEV_FB_FREE{gpu=\"0\",UUID=\"GPU-a\",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\","
      "Hostname=\"n1\"} 61000\n";
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(scrape, "idle.prom", info, {}, kAt);
  ASSERT_TRUE(set.ok()) << set.status().message();
  const Report r = diagnose(*set, Thresholds{});
  const GpuReport& g = r.hosts[0].gpus[0];
  EXPECT_TRUE(g.findings.empty());
  EXPECT_FALSE(r.has_findings(Severity::kInfo));
  EXPECT_EQ(not_assessed(g, "idle")->reason,
            "needs 10m of data; a plain scrape is one point in time (its condition holds at that point)");
  EXPECT_EQ(not_assessed(g, "memory_pressure")->reason, "needs 5m of data; a plain scrape is one point in time");
}

TEST(PointInTime, NodeExporterJoinsTheGpusOfTheSameNode) {
  // dcgm-exporter's page and node_exporter's of one node, one after the other.
  const std::string both = slurp(kData + "dcgm-exporter/golden.prom") + slurp(kData + "scrapes/node-exporter-1.5.prom");
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(both, "node.prom", info, {}, kAt);
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_EQ(set->hosts.size(), 1u);
  // node_exporter's counters (CPU, PSI, disk, network) give no rate from one point.
  EXPECT_TRUE(set->hosts[0].sig(HostSig::kCpuBusy).empty());
  EXPECT_TRUE(set->hosts[0].sig(HostSig::kPsiCpu).empty());
  EXPECT_GT(info.known_series, 20u);
  const Report r = diagnose(*set, Thresholds{});
  const GpuReport& g = r.hosts[0].gpus[1];
  EXPECT_EQ(not_assessed(g, "input_pipeline")->reason, "needs 5m of data; a plain scrape is one point in time");
  ASSERT_FALSE(g.notes.empty());
  EXPECT_NE(g.notes.back().find("counters"), std::string::npos);
}

TEST(PointInTime, NodeExporterAloneHasNoGpuToJudge) {
  ReplayInfo info;
  Result<SignalSet> set =
      load_replay_text(slurp(kData + "scrapes/node-exporter-1.5.prom"), "node.prom", info, {}, kAt);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(set->point_in_time);
  EXPECT_TRUE(set->hosts.empty());
}

TEST(PointInTime, TimestampsOnSomeSamplesOnlyIsAnError) {
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(
      "gpu_up{gpu=\"0\"} 1\ngpu_up{gpu=\"1\"} 1 1764410400\ngpu_up{gpu=\"2\"} 1 1764410400\n", "mixed.prom", info,
      {}, kAt);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message(),
            "mixed.prom:1: no timestamp, but 2 later samples have one: a recording needs one on every sample, a "
            "plain scrape on none");
  // The other way round stays the recording error it was.
  set = load_replay_text("gpu_up{gpu=\"0\"} 1 1764410400\ngpu_up{gpu=\"1\"} 1\n", "rec.om", info);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("rec.om:2: sample has no timestamp"), std::string::npos);
}

TEST(PointInTime, ASeriesTwiceIsAnError) {
  ReplayInfo info;
  Result<SignalSet> set =
      load_replay_text("gpu_up{gpu=\"0\"} 1\ngpu_up{gpu=\"0\"} 0\n", "twice.prom", info, {}, kAt);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().message(),
            "twice.prom: a plain scrape (no timestamps) with series gpu_up more than once: a point in time has "
            "each series once");
}

TEST(PointInTime, AFileTakesItsModificationTime) {
  const gpulens::testing::TestDir dir;
  const std::string path = dir.file("scrape.prom");
  std::ofstream(path) << "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n\"} 0\n";
  ReplayInfo info;
  Result<SignalSet> set = load_replay(path, info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(info.point_in_time);
  EXPECT_GT(set->to_ms, kAt);  // written now
  const Report r = diagnose(*set, Thresholds{});
  ASSERT_EQ(r.hosts.size(), 1u);
  EXPECT_TRUE(r.hosts[0].gpus[0].findings.empty());
}

// The durations a plain scrape says a cause needs are the rules' own: every
// finding of every test recording fired or pended with that for_ms.
TEST(PointInTime, CauseDurationsAreTheRulesDurations) {
#ifdef GPULENS_RECORDINGS_DIR
  std::ifstream list(std::string(GPULENS_RECORDINGS_DIR) + "/expected.txt");
  std::string line;
  size_t findings = 0;
  std::set<std::string> causes;
  while (std::getline(list, line)) {
    if (line.empty() || line[0] == '#') continue;
    ReplayInfo info;
    Result<SignalSet> set =
        load_replay(std::string(GPULENS_RECORDINGS_DIR) + "/" + line.substr(0, line.find(' ')), info);
    ASSERT_TRUE(set.ok()) << set.status().message();
    const Report r = diagnose(*set, Thresholds{});
    for (const HostReport& h : r.hosts) {
      for (const GpuReport& g : h.gpus) {
        for (const Finding& f : g.findings) {
          EXPECT_EQ(f.for_ms, cause_duration_ms(f.cause, Thresholds{})) << line << " " << f.cause;
          causes.insert(f.cause);
          ++findings;
        }
      }
    }
  }
  EXPECT_GT(findings, 20u);
  EXPECT_GE(causes.size(), 12u);  // most causes are covered by the recordings
#else
  GTEST_SKIP() << "no recordings (python3 missing at build time)";
#endif
}

// A gpulens scrape with the driver's recovery action: the finding says what
// the driver asks for, in its terms, and names the XID's meaning and owner.
TEST(PointInTime, HardwareFindingSaysResetRebootOrRestart) {
  auto one = [](const std::string& body) {
    ReplayInfo info;
    Result<SignalSet> set = load_replay_text(body, "gpulens.prom", info, {}, kAt);
    EXPECT_TRUE(set.ok()) << set.status().message();
    const Report r = diagnose(*set, Thresholds{});
    EXPECT_EQ(r.hosts.size(), 1u);
    EXPECT_FALSE(r.hosts[0].gpus.empty());
    EXPECT_FALSE(r.hosts[0].gpus[0].findings.empty());
    return r.hosts[0].gpus[0].findings[0];
  };
  const std::string id = "{gpu=\"0\",gpu_uuid=\"GPU-0\",gpu_name=\"H100\"} ";
  // The driver asks for a reboot after an XID 119.
  Finding f = one("gpu_up" + id + "1\ngpu_last_xid" + id + "119\ngpu_recovery_action" + id + "2\n");
  EXPECT_EQ(f.cause, "hardware_errors");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_NE(f.action.find("GSP RPC timeout"), std::string::npos) << f.action;
  EXPECT_NE(f.action.find("usually driver"), std::string::npos) << f.action;
  EXPECT_NE(f.action.find("recovery action: reboot the node"), std::string::npos) << f.action;
  EXPECT_NE(f.action.find("RMA"), std::string::npos) << f.action;
  // Only the recovery action (a reset), no XID: critical too.
  f = one("gpu_up" + id + "1\ngpu_recovery_action" + id + "1\n");
  EXPECT_EQ(f.severity, Severity::kCritical);
  EXPECT_NE(f.action.find("reset it (nvidia-smi -r"), std::string::npos) << f.action;
  // Without a recovery action, the XID table: 13 is the application's.
  f = one("gpu_up" + id + "1\ngpu_last_xid" + id + "13\n");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_NE(f.action.find("usually application"), std::string::npos) << f.action;
  EXPECT_NE(f.action.find("restart the application"), std::string::npos) << f.action;
  EXPECT_EQ(f.action.find("RMA"), std::string::npos) << f.action;
  // XID 79 on a lost GPU: reboot, and RMA if it repeats.
  f = one("gpu_up" + id + "0\ngpu_last_xid" + id + "79\n");
  EXPECT_NE(f.action.find("reboot the node (a GPU reset is not enough)"), std::string::npos) << f.action;
  EXPECT_NE(f.action.find("RMA"), std::string::npos) << f.action;
  // Drain P2P (3) alone is a warning: a step, not a verdict.
  f = one("gpu_up" + id + "1\ngpu_recovery_action" + id + "3\n");
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_NE(f.action.find("peer-to-peer"), std::string::npos) << f.action;
}

}  // namespace
}  // namespace gpulens::diagnose
