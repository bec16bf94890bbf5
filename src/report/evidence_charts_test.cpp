// Every evidence signal the diagnosis can emit (diagnose/evidence_names.h)
// has its chart in the HTML report, from the signal the rule judged and in
// the unit of the evidence's threshold; the findings JSON carries the same
// series for the web page (the browser test web_page draws some).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "diagnose/engine.h"
#include "diagnose/evidence_names.h"
#include "diagnose/evidence_series.h"
#include "diagnose/report.h"
#include "model/pcie.h"
#include "report/html_report.h"

namespace gpulens::report {
namespace {

using diagnose::GpuSig;
using diagnose::HostSig;

// Placement facts with no series; their evidence detail says them.
const std::set<std::string_view> kNoSeries = {"gpu_topology_path"};

// One GPU with every signal, each at its own constant value (2 + its
// index; host signals 100 + index), the PCIe link at Gen4 x8 of Gen5 x16.
diagnose::SignalSet every_signal() {
  diagnose::SignalSet set;
  set.from_ms = 0;
  set.to_ms = 600'000;
  diagnose::HostSignals h;
  h.name = "node-a";
  diagnose::GpuSignals g;
  g.index = "0";
  auto value = [](GpuSig s) {
    switch (s) {
      case GpuSig::kLinkGen: return 4.0;
      case GpuSig::kLinkGenMax: return 5.0;
      case GpuSig::kLinkWidth: return 8.0;
      case GpuSig::kLinkWidthMax: return 16.0;
      default: return 2.0 + static_cast<double>(s);
    }
  };
  for (int64_t t = 0; t <= 600'000; t += 15'000) {
    for (size_t i = 0; i < diagnose::kGpuSigCount; ++i) g.sigs[i].push_back({t, value(static_cast<GpuSig>(i))});
    for (size_t i = 0; i < diagnose::kHostSigCount; ++i) h.sigs[i].push_back({t, 100.0 + static_cast<double>(i)});
  }
  h.gpus.push_back(std::move(g));
  set.hosts.push_back(std::move(h));
  return set;
}

// One finding carrying every evidence name.
diagnose::Report every_evidence() {
  diagnose::Report r;
  r.from_ms = 0;
  r.to_ms = 600'000;
  diagnose::Finding f;
  f.cause = "input_pipeline";
  for (std::string_view name : diagnose::kEvidenceNames) f.evidence.push_back({std::string(name), 1, 1, ""});
  diagnose::GpuReport g;
  g.gpu = "0";
  g.findings.push_back(f);
  r.hosts.push_back({"node-a", {g}});
  return r;
}

TEST(EvidenceCharts, EveryEvidenceNameHasASeriesInTheReport) {
  EvidencePlots plots;
  add_evidence_plots(every_signal(), every_evidence(), plots);
  std::set<std::string> charted;
  for (const EvidencePlot& p : plots) {
    EXPECT_FALSE(p.points.empty()) << p.signal;
    charted.insert(p.signal);
  }
  for (std::string_view name : diagnose::kEvidenceNames) {
    if (kNoSeries.contains(name)) {
      EXPECT_FALSE(charted.contains(std::string(name))) << name;
    } else {
      EXPECT_TRUE(charted.contains(std::string(name))) << "no chart for the evidence " << name
                                                       << ": map it in judged_series (diagnose/evidence_series.cpp)";
    }
  }
}

// The series is the signal the rule judged, in the unit of the threshold.
TEST(EvidenceCharts, SeriesAreTheJudgedSignals) {
  EvidencePlots plots;
  add_evidence_plots(every_signal(), every_evidence(), plots);
  auto first = [&](std::string_view name) {
    for (const EvidencePlot& p : plots) {
      if (p.signal == name && !p.points.empty()) return p.points.front().v;
    }
    return std::nan("");
  };
  auto gpu = [](GpuSig s) { return 2.0 + static_cast<double>(s); };
  auto host = [](HostSig s) { return 100.0 + static_cast<double>(s); };
  EXPECT_EQ(first("sm_active"), gpu(GpuSig::kSmActive));
  EXPECT_EQ(first("gr_engine_active"), gpu(GpuSig::kGrActive));
  EXPECT_EQ(first("gpu_util"), gpu(GpuSig::kGpuUtil));
  EXPECT_EQ(first("latency_p99"), host(HostSig::kLatencyP99));    // seconds, as the SLO
  EXPECT_EQ(first("latency_mean"), host(HostSig::kLatencyMean));
  EXPECT_EQ(first("host_cpu_busy"), host(HostSig::kCpuBusy));
  // The current link, judged against the calibrated one (the threshold).
  EXPECT_EQ(first("link_gen_calibrated"), 4);
  EXPECT_EQ(first("link_width_calibrated"), 8);
  EXPECT_EQ(first("gpu_numa_node"), gpu(GpuSig::kNumaNode));
  // Traffic over the full link (Gen5 x16), not over the measured peak.
  const double bps = std::max(gpu(GpuSig::kPcieRxBps), gpu(GpuSig::kPcieTxBps));
  EXPECT_DOUBLE_EQ(first("pcie_util_full_link"), bps / pcie_link_bytes_per_second(5, 16));
  EXPECT_DOUBLE_EQ(first("pcie_util"), std::max(gpu(GpuSig::kPcieRxUtil), gpu(GpuSig::kPcieTxUtil)));
}

// The findings JSON (/api/v1/findings, diagnose --format json) carries the
// same series, bounded: the web page draws them instead of recomputing them.
TEST(EvidenceCharts, TheFindingsJsonCarriesEachSeriesBounded) {
  // Two hours at one point a second: far more than a chart's points.
  diagnose::SignalSet set;
  set.from_ms = 0;
  set.to_ms = 7'200'000;
  diagnose::HostSignals h;
  h.name = "node-a";
  diagnose::GpuSignals g;
  g.index = "0";
  for (int64_t t = 0; t <= set.to_ms; t += 1000) {
    g.sigs[static_cast<size_t>(GpuSig::kTemperature)].push_back({t, t < 3'600'000 ? 60.0 : 90.0});
  }
  h.gpus.push_back(std::move(g));
  set.hosts.push_back(std::move(h));
  diagnose::Report r = every_evidence();
  r.hosts[0].gpus[0].findings[0].evidence = {{"temperature", 90, 85, ""}, {"gpu_topology_path", 4, 3, "path SYS"}};
  diagnose::attach_evidence_series(set, r);
  const auto& ev = r.hosts[0].gpus[0].findings[0].evidence;
  ASSERT_FALSE(ev[0].series.empty());
  EXPECT_LE(ev[0].series.size(), diagnose::kMaxEvidencePoints);
  EXPECT_GE(ev[0].series.size(), diagnose::kMaxEvidencePoints - 1);
  EXPECT_EQ(ev[0].series.front().v, 60);  // bucket means of the signal
  EXPECT_EQ(ev[0].series.back().v, 90);
  EXPECT_TRUE(ev[1].series.empty());  // a fact: no series
  // The HTML report's plot is the same series.
  EvidencePlots plots;
  add_evidence_plots(set, r, plots);
  ASSERT_EQ(plots.size(), 1u);
  EXPECT_EQ(plots[0].points.size(), ev[0].series.size());
  const std::string json = diagnose::report_json(r);
  const size_t at = json.find("\"signal\":\"temperature\"");
  ASSERT_NE(at, std::string::npos) << json;
  const size_t series = json.find("\"series\":{\"t\":[0,", at);
  ASSERT_NE(series, std::string::npos) << json.substr(at, 200);
  EXPECT_LT(series, json.find("\"signal\":\"gpu_topology_path\""));
  EXPECT_NE(json.find("],\"v\":[60,", series), std::string::npos);
  EXPECT_LT(json.size(), 40'000u);  // 600 times and values, not 7200
  // The topology fact carries no series.
  EXPECT_EQ(json.find("\"series\"", json.find("\"signal\":\"gpu_topology_path\"")), std::string::npos);
}

}  // namespace
}  // namespace gpulens::report
