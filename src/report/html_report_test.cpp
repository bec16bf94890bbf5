// The HTML report page and its evidence series: one self-contained file,
// data that cannot close its script, series per evidence signal, bounded.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "diagnose/mapping.h"
#include "diagnose/report.h"
#include "report/html_report.h"
#include "util/json.h"

namespace gpulens::report {
namespace {

TEST(HtmlReport, InlinesTheLibraryAndTheDataSafely) {
  const std::string page = html_report("a <b> report", R"({"kind":"trace","x":"</script><script>alert(1)</script>"})");
  EXPECT_TRUE(page.starts_with("<!doctype html>"));
  EXPECT_NE(page.find("<title>a &lt;b&gt; report</title>"), std::string::npos);
  EXPECT_NE(page.find("uPlot"), std::string::npos);                  // the chart library, inlined
  EXPECT_NE(page.find("gpulens-data"), std::string::npos);
  EXPECT_EQ(page.find("</script><script>alert"), std::string::npos);  // the data cannot end its script
  EXPECT_NE(page.find(R"(\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e)"), std::string::npos);
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);
}

TEST(HtmlReport, ASimulatedReportSaysSoAtTheTopWithoutScript) {
  diagnose::Report r;
  r.hosts.push_back({.host = "n<1>", .simulated = true, .scenario = "xid-79"});
  const std::string banner = diagnose::simulated_banner(r);
  const std::string page = html_report("SIMULATED: gpulens diagnose", diagnose_report_data(r, {}, "replay x.om"), banner);
  const size_t at = page.find("<p class=\"banner\" id=\"simulated\">SIMULATED DATA: host n&lt;1&gt; (scenario xid-79)");
  ASSERT_NE(at, std::string::npos) << page.substr(0, 2000);
  EXPECT_LT(at, page.find("<main id=\"report\">"));  // before everything the script draws
  EXPECT_NE(page.find(R"("simulated":true)"), std::string::npos);  // and in the data the script reads
  EXPECT_EQ(html_report("t", R"({"kind":"diagnose"})").find("id=\"simulated\""), std::string::npos);
}

// The data script holds one "<" only: its own end tag. "<!--" followed by
// "<script>" would otherwise put the parser in a state where "</script>"
// no longer ends the element, and the page stays blank.
TEST(HtmlReport, HostileStringsCannotBreakTheDataScript) {
  std::string data = "{\"kind\":\"diagnose\",\"source\":";
  const std::string hostile = "<!--<script>x</script><!-- & \"q\" 'a' </SCRIPT >";
  append_json_string(data, hostile);
  data += "}";
  const std::string page = html_report("<!--<script>", data);
  const size_t open = page.find("id=\"gpulens-data\">");
  ASSERT_NE(open, std::string::npos);
  const size_t body = open + std::string("id=\"gpulens-data\">").size();
  const size_t close = page.find("</script>", body);
  ASSERT_NE(close, std::string::npos);
  const std::string inlined = page.substr(body, close - body);
  EXPECT_EQ(inlined.find_first_of("<>&"), std::string::npos) << inlined;
  // The same text to a JSON parser.
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(inlined).get(doc)) << inlined;
  std::string_view source;
  ASSERT_FALSE(doc["source"].get_string().get(source));
  EXPECT_EQ(source, hostile);
  EXPECT_NE(page.find("<title>&lt;!--&lt;script&gt;</title>"), std::string::npos);
}

diagnose::SignalSet one_gpu() {
  diagnose::SignalSet set;
  set.from_ms = 0;
  set.to_ms = 3'600'000;
  diagnose::HostSignals h;
  h.name = "node-a";
  diagnose::GpuSignals g;
  g.index = "5";
  for (int64_t t = 0; t <= 3'600'000; t += 1000) {
    g.sig(diagnose::GpuSig::kTemperature).push_back({t, 85});
    g.sig(diagnose::GpuSig::kSmClock).push_back({t, 1.4e9});
    g.sig(diagnose::GpuSig::kSmClockMax).push_back({t, 2.0e9});
  }
  h.gpus.push_back(std::move(g));
  set.hosts.push_back(std::move(h));
  return set;
}

