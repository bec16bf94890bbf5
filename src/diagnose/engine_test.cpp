// Rules over synthetic SignalSets: one test per cause, the known false
// positives, missing signals, thresholds from YAML, waste.
#include "diagnose/engine.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "diagnose/report.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 61;        // 15 s x 61 = 15 min
constexpr int64_t kStep = 15'000;

Series flat(double v) { return testing::flat(v, kPoints, kStep); }
Series steps(double before, double after, int at) { return testing::steps(before, after, at, kPoints, kStep); }

// A healthy busy H100 on a quiet host.
GpuSignals healthy_gpu(const std::string& index) {
  GpuSignals g;
  g.index = index;
  g.model = "NVIDIA H100 80GB HBM3";
  g.sig(GpuSig::kGpuUtil) = flat(0.95);
  g.sig(GpuSig::kSmActive) = flat(0.8);
  g.sig(GpuSig::kSmOccupancy) = flat(0.5);
  g.sig(GpuSig::kTensorActive) = flat(0.5);
  g.sig(GpuSig::kDramActive) = flat(0.4);
  g.sig(GpuSig::kFbUsed) = flat(40e9);
  g.sig(GpuSig::kFbFree) = flat(40e9);
  g.sig(GpuSig::kPcieRxBps) = flat(2e9);
  g.sig(GpuSig::kPcieTxBps) = flat(1e9);
  g.sig(GpuSig::kLinkGen) = flat(5);
  g.sig(GpuSig::kLinkGenMax) = flat(5);
  g.sig(GpuSig::kLinkWidth) = flat(16);
  g.sig(GpuSig::kLinkWidthMax) = flat(16);
  g.sig(GpuSig::kTemperature) = flat(65);
  g.sig(GpuSig::kThermalThrottle) = flat(0);
  g.sig(GpuSig::kPowerThrottle) = flat(0);
  g.sig(GpuSig::kLastXid) = flat(0);
  return g;
}

SignalSet one_host(std::vector<GpuSignals> gpus) {
  SignalSet set;
  HostSignals h;
  h.name = "n1";
  h.gpus = std::move(gpus);
  h.sig(HostSig::kCpuBusy) = flat(0.3);
  h.sig(HostSig::kIowait) = flat(0.01);
  h.sig(HostSig::kPsiIo) = flat(0.01);
  set.hosts.push_back(std::move(h));
  set.from_ms = 0;
  set.to_ms = (kPoints - 1) * kStep;
  return set;
}

const GpuReport& gpu0(const Report& r) { return r.hosts.at(0).gpus.at(0); }
std::string top(const GpuReport& g) { return g.findings.empty() ? "-" : g.findings[0].cause; }
bool not_assessed(const GpuReport& g, std::string_view cause) {
  for (const auto& n : g.not_assessed) {
    if (n.cause == cause) return true;
  }
  return false;
}

TEST(Engine, HealthyHasNoFindings) {
  const Report r = diagnose(one_host({healthy_gpu("0")}), {});
  EXPECT_EQ(top(gpu0(r)), "-") << report_text(r, false);
  EXPECT_FALSE(r.has_findings(Severity::kInfo));
}

TEST(Engine, InputPipelineCpuWithEvidenceAndSince) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmActive) = steps(0.8, 0.2, 20);
  g.sig(GpuSig::kGpuUtil) = flat(0.5);
  SignalSet set = one_host({g});
  set.hosts[0].sig(HostSig::kCpuBusy) = steps(0.3, 0.97, 20);
  const Report r = diagnose(set, {});
  const GpuReport& gr = gpu0(r);
  ASSERT_EQ(top(gr), "input_pipeline") << report_text(r, false);
  const Finding& f = gr.findings[0];
  // The rule judges the trailing 2-minute mean: the onset shows once most of
  // those 8 points are starved.
  EXPECT_EQ(f.since_ms, 24 * kStep);
  EXPECT_EQ(f.severity, Severity::kWarning);
  ASSERT_GE(f.evidence.size(), 2u);
  EXPECT_EQ(f.evidence[0].signal, "sm_active");
  EXPECT_NEAR(f.evidence[0].value, 0.2, 0.02);
  EXPECT_EQ(f.evidence[1].signal, "host_cpu_busy");
  EXPECT_NE(f.action.find("num_workers"), std::string::npos);
  // Waste: (1 - 0.2) x 37 points x 15 s.
  EXPECT_NEAR(f.waste_gpu_seconds, 0.8 * 37 * 15, 1e-6);
}

