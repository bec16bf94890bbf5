// gpulens trace: analyse PyTorch profiler traces (one file per rank).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "analyze/trace/files.h"
#include "analyze/trace/report.h"
#include "cli/command.h"
#include "report/html_report.h"

namespace gpulens::cli {

int run_trace(int argc, char** argv) {
  CLI::App app{"Analyse PyTorch profiler (Kineto) traces: GPU idle time and its causes, "
               "communication/computation overlap, kernel types, top kernels, launch delay, "
               "memory copies, launch-queue length, top CPU ops by self time, and a verdict per rank "
               "(a trace with CPU activities only gets its CPU ops and says it has no GPU timeline). Several files are "
               "the ranks of one job.",
               "gpulens trace"};
  std::vector<std::string> files;
  std::string format = "text", compat = "none";
  trace::Options opts;
  trace::ReadOptions read_opts;
  app.add_option("TRACE", files, "trace files (.json or .json.gz), one per rank")->required();
  std::string out_path;
  app.add_option("--format", format, "output format: text, json, or html (one self-contained file with the plots)")
      ->check(CLI::IsMember({"text", "json", "html"}))->capture_default_str();
  app.add_option("-o,--out", out_path, "write the report to this file instead of stdout");
  app.add_option("--compat", compat,
                 "definitions: none (fixed) or hta (HolisticTraceAnalysis', for comparison)")
      ->check(CLI::IsMember({"none", "hta"}))->capture_default_str();
  app.add_option("--top", opts.top_n, "how many top kernels and top CPU ops to list")->capture_default_str();
  app.add_option("--kernel-wait-us", opts.kernel_wait_us,
                 "idle gaps shorter than this between kernels count as kernel (launch) wait")
      ->capture_default_str();
  app.add_option("--max-bytes", read_opts.max_bytes, "largest uncompressed JSON accepted per file")
      ->capture_default_str();
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  opts.compat_hta = compat == "hta";

  auto analysed = trace::analyse_files(files, opts, read_opts, true);
  if (!analysed) {
    std::string m = analysed.status().message();
    for (size_t at = 0, nl; at <= m.size(); at = nl + 1) {
      nl = m.find('\n', at);
      if (nl == std::string::npos) nl = m.size();
      std::cerr << "gpulens trace: " << m.substr(at, nl - at) << "\n";
    }
    return kExitFailure;
  }
  trace::JobReport job = std::move(analysed).value();
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "gpulens trace: cannot write " << out_path << "\n";
      return kExitFailure;
    }
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  if (format == "html") {
    std::string title = "gpulens trace: " + files.front();
    if (files.size() > 1) title += " and " + std::to_string(files.size() - 1) + " more ranks";
    out << report::html_report(title, report::trace_report_data(trace::to_json(job)));
  } else {
    out << (format == "json" ? trace::to_json(job) : trace::to_text(job));
  }
  out.flush();
  if (!out) {
    std::cerr << "gpulens trace: cannot write " << (out_path.empty() ? "stdout" : out_path) << "\n";
    return kExitFailure;
  }
  if (!out_path.empty()) std::cerr << "gpulens trace: wrote " << out_path << "\n";
  return kExitOk;
}

}  // namespace gpulens::cli
