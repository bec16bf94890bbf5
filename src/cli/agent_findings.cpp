// Agent findings: fetch over HTTP, and the short form under the snapshot table.
#include "cli/agent_findings.h"

#include <cctype>
#include <map>
#include <string_view>

#include "diagnose/live_input.h"
#include "diagnose/report_format.h"
#include "diagnose/report_parse.h"
#include "util/duration.h"
#include "util/http_client.h"

namespace gpulens::cli {

std::string agent_base_url(std::string url) {
  if (url.find("://") == std::string::npos) url = "http://" + url;
  while (!url.empty() && url.back() == '/') url.pop_back();
  for (std::string_view tail : {"/metrics", "/api/v1/current"}) {
    if (url.ends_with(tail)) url.resize(url.size() - tail.size());
  }
  return url;
}

Result<diagnose::Report> fetch_agent_findings(const std::string& base, const std::string& path, std::string& body) {
  HttpClient client({.timeout_ms = 15'000});
  Result<HttpResponse> r = client.get(base + path);
  if (!r) return Status(r.status().code(), "agent " + base + ": " + r.status().message());
  if (r->status == 400) return invalid_argument("agent " + base + ": " + r->body.substr(0, 300));
  if (r->status != 200) {
    return unavailable("agent " + base + ": HTTP " + std::to_string(r->status) + " from " + path + ": " +
                       r->body.substr(0, 200));
  }
  Result<diagnose::Report> rep = diagnose::report_from_json(r->body, "agent " + base + path);
  if (rep) body = std::move(r->body);
  return rep;
}

void print_findings_brief(const diagnose::Report& report, bool colour, std::ostream& out) {
  const char* bold = colour ? "\033[1m" : "";
  const char* red = colour ? "\033[31m" : "";
  const char* yellow = colour ? "\033[33m" : "";
  const char* dim = colour ? "\033[2m" : "";
  const char* reset = colour ? "\033[0m" : "";
  size_t lines = 0;
  for (const diagnose::HostReport& host : report.hosts) {
    // (state, severity, cause, explanation) -> GPUs, in first-seen order.
    std::vector<std::pair<const diagnose::Finding*, std::vector<std::string>>> rows;
    for (const diagnose::GpuReport& g : host.gpus) {
      for (const diagnose::Finding& f : g.findings) {
        if (f.severity == diagnose::Severity::kInfo && f.state == diagnose::State::kPending) continue;
        auto same = [&](const auto& row) {
          const diagnose::Finding& x = *row.first;
          return x.cause == f.cause && x.severity == f.severity && x.state == f.state &&
                 x.explained_by.cause == f.explained_by.cause &&
                 (x.explained_by.gpu == f.explained_by.gpu ||
                  (x.explained_by.gpu == row.second.front() && f.explained_by.gpu == g.gpu));
        };
        auto it = std::find_if(rows.begin(), rows.end(), same);
        if (it == rows.end()) rows.push_back({&f, {g.gpu}});
        else it->second.push_back(g.gpu);
      }
    }
    for (const auto& [f, gpus] : rows) {
      std::string who = (report.hosts.size() > 1 ? host.host + " " : "") + (gpus.size() > 1 ? "GPUs " : "GPU ") +
                        diagnose::gpu_list(gpus);
      who.resize(std::max<size_t>(who.size(), 10), ' ');
      std::string sev(diagnose::severity_name(f->severity));
      for (char& c : sev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      out << "  " << who << "  ";
      if (!f->explained_by.cause.empty()) {
        const bool self = gpus.size() == 1 && f->explained_by.gpu == gpus[0];
        out << dim << "\u21b3 " << f->cause << ": consequence of " << f->explained_by.cause
            << (self || f->explained_by.gpu == gpus.front() ? "" : " on GPU " + f->explained_by.gpu) << reset << "\n";
      } else if (f->state == diagnose::State::kPending) {
        out << dim << "PENDING  " << f->cause << "  held " << diagnose::human(f->held_ms) << " of "
            << diagnose::human(f->for_ms) << reset << "\n";
      } else {
        const char* c = f->severity == diagnose::Severity::kCritical ? red : f->severity == diagnose::Severity::kWarning ? yellow : dim;
        // The action's first sentence: the table stays a glance.
        const size_t cut = std::min(f->action.find(": "), f->action.find(". ") == std::string::npos
                                                               ? std::string::npos
                                                               : f->action.find(". ") + 1);
        std::string action = f->action.substr(0, cut);
        if (action.size() > 90) action = action.substr(0, 87) + "...";
        out << c << bold << sev << reset << "  " << bold << f->cause << reset << "  since "
            << format_rfc3339(f->since_ms) << ", held " << diagnose::human(f->held_ms) << dim << "  " << action
            << reset << "\n";
      }
      ++lines;
    }
  }
  if (lines == 0) out << "  none\n";
}

void print_snapshot_findings(const std::string& url, Agent* local, int64_t now_ms, const diagnose::Thresholds& th,
                             bool colour, std::ostream& out) {
  const char* bold = colour ? "\033[1m" : "";
  const char* dim = colour ? "\033[2m" : "";
  const char* reset = colour ? "\033[0m" : "";
  if (!url.empty()) {
    std::string base = url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    std::string body;
    Result<diagnose::Report> r = fetch_agent_findings(base, "/api/v1/findings", body);
    if (!r) {
      out << bold << "findings" << reset << dim << "  unavailable: " << r.status().message() << reset << "\n";
      return;
    }
    out << bold << "findings" << reset << dim << "  the agent's diagnosis, " << format_rfc3339(r->from_ms) << " .. "
        << format_rfc3339(r->to_ms) << " (gpulens diagnose --agent " << base << " for the full report)" << reset
        << "\n";
    print_findings_brief(*r, colour, out);
    return;
  }
  if (local == nullptr) return;
  const diagnose::Report r =
      diagnose::diagnose_live(local->registry(), local->history(), now_ms, th, 3'600'000, local->registry().hostname());
  out << bold << "findings" << reset << dim << "  over this snapshot's samples only: causes that need minutes are "
      << "pending; for the live diagnosis: gpulens snapshot --url http://AGENT:9400" << reset << "\n";
  print_findings_brief(r, colour, out);
}

}  // namespace gpulens::cli