TEST(Engine, InputPipelineStorageVariant) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmActive) = flat(0.15);
  g.sig(GpuSig::kGpuUtil) = flat(0.4);
  SignalSet set = one_host({g});
  set.hosts[0].sig(HostSig::kPsiIo) = flat(0.6);
  const Report r = diagnose(set, {});
  ASSERT_EQ(top(gpu0(r)), "input_pipeline");
  EXPECT_NE(gpu0(r).findings[0].action.find("storage"), std::string::npos);
}

TEST(Engine, HostTransferAgainstTheLinkPeak) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kPcieRxBps) = flat(55e9);  // Gen5 x16: 63 GB/s
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "host_transfer");
  // A calibrated peak raises the denominator: no longer saturated.
  Thresholds th;
  th.pcie_peak_bytes_per_second = 100e9;
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), th))), "-");
}

TEST(Engine, MemoryBandwidth) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kDramActive) = flat(0.9);
  g.sig(GpuSig::kTensorActive) = flat(0.05);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "memory_bandwidth");
}

TEST(Engine, CommunicationOverNvlink) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmActive) = flat(0.3);
  g.sig(GpuSig::kNvlinkTxBps) = flat(400e9);  // of 450 GB/s
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "communication");
}

TEST(Engine, NetworkFallbackBeatsCommunication) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmActive) = flat(0.25);
  SignalSet set = one_host({g});
  set.hosts[0].sig(HostSig::kIbRxBps) = flat(1e3);
  set.hosts[0].sig(HostSig::kNicRxBps) = flat(3e9);
  set.hosts[0].sig(HostSig::kNicSpeed) = flat(3.125e9);
  const Report r = diagnose(set, {});
  ASSERT_GE(gpu0(r).findings.size(), 2u);
  EXPECT_EQ(gpu0(r).findings[0].cause, "network_fallback");
  EXPECT_EQ(gpu0(r).findings[1].cause, "communication");
}

TEST(Engine, LowOccupancyIsKernelLaunchOnlyWithDegradedLatency) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmOccupancy) = flat(0.1);
  SignalSet set = one_host({g});
  set.hosts[0].sig(HostSig::kLatencyP99) = steps(0.08, 0.26, 15);
  const Report bad = diagnose(set, {});
  EXPECT_EQ(top(gpu0(bad)), "kernel_launch") << report_text(bad, false);

  set.hosts[0].sig(HostSig::kLatencyP99) = flat(0.08);
  const Report fine = diagnose(set, {});
  ASSERT_EQ(top(gpu0(fine)), "small_batch");
  EXPECT_EQ(gpu0(fine).findings[0].severity, Severity::kInfo);
  EXPECT_FALSE(fine.has_findings(Severity::kWarning));
}

TEST(Engine, LowOccupancyWithoutLatencyIsInfoAndSaysWhy) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmOccupancy) = flat(0.1);
  const Report r = diagnose(one_host({g}), {});
  EXPECT_EQ(top(gpu0(r)), "small_batch");
  EXPECT_FALSE(r.has_findings(Severity::kWarning));
  EXPECT_TRUE(not_assessed(gpu0(r), "kernel_launch"));
}

TEST(Engine, LatencySloOverridesTheBaseline) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kSmOccupancy) = flat(0.1);
  SignalSet set = one_host({g});
  set.hosts[0].sig(HostSig::kLatencyP99) = flat(0.4);
  Thresholds th;
  th.latency_p99_slo_seconds = 0.25;
  EXPECT_EQ(top(gpu0(diagnose(set, th))), "kernel_launch");
}

TEST(Engine, MemoryFragmentationAndPressure) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kFragmentation) = flat(0.6);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "memory_fragmentation");
  GpuSignals p = healthy_gpu("0");
  p.sig(GpuSig::kFbUsed) = flat(79e9);
  p.sig(GpuSig::kFbFree) = flat(1e9);
  EXPECT_EQ(top(gpu0(diagnose(one_host({p}), {}))), "memory_pressure");
}

TEST(Engine, ThermalThrottleOnOneGpuOfEight) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 8; ++i) gpus.push_back(healthy_gpu(std::to_string(i)));
  gpus[5].sig(GpuSig::kThermalThrottle) = flat(1);
  gpus[5].sig(GpuSig::kTemperature) = flat(91);
  const Report r = diagnose(one_host(gpus), {});
  for (const GpuReport& g : r.hosts[0].gpus) EXPECT_EQ(top(g), g.gpu == "5" ? "thermal_throttle" : "-") << g.gpu;
}

