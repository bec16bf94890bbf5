// Every evidence signal the diagnosis can emit (diagnose/evidence_names.h)
// has its chart in the HTML report, from the signal the rule judged and in
// the unit of the evidence's threshold, and an entry in the web page's
// EVIDENCE table (web/src/app.js; the browser test web_page draws some).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "diagnose/engine.h"
#include "diagnose/evidence_names.h"
#include "diagnose/mapping.h"
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
                                                       << ": map it in evidence_series (html_report.cpp)";
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

std::string app_js() {
  std::ifstream in(std::string(GPULENS_SOURCE_DIR) + "/web/src/app.js");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The keys of app.js's EVIDENCE table (one per line, "    name: ...").
std::set<std::string> web_evidence_keys() {
  const std::string js = app_js();
  const size_t from = js.find("const EVIDENCE = {");
  const size_t to = js.find("\n  };", from);
  if (from == std::string::npos || to == std::string::npos) return {};
  const std::string table = js.substr(from, to - from);
  std::set<std::string> keys;
  const std::regex key(R"(\n    ([a-z0-9_]+): )");
  for (auto it = std::sregex_iterator(table.begin(), table.end(), key); it != std::sregex_iterator(); ++it) {
    keys.insert((*it)[1]);
  }
  return keys;
}

TEST(EvidenceCharts, EveryEvidenceNameIsInTheWebPagesTable) {
  const std::set<std::string> keys = web_evidence_keys();
  ASSERT_FALSE(keys.empty()) << "no EVIDENCE table in web/src/app.js";
  for (std::string_view name : diagnose::kEvidenceNames) {
    EXPECT_TRUE(keys.contains(std::string(name)))
        << "web/src/app.js EVIDENCE has no entry for the evidence " << name
        << " (its series, or null: shown as text)";
  }
  for (const std::string& k : keys) EXPECT_TRUE(diagnose::is_evidence_name(k)) << "EVIDENCE." << k << ": no rule emits it";
}

// The page's copies of two tables the diagnosis uses: the per-lane PCIe
// rates (model/pcie.h) and the interfaces the NIC signals leave out
// (diagnose::non_ethernet_prefixes()).
TEST(EvidenceCharts, TheWebPagesTablesAreTheDiagnosis) {
  const std::string js = app_js();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(js, m, std::regex(R"(const PCIE_LANE = \[([^\]]*)\];)"))) << "no PCIE_LANE in app.js";
  std::vector<double> lanes;
  const std::string list = m[1];
  const std::regex number(R"([0-9.e]+)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), number); it != std::sregex_iterator(); ++it) {
    lanes.push_back(std::stod((*it)[0]));
  }
  ASSERT_EQ(lanes.size(), 7u) << list;
  for (int gen = 0; gen < 7; ++gen) {  // the page rounds to 0.1 MB/s
    EXPECT_NEAR(lanes[gen], pcie_lane_bytes_per_second(gen), 0.05e6) << "Gen" << gen;
  }
  ASSERT_TRUE(std::regex_search(js, m, std::regex(R"(const ethernet = .*/\^\(([a-z|]+)\)/)"))) << "no ethernet filter in app.js";
  std::string want;
  for (std::string_view p : diagnose::non_ethernet_prefixes()) want += (want.empty() ? "" : "|") + std::string(p);
  EXPECT_EQ(std::string(m[1]), want);
}

}  // namespace
}  // namespace gpulens::report
