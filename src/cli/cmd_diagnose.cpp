// `gpulens diagnose`: name why each GPU is not doing useful work, from a
// recording (--replay) or a Prometheus-compatible server (--prometheus).
// The diagnosis lives in src/diagnose.
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/agent_findings.h"
#include "cli/command.h"
#include "cli/config.h"
#include "diagnose/engine.h"
#include "diagnose/evidence_series.h"
#include "diagnose/prometheus_input.h"
#include "diagnose/replay_input.h"
#include "diagnose/report.h"
#include "report/html_report.h"
#include "util/duration.h"

namespace gpulens::cli {
int run_diagnose(int argc, char** argv) {
  CLI::App app{
      "Name why each GPU is not doing useful work: input pipeline, host transfer, memory bandwidth, "
      "communication, network fallback, kernel launch, throttling, link, hardware errors, idle ... with "
      "evidence, action and the GPU time each cause wasted. Exit 0: no finding at --fail-on or above; "
      "3: there is one (by default a warning or critical finding fails, as a linter's; --fail-on never: "
      "never); 1: the input could not be read; 2: usage.",
      "gpulens diagnose"};
  std::string replay, prometheus, agent_url, range = "30m", end, match, step, window, config;
  std::string format = "text", color = "auto", fail_on = "warning";
  auto* src = app.add_option_group("input", "where the data comes from");
  src->add_option("--replay", replay, "a recording (OpenMetrics with timestamps, e.g. from gpulens record), or a plain "
                  "scrape of dcgm-exporter or node_exporter (one point in time)");
  src->add_option("--prometheus", prometheus, "base URL of a Prometheus-compatible query API");
  src->add_option("--agent", agent_url, "base URL of a running gpulens agent: its live findings (/api/v1/findings)");
  src->require_option(1);
  auto* range_opt = app.add_option("--range", range, "with --prometheus: how far back from --end (default 30m); "
                                                     "with --agent: the window of its history (default 30m)");
  app.add_option("--end", end, "with --prometheus: end of the window, RFC 3339 or Unix seconds (default now)");
  app.add_option("--match", match, "with --prometheus: extra label matchers, e.g. '{cluster=\"a\"}'");
  app.add_option("--step", step, "with --prometheus: query step (default: range/11000, at least 15s)");
  app.add_option("--window", window, "with --replay: diagnose only the last DURATION of the recording");
  app.add_option("--config", config,
                 "YAML config; thresholds from its diagnose: section, --prometheus's TLS, auth and headers from "
                 "its prometheus: section");
  std::string out_path;
  app.add_option("--format", format, "text (default), json, or html (one self-contained file: findings with their "
                                     "evidence plotted, waste per cause)")
      ->check(CLI::IsMember({"text", "json", "html"}));
  app.add_option("-o,--out", out_path, "write the report to this file instead of stdout");
  app.add_option("--color", color, "auto (on a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  app.add_option("--fail-on", fail_on, "exit 3 when a finding is at this severity or above: "
                                       "warning (default), critical, info, never")
      ->check(CLI::IsMember({"info", "warning", "critical", "never"}));
  expfmt::StreamLimits limits;
  limits.series_advice = "raise --max-series, or split the input";
  limits.samples_advice = "raise --max-samples, or use a shorter recording";
  app.add_option("--max-series", limits.max_series,
                 "most distinct series of the families diagnosis reads; more is an error (default 100000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-samples", limits.max_samples,
                 "with --replay: most samples diagnosis stores, 16 bytes each (default 75000000)")
      ->check(CLI::PositiveNumber);
  size_t batch_hosts = 64;
  app.add_option("--batch-hosts", batch_hosts,
                 "with --prometheus: hosts fetched and diagnosed together; memory grows with this, not with the "
                 "fleet (default 64; 0: the whole fleet at once)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto usage = [](const std::string& m) {
    std::cerr << "gpulens diagnose: " << m << "\nRun 'gpulens diagnose --help' for usage.\n";
    return kExitUsage;
  };
  if (!replay.empty()) {
    // These shape a Prometheus query; a recording is windowed with --window.
    for (const auto* o : {app.get_option("--range"), app.get_option("--end"), app.get_option("--match"),
                          app.get_option("--step"), app.get_option("--batch-hosts")}) {
      if (o->count() > 0) return usage(o->get_name() + " applies to --prometheus; with --replay use --window");
    }
  }
  diagnose::Thresholds th;
  ClientConfig prometheus_client;
  if (!config.empty()) {
    // The whole file is validated, as serve and check-config do.
    Result<AgentConfig> c = load_config(config);
    if (!c) return usage(c.status().message());
    if (auto problems = validate(*c); !problems.empty()) return usage(config + ": " + problems.front());
    th = c->diagnose;
    prometheus_client = c->prometheus;
  }

  Result<diagnose::SignalSet> set = Status(Code::kInternal, "no input");
  std::vector<std::string> warnings;
  diagnose::Report report;
  std::string agent_json;
  report::EvidencePlots plots;  // --format html: each finding's evidence over the window
  if (!agent_url.empty()) {
    const std::string base = agent_base_url(agent_url);
    if (!base.starts_with("http://")) return usage("--agent: expected an http:// URL, got \"" + agent_url + "\"");
    std::string path = "/api/v1/findings";
    if (range_opt->count() > 0) {
      Result<int64_t> r = parse_duration_ms(range);
      if (!r || *r <= 0) return usage("--range: " + (r ? std::string("must be positive") : r.status().message()));
      path += "?range=" + range;
    }
    Result<diagnose::Report> got = fetch_agent_findings(base, path, agent_json);
    if (!got) {
      std::cerr << "gpulens diagnose: " << got.status().message() << "\n";
      return got.status().code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
    }
    report = std::move(*got);
    if (format == "html") report::add_evidence_plots(report, plots);  // the series the agent sent
  } else if (!replay.empty()) {
    diagnose::ReplayInfo info;
    set = diagnose::load_replay(replay, info, limits);
    warnings = info.stats.warnings;
    if (info.stats.ignored_series > 0) {
      warnings.push_back(std::to_string(info.stats.ignored_series) + " series of metric families diagnosis does "
                         "not use were skipped (" + std::to_string(info.stats.ignored_samples) + " samples)");
    }
    if (set && !window.empty()) {
      Result<int64_t> w = parse_duration_ms(window);
      if (!w) return usage("--window: " + w.status().message());
      set->from_ms = std::max(set->from_ms, set->to_ms - *w);
    }
  } else {
    diagnose::PrometheusQuery q;
    q.url = prometheus;
    Result<int64_t> r = parse_duration_ms(range);
    if (!r || *r <= 0) return usage("--range: " + (r ? std::string("must be positive") : r.status().message()));
    q.range_ms = *r;
    if (!end.empty()) {
      Result<int64_t> e = parse_time_ms(end);
      if (!e) return usage("--end: " + e.status().message());
      q.end_ms = *e;
    } else {
      q.end_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
    }
    if (!step.empty()) {
      Result<int64_t> s = parse_duration_ms(step);
      if (!s || *s <= 0) return usage("--step: " + (s ? std::string("must be positive") : s.status().message()));
      q.step_ms = *s;
    }
    q.match = match;
    q.max_series = limits.max_series;
    q.batch_hosts = batch_hosts;
    const HttpClientOptions client = prometheus_client.options(q.timeout_ms);
    q.tls = client.tls;
    q.auth = client.auth;
    diagnose::PrometheusInfo info;
    // Batch by batch: each batch's signals are diagnosed and dropped before
    // the next is fetched.
    // On a terminal, a line per batch: hosts done of the fleet's, queries, bytes.
    const bool progress = isatty(STDERR_FILENO) == 1;
    size_t hosts_done = 0;
    Status s = diagnose::stream_prometheus(q, info, [&](diagnose::SignalSet&& batch) {
      hosts_done += batch.hosts.size();
      if (progress) {
        std::fprintf(stderr, "\rgpulens diagnose: %zu of %zu hosts diagnosed, %zu queries, %.1f MiB received   ",
                     hosts_done, std::max(info.hosts, hosts_done), info.queries,
                     static_cast<double>(info.response_bytes) / (1 << 20));
      }
      diagnose::Report part = diagnose::diagnose(batch, th);
      if (format == "html") report::add_evidence_plots(batch, part, plots);
      if (format == "json") diagnose::attach_evidence_series(batch, part);
      diagnose::merge_report(report, std::move(part));
      return Status::ok();
    });
    if (progress && hosts_done > 0) std::fputc('\n', stderr);
    if (s && report.hosts.empty()) s = not_found("prometheus " + prometheus + ": no GPU series in the window");
    if (!s) {
      std::cerr << "gpulens diagnose: " << s.message() << "\n";
      return s.code() == Code::kInvalidArgument ? kExitUsage : kExitFailure;
    }
  }
  if (!replay.empty()) {
    if (!set) {
      std::cerr << "gpulens diagnose: " << set.status().message() << "\n";
      return kExitFailure;
    }
    if (set->hosts.empty()) {
      // node_exporter alone, say: nothing per GPU to judge, not silence.
      warnings.push_back(replay + ": no GPU series (gpu_*, DCGM_FI_*): diagnosis is per GPU; host signals "
                         "(node_exporter) are judged beside the GPUs of the same node, in one file with them");
    }
    report = diagnose::diagnose(*set, th);
    report.input_warnings = std::move(warnings);
    if (format == "html") report::add_evidence_plots(*set, report, plots);
    if (format == "json") diagnose::attach_evidence_series(*set, report);
  }
  std::ofstream file;
  if (!out_path.empty()) {
    file.open(out_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "gpulens diagnose: cannot write " << out_path << "\n";
      return kExitFailure;
    }
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  if (format == "json") {
    out << (agent_json.empty() ? diagnose::report_json(report) : agent_json);
  } else if (format == "html") {
    const std::string source = !replay.empty() ? "replay " + replay
                               : !prometheus.empty() ? "prometheus " + prometheus
                                                     : "agent " + agent_url;
    const std::string sim = diagnose::simulated_banner(report);
    out << report::html_report((sim.empty() ? "gpulens diagnose: " : "SIMULATED: gpulens diagnose: ") + source,
                               report::diagnose_report_data(report, plots, source), sim);
  } else {
    const bool use_color = color == "always" || (color == "auto" && out_path.empty() && isatty(STDOUT_FILENO));
    out << diagnose::report_text(report, use_color);
  }
  out.flush();
  if (!out) {
    std::cerr << "gpulens diagnose: cannot write " << (out_path.empty() ? "stdout" : out_path) << "\n";
    return kExitFailure;
  }
  if (!out_path.empty()) std::cerr << "gpulens diagnose: wrote " << out_path << "\n";
  // A report a person may never open in full still says it on the terminal.
  if (report.simulated() && (format != "text" || !out_path.empty())) {
    std::cerr << "gpulens diagnose: " << diagnose::simulated_banner(report) << "\n";
  }
  if (fail_on == "never") return kExitOk;
  const diagnose::Severity level = fail_on == "info"       ? diagnose::Severity::kInfo
                                   : fail_on == "critical" ? diagnose::Severity::kCritical
                                                           : diagnose::Severity::kWarning;
  return report.has_findings(level) ? kExitFindings : kExitOk;
}

}  // namespace gpulens::cli