TEST(Engine, TemperatureAloneNeedsACutClock) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kThermalThrottle) = {};
  g.sig(GpuSig::kTemperature) = flat(85);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "-");  // hot but clocks unknown
  g.sig(GpuSig::kSmClock) = flat(1.2e9);
  g.sig(GpuSig::kSmClockMax) = flat(1.98e9);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "thermal_throttle");
}

TEST(Engine, PowerCap) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kPowerThrottle) = flat(1);
  g.sig(GpuSig::kPower) = flat(699);
  g.sig(GpuSig::kPowerLimit) = flat(700);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "power_cap");
}

TEST(Engine, LinkDowngradeOnlyUnderLoad) {
  GpuSignals busy = healthy_gpu("0");
  busy.sig(GpuSig::kLinkGen) = flat(3);
  EXPECT_EQ(top(gpu0(diagnose(one_host({busy}), {}))), "pcie_link_degraded");

  GpuSignals idle = healthy_gpu("0");
  idle.sig(GpuSig::kLinkGen) = flat(1);
  idle.sig(GpuSig::kGpuUtil) = flat(0);
  idle.sig(GpuSig::kSmActive) = flat(0);
  idle.sig(GpuSig::kPcieRxBps) = flat(0);
  idle.sig(GpuSig::kPcieTxBps) = flat(0);
  idle.sig(GpuSig::kFbUsed) = flat(0);
  const Report r = diagnose(one_host({idle}), {});
  EXPECT_EQ(top(gpu0(r)), "-") << report_text(r, false);
}

TEST(Engine, LinkBelowItsCalibrationUnderLoad) {
  // The slot now reports x8 as its maximum too; only the calibration file
  // remembers that the link carried x16 when its peak was measured.
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kLinkWidth) = flat(8);
  g.sig(GpuSig::kLinkWidthMax) = flat(8);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "-");
  g.sig(GpuSig::kLinkWidthCalibrated) = flat(16);
  g.sig(GpuSig::kLinkGenCalibrated) = flat(5);
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "pcie_link_degraded");
}

TEST(Engine, FailedGpuIsBlamedNotItsPeers) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 4; ++i) {
    GpuSignals g = healthy_gpu(std::to_string(i));
    g.sig(GpuSig::kGpuUtil) = steps(0.95, 0, 10);  // the job died with GPU 2
    g.sig(GpuSig::kSmActive) = steps(0.8, 0, 10);
    gpus.push_back(g);
  }
  gpus[2].sig(GpuSig::kLastXid) = steps(0, 79, 10);
  const Report r = diagnose(one_host(gpus), {});
  for (const GpuReport& g : r.hosts[0].gpus) {
    if (g.gpu == "2") {
      ASSERT_EQ(top(g), "hardware_errors");
      EXPECT_EQ(g.findings[0].severity, Severity::kCritical);
      EXPECT_EQ(g.findings[0].since_ms, 10 * kStep);
      EXPECT_NE(g.findings[0].action.find("XID 79"), std::string::npos);
    } else {
      // The peers' stall after the fault is a consequence of GPU 2.
      ASSERT_EQ(top(g), "idle") << g.gpu << report_text(r, false);
      EXPECT_EQ(g.findings[0].explained_by.cause, "hardware_errors");
      EXPECT_EQ(g.findings[0].explained_by.gpu, "2");
      EXPECT_GE(g.findings[0].since_ms, 10 * kStep);
      EXPECT_EQ(r.waste_by_cause.count("idle"), 0u);  // counted under the root
      ASSERT_FALSE(g.notes.empty());
      EXPECT_NE(g.notes[0].find("GPU 2 failed"), std::string::npos);
    }
  }
}

TEST(Engine, BurstyStarvedGpuIsStillInputPipeline) {
  GpuSignals g = healthy_gpu("0");
  Series util = flat(0), sm = flat(0);
  for (size_t i = 0; i < util.size(); ++i) {  // spurts: every third sample busy
    util[i].v = i % 3 == 0 ? 0.3 : 0.02;
    sm[i].v = i % 3 == 0 ? 0.25 : 0.01;
  }
  g.sig(GpuSig::kGpuUtil) = util;
  g.sig(GpuSig::kSmActive) = sm;
  SignalSet set = one_host({g});
  set.hosts[0].sig(HostSig::kCpuBusy) = flat(0.97);
  EXPECT_EQ(top(gpu0(diagnose(set, {}))), "input_pipeline");
}

