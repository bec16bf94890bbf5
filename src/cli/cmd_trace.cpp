// gpulens trace: analyse PyTorch profiler traces (one file per rank).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "analyze/trace/analysis.h"
#include "analyze/trace/reader.h"
#include "analyze/trace/report.h"
#include "cli/command.h"
#include "report/html_report.h"

namespace gpulens::cli {

namespace {

// Reads the files on up to one thread per core; results keep argument order.
std::vector<Result<trace::Trace>> read_all(const std::vector<std::string>& files,
                                           const trace::ReadOptions& base) {
  std::vector<Result<trace::Trace>> out(files.size(), Result<trace::Trace>(Status::ok()));
  std::atomic<size_t> next{0};
  bool tty = ::isatty(2) != 0;
  auto work = [&] {
    for (size_t i; (i = next++) < files.size();) {
      trace::ReadOptions o = base;
      struct stat st {};
      o.progress = tty && ::stat(files[i].c_str(), &st) == 0 && st.st_size > (32 << 20);
      out[i] = trace::read_trace_file(files[i], o);
    }
  };
  size_t n = std::min<size_t>(files.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t k = 1; k < n; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  return out;
}

}  // namespace

int run_trace(int argc, char** argv) {
  CLI::App app{"Analyse PyTorch profiler (Kineto) traces: GPU idle time and its causes, "
               "communication/computation overlap, kernel types, top kernels, launch delay, "
               "memory copies, launch-queue length, and a verdict per rank. Several files are "
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
  app.add_option("--top", opts.top_n, "how many top kernels to list")->capture_default_str();
  app.add_option("--kernel-wait-us", opts.kernel_wait_us,
                 "idle gaps shorter than this between kernels count as kernel (launch) wait")
      ->capture_default_str();
  app.add_option("--max-bytes", read_opts.max_bytes, "largest uncompressed JSON accepted per file")
      ->capture_default_str();
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  opts.compat_hta = compat == "hta";

  auto results = read_all(files, read_opts);
  std::vector<trace::Trace> traces;
  int failures = 0;
  for (auto& r : results) {
    if (!r) {
      std::cerr << "gpulens trace: " << r.status().message() << "\n";
      ++failures;
      continue;
    }
    traces.push_back(std::move(r).value());
  }
  if (failures) return kExitFailure;

  std::map<int, std::string> seen;
  for (size_t i = 0; i < traces.size(); ++i) {
    if (!traces[i].rank) continue;
    auto [it, fresh] = seen.emplace(*traces[i].rank, traces[i].path);
    if (!fresh) {
      std::cerr << "gpulens trace: " << it->second << " and " << traces[i].path << " are both rank "
                << it->first << "; give each rank's trace once\n";
      return kExitFailure;
    }
  }
  if (::isatty(2) && traces.size() > 1) std::cerr << "analysing " << traces.size() << " ranks\n";
  trace::JobReport job = trace::analyse_job(traces, opts);
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
    std::string title = "gpulens trace: " + (traces.empty() ? std::string() : traces.front().path);
    if (traces.size() > 1) title += " and " + std::to_string(traces.size() - 1) + " more ranks";
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