diagnose::Report thermal_report() {
  diagnose::Report r;
  r.from_ms = 0;
  r.to_ms = 3'600'000;
  diagnose::Finding f;
  f.cause = "thermal_throttle";
  f.evidence = {{"temperature", 85, 80, ""}, {"sm_clock_ratio", 0.7, 0.9, ""}, {"gpu_topology_path", 1, 0, "SYS"}};
  diagnose::GpuReport g;
  g.gpu = "5";
  g.findings.push_back(f);
  r.hosts.push_back({"node-a", {g}});
  return r;
}

TEST(HtmlReport, EvidenceSeriesPerSignalBounded) {
  EvidencePlots plots;
  add_evidence_plots(one_gpu(), thermal_report(), plots);
  ASSERT_EQ(plots.size(), 2u);  // the topology fact has no series
  EXPECT_EQ(plots[0].signal, "temperature");
  EXPECT_EQ(plots[0].threshold, 80);
  EXPECT_LE(plots[0].points.size(), kMaxPlotPoints);
  EXPECT_GE(plots[0].points.size(), kMaxPlotPoints - 2);
  EXPECT_DOUBLE_EQ(plots[0].points[10].v, 85);
  EXPECT_EQ(plots[1].signal, "sm_clock_ratio");
  EXPECT_NEAR(plots[1].points[0].v, 0.7, 1e-12);  // SM clock over its maximum
  const std::string data = diagnose_report_data(thermal_report(), plots, "replay x.om");
  EXPECT_TRUE(data.starts_with(R"({"kind":"diagnose","source":"replay x.om","report":{)"));
  EXPECT_NE(data.find(R"("signal":"sm_clock_ratio","threshold":0.9,"t":[0,)"), std::string::npos) << data.substr(0, 300);
}

TEST(HtmlReport, AnotherHostsFindingsAreNotPlottedFromThisBatch) {
  diagnose::Report r = thermal_report();
  r.hosts[0].host = "node-b";
  EvidencePlots plots;
  add_evidence_plots(one_gpu(), r, plots);
  EXPECT_TRUE(plots.empty());
}

// A DCGM health watch at FAIL (dcgm-exporter's, read by the scrape source)
// is a hardware_errors finding with evidence health_status: it has a chart,
// the worst watch's result against FAIL.
TEST(HtmlReport, FailedHealthWatchFindingHasItsSeries) {
  diagnose::SignalSetBuilder b;
  const diagnose::LabelPair ok[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"watch", "MEM"}, {"error", "DCGM_FR_OK"}};
  const diagnose::LabelPair bad[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-a"}, {"watch", "PCIE"},
                                     {"error", "DCGM_FR_PCI_REPLAY_RATE"}};
  diagnose::Series pass, fail;
  for (int64_t t = 0; t <= 120'000; t += 15'000) {
    pass.push_back({t, 0});
    fail.push_back({t, t >= 60'000 ? 20.0 : 0.0});
  }
  b.add("gpu_health_status", ok, pass, true);
  b.add("gpu_health_status", bad, fail, true);
  const diagnose::SignalSet set = b.build();
  const diagnose::Report report = diagnose::diagnose(set, diagnose::Thresholds{});
  EvidencePlots plots;
  add_evidence_plots(set, report, plots);
  const EvidencePlot* health = nullptr;
  for (const EvidencePlot& p : plots) {
    if (p.signal == "health_status") health = &p;
  }
  ASSERT_NE(health, nullptr) << diagnose::report_json(report);
  EXPECT_EQ(health->cause, "hardware_errors");
  EXPECT_EQ(health->threshold, diagnose::kHealthFail);
  ASSERT_EQ(health->points.size(), fail.size());
  EXPECT_EQ(health->points.front().v, 0);
  EXPECT_EQ(health->points.back().v, 20);  // the failed PCIE watch, not the passing MEM one
}

TEST(HtmlReport, TraceDataWrapsTheJsonDocument) {
  EXPECT_EQ(trace_report_data("{\"ranks\":[]}\n"), R"({"kind":"trace","trace":{"ranks":[]}})");
}

}  // namespace
}  // namespace gpulens::report