TEST(Engine, LostGpuThatStopsReportingUtilisationIsStillFound) {
  std::vector<GpuSignals> gpus{healthy_gpu("0"), healthy_gpu("1")};
  gpus[1].sig(GpuSig::kGpuUtil).resize(10);  // silent after the fault
  gpus[1].sig(GpuSig::kSmActive).resize(10);
  gpus[1].sig(GpuSig::kGpuUp) = steps(1, 0, 10);
  const Report r = diagnose(one_host(gpus), {});
  EXPECT_EQ(top(r.hosts[0].gpus[1]), "hardware_errors");
  EXPECT_EQ(r.hosts[0].gpus[1].findings[0].severity, Severity::kCritical);
  EXPECT_EQ(top(r.hosts[0].gpus[0]), "-");
}

TEST(Engine, IdleWithMemoryHeldWastesAllOfIt) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kGpuUtil) = flat(0);
  g.sig(GpuSig::kSmActive) = flat(0);
  const Report r = diagnose(one_host({g}), {});
  ASSERT_EQ(top(gpu0(r)), "idle");
  EXPECT_NEAR(r.waste_by_cause.at("idle"), kPoints * 15.0, 1e-6);
}

TEST(Engine, MissingProfilingFieldsAreListed) {
  GpuSignals g;
  g.index = "0";
  g.sig(GpuSig::kGpuUtil) = flat(0.95);
  const Report r = diagnose(one_host({g}), {});
  for (std::string_view c : {"memory_bandwidth", "kernel_launch", "host_transfer", "hardware_errors",
                             "thermal_throttle", "memory_fragmentation", "pcie_link_degraded"}) {
    EXPECT_TRUE(not_assessed(gpu0(r), c)) << c;
  }
  const std::string json = report_json(r);
  EXPECT_NE(json.find("\"not_assessed\":[{\"cause\":"), std::string::npos);
}

TEST(Engine, ShortConditionIsNotAFinding) {
  GpuSignals g = healthy_gpu("0");
  Series frag = flat(0.1);
  for (int i = 10; i < 14; ++i) frag[static_cast<size_t>(i)].v = 0.9;  // one minute
  g.sig(GpuSig::kFragmentation) = frag;
  EXPECT_EQ(top(gpu0(diagnose(one_host({g}), {}))), "-");
}

// --- exact durations (Prometheus `for:` semantics) ------------------------

