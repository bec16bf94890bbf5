// Offline HTML reports: one self-contained file each, opened from disk, with
// the data and the chart library inlined (nothing is fetched, no CDN).
//
//   std::string page = html_report("diagnose", "gpulens diagnose: replay incident.om", data_json);
//   // data_json: {"kind":"diagnose", ...}, drawn by web/src/report.js
//
//   std::string json = diagnose_report_data(report, evidence, "replay incident.om");
//   EvidencePlots plots;  add_evidence_plots(set, report, plots);   // per batch
//
// `kind` is "diagnose" or "trace": web/src/report.js draws
//   - diagnose: per host and GPU the findings with their evidence plotted
//     over the window (series, threshold, the intervals where the cause
//     held) and the waste per cause;
//   - trace: the temporal breakdown, idle by cause, kernel types, the top
//     kernels, per rank and across ranks (the `trace --format json` document).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/evidence_series.h"
#include "diagnose/signals.h"

namespace gpulens::report {

// The page: `data_json` must be a JSON object with a "kind" key. It is
// inlined through json_for_script, the title HTML-escaped: strings from
// outside (kernel names, labels, host names) cannot break the page. A
// non-empty `banner` (diagnose::simulated_banner) heads the page in plain
// HTML, shown even where the script does not run.
std::string html_report(std::string_view title, std::string_view data_json, std::string_view banner = {});

// JSON made safe to inline in a <script> element: '<', '>' and '&' written
// as \u escapes (the same data to JSON.parse).
std::string json_for_script(std::string_view json);

// One finding's evidence signal over the window, at most kMaxPlotPoints
// points (bucket means; diagnose/evidence_series.h computes them).
struct EvidencePlot {
  std::string host, gpu, cause, signal;
  double threshold = 0;
  diagnose::Series points;
};
using EvidencePlots = std::vector<EvidencePlot>;
inline constexpr size_t kMaxPlotPoints = diagnose::kMaxEvidencePoints;

// Adds the plots of every finding of `report` whose host is in `set` (call
// once per batch with that batch's signals and report). Evidence without a
// series (topology facts, a link generation never sampled) is left out.
void add_evidence_plots(const diagnose::SignalSet& set, const diagnose::Report& report, EvidencePlots& out);
// The plots of the series `report` carries (an agent's /api/v1/findings,
// read back by report_parse.h).
void add_evidence_plots(const diagnose::Report& report, EvidencePlots& out);

// {"kind":"diagnose","source":...,"report":<report_json>,"evidence":[...]}
std::string diagnose_report_data(const diagnose::Report& report, const EvidencePlots& plots, std::string_view source);

// {"kind":"trace","trace":<the trace --format json document>}
std::string trace_report_data(std::string_view trace_json);

}  // namespace gpulens::report