const Finding* find(const GpuReport& g, std::string_view cause) {
  for (const Finding& f : g.findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}

// Fragmentation 0.9 on points [from, to), 0.1 elsewhere (for: 5 min).
GpuSignals fragmented(int from, int to) {
  GpuSignals g = healthy_gpu("0");
  Series frag = flat(0.1);
  for (int i = from; i < to; ++i) frag[static_cast<size_t>(i)].v = 0.9;
  g.sig(GpuSig::kFragmentation) = frag;
  return g;
}

TEST(Durations, FiresOnlyAfterTheWholeDurationPendingBefore) {
  // 20 points x 15 s = 5 min of data where it held: fires.
  const Report fires = diagnose(one_host({fragmented(41, 61)}), {});
  const Finding* f = find(gpu0(fires), "memory_fragmentation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, State::kFiring);
  EXPECT_EQ(f->for_ms, 300'000);
  EXPECT_EQ(f->since_ms, 41 * kStep);
  EXPECT_TRUE(fires.has_findings(Severity::kWarning));
  // 19 points (4 min 45 s), still holding at the end: pending, not a finding yet.
  const Report pending = diagnose(one_host({fragmented(42, 61)}), {});
  f = find(gpu0(pending), "memory_fragmentation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, State::kPending);
  EXPECT_EQ(f->held_ms, 19 * kStep);
  EXPECT_EQ(f->waste_gpu_seconds, 0);
  EXPECT_FALSE(pending.has_findings(Severity::kInfo));
  EXPECT_NE(report_json(pending).find("\"state\":\"pending\",\"ongoing\":true,\"for_seconds\":300"), std::string::npos);
  EXPECT_NE(report_text(pending, false).find("PENDING  memory_fragmentation"), std::string::npos);
  // 19 points that ended before the end of the data: a blip, dropped.
  EXPECT_EQ(find(gpu0(diagnose(one_host({fragmented(20, 39)}), {})), "memory_fragmentation"), nullptr);
}

TEST(Durations, OngoingOnlyWhileTheLatestRunReachesTheLastPoint) {
  // Held to the end: ongoing. Held for 30 points that ended at point 40: it
  // fired in the window (reported, wastes time) but does not hold now.
  const Report held = diagnose(one_host({fragmented(41, 61)}), {});  // kept: `now` points into it
  const Finding* now = find(gpu0(held), "memory_fragmentation");
  ASSERT_NE(now, nullptr);
  EXPECT_TRUE(now->ongoing);
  const Report past = diagnose(one_host({fragmented(10, 40)}), {});
  const Finding* ended = find(gpu0(past), "memory_fragmentation");
  ASSERT_NE(ended, nullptr);
  EXPECT_EQ(ended->state, State::kFiring);
  EXPECT_FALSE(ended->ongoing);
  EXPECT_EQ(ended->periods.back().second, 40 * kStep);
  EXPECT_GT(ended->waste_gpu_seconds, 0);
  EXPECT_NE(report_json(past).find("\"state\":\"firing\",\"ongoing\":false"), std::string::npos);
  // A pending run holds at the last point by definition.
  const Report later = diagnose(one_host({fragmented(42, 61)}), {});
  const Finding* pending = find(gpu0(later), "memory_fragmentation");
  ASSERT_NE(pending, nullptr);
  EXPECT_TRUE(pending->ongoing);
}

TEST(Durations, WindowShorterThanTheDurationIsPendingAndSaysSo) {
  // 3 minutes of data, throttled throughout; the rule needs 5.
  SignalSet set = one_host({healthy_gpu("0")});
  GpuSignals& g = set.hosts[0].gpus[0];
  for (auto& sig : g.sigs) {
    if (sig.size() > 12) sig.resize(12);
  }
  g.sig(GpuSig::kThermalThrottle) = Series(12, Point{0, 1});
  for (int i = 0; i < 12; ++i) g.sig(GpuSig::kThermalThrottle)[static_cast<size_t>(i)].t_ms = i * kStep;
  for (auto& sig : set.hosts[0].sigs) {
    if (sig.size() > 12) sig.resize(12);
  }
  set.to_ms = 11 * kStep;
  const Report r = diagnose(set, {});
  const Finding* f = find(gpu0(r), "thermal_throttle");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, State::kPending);
  EXPECT_FALSE(r.has_findings(Severity::kWarning));
  EXPECT_NE(report_text(r, false).find("held 3m of the 5m it needs; the data covers only 3m"), std::string::npos)
      << report_text(r, false);
}

TEST(Durations, RestartGapBreaksTheRunAndStartsPendingAgain) {
  // Held 4 minutes, then no data for 10 minutes (the agent restarted), then
  // held 3 minutes to the end: neither run is 5 minutes long.
  SignalSet set = one_host({fragmented(0, 61)});
  for (auto& sig : set.hosts[0].gpus[0].sigs) {
    Series kept;
    for (const Point& p : sig) {
      if (p.t_ms < 16 * kStep || p.t_ms >= 48 * kStep) kept.push_back(p);
    }
    sig = kept;
  }
  const Report r = diagnose(set, {});
  const Finding* f = find(gpu0(r), "memory_fragmentation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->state, State::kPending);
  EXPECT_EQ(f->since_ms, 48 * kStep);
  // The same without the gap fires.
  EXPECT_EQ(find(gpu0(diagnose(one_host({fragmented(0, 61)}), {})), "memory_fragmentation")->state, State::kFiring);
}

TEST(Durations, WasteDividesByTheCoveredTimeNotTheWindowAsked) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kGpuUtil) = flat(0);
  g.sig(GpuSig::kSmActive) = flat(0);
  SignalSet set = one_host({g});
  set.from_ms = -(kPoints - 1) * kStep;  // asked for twice the time the data covers
  const Report r = diagnose(set, {});
  EXPECT_NEAR(r.covered_seconds(), kPoints * 15.0, 1e-6);
  const std::string json = report_json(r);
  EXPECT_NE(json.find("\"idle\":{\"gpu_hours\":0.254167,\"gpus_equivalent\":1}"), std::string::npos) << json;
}

TEST(Durations, ThrottlingWasteIsTheLostClock) {
  GpuSignals g = healthy_gpu("0");
  g.sig(GpuSig::kThermalThrottle) = flat(1);
  g.sig(GpuSig::kSmClock) = flat(1.2e9);
  g.sig(GpuSig::kSmClockMax) = flat(2.0e9);  // 40 % of the clock lost; SM active is 0.8
  const Report r = diagnose(one_host({g}), {});
  ASSERT_EQ(top(gpu0(r)), "thermal_throttle");
  EXPECT_NEAR(r.waste_by_cause.at("thermal_throttle"), 0.4 * kPoints * 15.0, 1e-6);
}

TEST(Fleet, TopCausesByWasteAcrossHostsWithWhoIsAffected) {
  GpuSignals idle = healthy_gpu("0");
  idle.sig(GpuSig::kGpuUtil) = flat(0);
  idle.sig(GpuSig::kSmActive) = flat(0);
  GpuSignals hot = healthy_gpu("1");
  hot.sig(GpuSig::kThermalThrottle) = flat(1);
  hot.sig(GpuSig::kSmClock) = flat(1.5e9);
  hot.sig(GpuSig::kSmClockMax) = flat(2.0e9);
  SignalSet set = one_host({hot});
  GpuSignals idle1 = idle;
  idle1.index = "1";
  SignalSet b = one_host({idle, idle1});  // another host: the hot GPU is not their job's
  b.hosts[0].name = "n2";
  set.hosts.push_back(b.hosts[0]);
  const Report r = diagnose(set, {});
  const std::vector<FleetCause> fleet = fleet_summary(r);
  ASSERT_GE(fleet.size(), 2u);
  EXPECT_EQ(fleet[0].cause, "idle");
  EXPECT_EQ(fleet[0].gpus, 2u);
  EXPECT_EQ(fleet[0].hosts, (std::vector<std::string>{"n2"}));
  EXPECT_NEAR(fleet[0].gpus_equivalent, 2.0, 1e-6);  // two GPUs idle the whole time
  EXPECT_EQ(fleet[1].cause, "thermal_throttle");
  EXPECT_EQ(fleet[1].hosts, (std::vector<std::string>{"n1"}));
  EXPECT_NEAR(fleet[1].gpus_equivalent, 0.25, 1e-6);  // a quarter of the clock lost
  const std::string text = report_text(r, false);
  EXPECT_NE(text.find("fixing the idle GPUs is worth 2.0 GPUs fleet-wide (0.5 GPU-hours; 2 GPUs on 1 host: n2)"),
            std::string::npos) << text;
  const std::string json = report_json(r);
  EXPECT_NE(json.find("\"fleet\":{\"hosts\":2,\"gpus\":3,\"causes\":[{\"cause\":\"idle\",\"gpu_hours\":0.508333,"
                      "\"gpus_equivalent\":2,\"gpus_affected\":2,\"hosts_affected\":1,\"hosts\":[\"n2\"]}"),
            std::string::npos) << json;
}

TEST(Thresholds, FromYaml) {
  Thresholds t;
  ASSERT_TRUE(apply_thresholds(YAML::Load("{pcie_util: 0.7, pcie_for: 5m}"), t).is_ok());
  EXPECT_DOUBLE_EQ(t.pcie_util, 0.7);
  EXPECT_EQ(t.pcie_for_ms, 300'000);
  Status bad = apply_thresholds(YAML::Load("{pcie_utl: 0.7}"), t);
  EXPECT_NE(bad.message().find("diagnose.pcie_utl: unknown threshold"), std::string::npos);
  bad = apply_thresholds(YAML::Load("{pcie_util: high}"), t);
  EXPECT_NE(bad.message().find("expected a non-negative number"), std::string::npos);
}

TEST(Report, JsonHasTheStableShape) {
  GpuSignals g = healthy_gpu("0");
  g.uuid = "GPU-abc";
  g.sig(GpuSig::kFragmentation) = flat(0.6);
  const std::string json = report_json(diagnose(one_host({g}), {}));
  EXPECT_EQ(json.rfind("{\"hosts\":[{\"host\":\"n1\",\"gpus\":[{\"gpu\":\"0\",\"uuid\":\"GPU-abc\",\"findings\":"
                       "[{\"cause\":\"memory_fragmentation\",\"layer\":\"memory\",\"severity\":\"warning\","
                       "\"since\":\"1970-01-01T00:00:00Z\",\"evidence\":[{\"signal\":\"fragmentation\","
                       "\"value\":0.6,\"threshold\":0.5,\"detail\":\"judged: slack, 1 - allocated/reserved (no "
                       "allocator snapshot pushed; slack also counts whole free segments, so it overstates "
                       "fragmentation)\"}],\"action\":\"",
                       0),
            0u)
      << json;
}

}  // namespace
}  // namespace gpulens::diagnose
