// The text report: per host, GPUs with identical findings grouped ("GPUs
// 0–7"), consequences indented under their root cause, a per-GPU timeline of
// when each cause held, and the waste summary.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "diagnose/report.h"
#include "diagnose/report_format.h"
#include "util/duration.h"
#include "util/terminal_text.h"

namespace gpulens::diagnose {
namespace {

struct Style {
  const char *bold, *red, *yellow, *blue, *dim, *reset;
};

std::string key(const Finding& f, const std::string& gpu) {
  // A finding with a capture attached is its GPU's own (the capture is of its process).
  return f.cause + "|" + std::string(severity_name(f.severity)) + "|" + std::string(state_name(f.state)) + "|" +
         f.explained_by.cause + "|" + (f.explained_by.gpu == gpu ? "self" : f.explained_by.gpu) +
         (f.profile.state.empty() ? std::string() : "|profile " + gpu);
}

// Evidence of finding `at` averaged over the GPUs of a group.
std::string evidence_text(const std::vector<const GpuReport*>& group, size_t at) {
  std::string ev;
  for (const Evidence& e : group[0]->findings[at].evidence) {
    double sum = 0;
    size_t n = 0;
    for (const GpuReport* g : group) {
      for (const Evidence& x : g->findings[at].evidence) {
        if (x.signal == e.signal) { sum += x.value; ++n; break; }
      }
    }
    if (!ev.empty()) ev += "; ";
    ev += e.signal + " " + num(n ? sum / static_cast<double>(n) : e.value) + " (threshold " + num(e.threshold) +
          (e.detail.empty() || group.size() > 1 ? ")" : "; " + e.detail + ")");
  }
  return ev;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// One bar of `width` cells over [from, to): '#' where a period covers it.
std::string bar(const std::vector<std::pair<int64_t, int64_t>>& periods, int64_t from, int64_t to, int width,
                char on) {
  std::string b(static_cast<size_t>(width), '.');
  const double span = static_cast<double>(std::max<int64_t>(to - from, 1));
  for (const auto& [a, z] : periods) {
    int lo = static_cast<int>(static_cast<double>(a - from) / span * width);
    int hi = static_cast<int>(static_cast<double>(z - from) / span * width + 0.999);
    lo = std::clamp(lo, 0, width);
    hi = std::clamp(hi, lo + 1, width);
    for (int i = lo; i < hi; ++i) b[static_cast<size_t>(i)] = on;
  }
  return b;
}

// "profile: torch capture p3-... in pid 4242 at ...: <summary>"
std::string profile_text(const ProfileSummary& p) {
  std::string o = "profile: " + p.kind + " capture" + (p.capture.empty() ? "" : " " + p.capture) + " in pid " +
                  std::to_string(p.pid);
  if (p.state == "requested") return o + ": requested at " + format_rfc3339(p.at_ms) + ", not finished yet";
  return o + " (" + p.state + ", " + format_rfc3339(p.at_ms) + "): " + p.summary;
}

void host_text(const HostReport& host, const Style& st, std::string& o) {
  o += "\n" + std::string(st.bold) + "host " + host.host + st.reset +
       (host.simulated ? " " + std::string(st.yellow) + "SIMULATED" + st.reset : std::string()) + "\n";
  // Reasons shared by every GPU of the host are printed once.
  std::set<std::pair<std::string, std::string>> common;
  if (!host.gpus.empty()) {
    for (const NotAssessed& n : host.gpus[0].not_assessed) common.insert({n.cause, n.reason});
    for (const GpuReport& g : host.gpus) {
      std::set<std::pair<std::string, std::string>> both;
      for (const NotAssessed& n : g.not_assessed) {
        if (common.contains({n.cause, n.reason})) both.insert({n.cause, n.reason});
      }
      common = std::move(both);
    }
  }
  // Consequences on other GPUs, listed under their root: (gpu, cause) -> GPUs.
  std::map<std::pair<std::string, std::string>, std::map<std::string, std::vector<std::string>>> downstream;
  for (const GpuReport& g : host.gpus) {
    for (const Finding& f : g.findings) {
      if (!f.explained_by.cause.empty() && f.explained_by.gpu != g.gpu &&
          (f.explained_by.host.empty() || f.explained_by.host == host.host)) {
        downstream[{f.explained_by.gpu, f.explained_by.cause}][f.cause].push_back(g.gpu);
      }
    }
  }
  // Group GPUs whose findings, notes and own gaps are the same.
  std::vector<std::pair<std::string, std::vector<const GpuReport*>>> groups;
  size_t quiet = 0;
  for (const GpuReport& g : host.gpus) {
    const std::string base = g.model + (g.mig.empty() ? "" : " MIG " + g.mig.profile + " " + g.mig.gpu_instance);
    std::string sig = base;
    for (const Finding& f : g.findings) sig += "\n" + key(f, g.gpu);
    for (const std::string& n : g.notes) sig += "\nnote " + n;
    for (const NotAssessed& n : g.not_assessed) {
      if (!common.contains({n.cause, n.reason})) sig += "\nna " + n.cause + n.reason;
    }
    // A root with consequences elsewhere is its own group (they name it).
    for (const Finding& f : g.findings) {
      if (downstream.contains({g.gpu, f.cause})) sig += "\nroot " + g.gpu;
    }
    if (g.findings.empty() && sig == base) {
      ++quiet;
      continue;
    }
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == sig; });
    if (it == groups.end()) groups.push_back({sig, {&g}});
    else it->second.push_back(&g);
  }
  // Root causes first: groups led by a consequence of another GPU go last.
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) {
    auto led = [](const GpuReport& g) { return !g.findings.empty() && !g.findings[0].explained_by.cause.empty(); };
    return !led(*a.second[0]) && led(*b.second[0]);
  });
  for (const auto& [sig, group] : groups) {
    const GpuReport& g = *group[0];
    std::vector<std::string> ids;
    for (const GpuReport* x : group) ids.push_back(x->gpu);
    o += group.size() == 1 ? "  GPU " + g.gpu +
                                 (g.mig.empty() ? "" : "  MIG " + g.mig.profile + " (GPU instance " +
                                                           g.mig.gpu_instance + " of GPU " + g.mig.gpu + ")") +
                                 (g.model.empty() ? "" : "  " + g.model) +
                                 (g.uuid.empty() ? "" : "  " + g.uuid) + "\n"
                           : "  GPUs " + gpu_list(ids) + (g.model.empty() ? "" : "  " + g.model) + "\n";
    if (g.findings.empty()) o += std::string("    ") + st.dim + "no findings" + st.reset + "\n";
    for (size_t i = 0; i < g.findings.size(); ++i) {
      const Finding& f = g.findings[i];
      int64_t since = f.since_ms, held = f.held_ms;
      for (const GpuReport* x : group) {
        since = std::min(since, x->findings[i].since_ms);
        held = std::max(held, x->findings[i].held_ms);
      }
      const std::string ev = evidence_text(group, i);
      const bool local = !f.explained_by.cause.empty() && f.explained_by.gpu == g.gpu && f.explained_by.host.empty();
      if (!f.explained_by.cause.empty()) {
        // A consequence: indented under its root (same GPU) or naming it.
        const std::string in = local ? "      " : "    ";
        o += in + st.dim + "\u21b3 " + st.reset + f.cause + " (" + f.layer + ", " +
             std::string(severity_name(f.severity)) + ")  held " + human(held) + ": " +
             (f.explained_by.host.empty() ? "consequence of " + f.explained_by.cause +
                                                (local ? "" : " on GPU " + f.explained_by.gpu) + ": "
                                          : std::string("not its own: ")) +
             f.explained_by.why + "\n";
        if (!ev.empty()) o += in + "  evidence: " + ev + "\n";
        continue;
      }
      const char* c = f.severity == Severity::kCritical ? st.red : f.severity == Severity::kWarning ? st.yellow : st.blue;
      if (f.state == State::kPending) {
        o += "    " + std::string(st.dim) + "PENDING" + st.reset + "  " + f.cause + " (" + f.layer + ", would be " +
             std::string(severity_name(f.severity)) + ")  since " + format_rfc3339(since) + ", held " + human(held) +
             " of the " + human(f.for_ms) + " it needs" +
             (g.covered_ms < f.for_ms ? "; the data covers only " + human(g.covered_ms) : std::string()) + "\n";
      } else {
        o += "    " + std::string(c) + st.bold + upper(severity_name(f.severity)) + st.reset + "  " + st.bold + f.cause +
             st.reset + " (" + f.layer + ")  " +
             (held > 0 ? "since " + format_rfc3339(since) + ", held " + human(held) : "at " + format_rfc3339(since)) +
             "\n";
      }
      if (!ev.empty()) o += "      evidence" + std::string(group.size() > 1 ? " (mean of the GPUs)" : "") + ": " + ev + "\n";
      o += "      action: " + f.action + "\n";
      if (!f.profile.state.empty()) o += "      " + profile_text(f.profile) + "\n";
      if (auto d = downstream.find({g.gpu, f.cause}); d != downstream.end()) {
        for (const auto& [cause, gpus] : d->second) {
          o += "      " + std::string(st.dim) + "\u21b3 explains " + cause + " on GPU" + (gpus.size() > 1 ? "s " : " ") +
               gpu_list(gpus) + st.reset + "\n";
        }
      }
    }
    for (const std::string& n : g.notes) o += std::string("      ") + st.dim + "note: " + n + st.reset + "\n";
    for (const NotAssessed& n : g.not_assessed) {
      if (common.contains({n.cause, n.reason})) continue;
      o += std::string("      ") + st.dim + "not assessed: " + n.cause + ": " + n.reason + st.reset + "\n";
    }
  }
  if (quiet) o += "  " + std::to_string(quiet) + " GPU(s) with no findings\n";
  for (const auto& [cause, reason] : common) {
    o += std::string("  ") + st.dim + "not assessed (all GPUs): " + cause + ": " + reason + st.reset + "\n";
  }
}

// The jobs first: each job with a root cause, the number of the others.
void jobs_text(const Report& r, const Style& st, std::string& o) {
  constexpr size_t kListed = 20;
  size_t listed = 0, quiet = 0, quiet_gpus = 0;
  std::string lines;
  for (const JobReport& j : r.jobs) {
    if (!j.has_root && !j.hung && (j.source == "host" || listed >= kListed)) {
      ++quiet;
      quiet_gpus += j.gpus.size();
      continue;
    }
    ++listed;
    lines += "  job " + j.job + (j.source == "host" ? " (the GPUs of one host)" : " (" + j.source + ")") + ", " +
             std::to_string(j.gpus.size()) + " GPU" + (j.gpus.size() == 1 ? "" : "s") + " on " +
             std::to_string(j.hosts) + " host" + (j.hosts == 1 ? "" : "s") + ": ";
    if (j.has_root) {
      lines += std::string(j.root.cause == "hardware_errors" ? "stopped" : "slowed") + " by GPU " + j.root.gpu +
               " of " + j.root.host + ", " + st.bold + j.root.cause + st.reset + ", since " +
               format_rfc3339(j.root.since_ms);
    } else if (j.hung) {
      lines += std::string(st.bold) + "hung" + st.reset + " since " + format_rfc3339(j.hang.since_ms) +
               " (every GPU busy with idle SMs and no NVLink/InfiniBand traffic, or idle with memory held" +
               (j.hang.gpu.empty() ? std::string(")")
                                   : "; the first stuck: GPU " + j.hang.gpu + " of " + j.hang.host + ")");
    } else {
      lines += "no root cause across the job";
    }
    char b[64];
    std::snprintf(b, sizeof b, "; %.1f GPU-hours lost\n", hours(j.waste_gpu_seconds));
    lines += r.point_in_time ? "\n" : b;
    for (const std::string& n : j.notes) lines += std::string("    ") + st.dim + "note: " + n + st.reset + "\n";
  }
  if (lines.empty()) return;
  o += "\n" + std::string(st.bold) + "jobs" + st.reset + "\n" + lines;
  if (quiet) {
    o += "  " + std::to_string(quiet) + " other job" + (quiet == 1 ? "" : "s") + " (" + std::to_string(quiet_gpus) +
         " GPUs) with no root cause across the job\n";
  }
}

// When each cause held, per GPU: identical lines across GPUs are merged.
void timeline_text(const Report& r, const Style& st, std::string& o) {
  constexpr int kWidth = 48;
  std::string lines;
  for (const HostReport& host : r.hosts) {
    std::vector<std::pair<std::string, std::vector<std::string>>> rows;  // "cause bar" -> GPUs
    for (const GpuReport& g : host.gpus) {
      for (const Finding& f : g.findings) {
        if (f.periods.empty()) continue;
        std::string row = f.cause;
        row.resize(std::max<size_t>(row.size(), 22), ' ');
        row += " " + bar(f.periods, r.from_ms, r.to_ms, kWidth, f.state == State::kPending ? '?' : '#');
        auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& x) { return x.first == row; });
        if (it == rows.end()) rows.push_back({row, {g.gpu}});
        else it->second.push_back(g.gpu);
      }
    }
    for (const auto& [row, gpus] : rows) {
      std::string who = (r.hosts.size() > 1 ? host.host + " " : std::string()) + (gpus.size() > 1 ? "GPUs " : "GPU ") +
                        gpu_list(gpus);
      who.resize(std::max<size_t>(who.size(), 12), ' ');
      lines += "  " + who + " " + row + "\n";
    }
  }
  if (lines.empty()) return;
  o += "\n" + std::string(st.bold) + "timeline" + st.reset + "  " + format_rfc3339(r.from_ms) + " .. " +
       format_rfc3339(r.to_ms) + "  (# held, ? pending)\n" + lines;
}

}  // namespace

std::string report_text(const Report& r, bool colour) {
  const Style st = colour ? Style{"\033[1m", "\033[31m", "\033[33m", "\033[36m", "\033[2m", "\033[0m"}
                          : Style{"", "", "", "", "", ""};
  std::string o;
  // First, as loud as the live views: nothing below is about a real GPU.
  if (const std::string sim = simulated_banner(r); !sim.empty()) {
    o += std::string(st.bold) + st.yellow + sim + st.reset + "\n";
  }
  const double covered_s = r.covered_seconds();
  if (r.point_in_time) {
    o += std::string(st.bold) + "gpulens diagnose" + st.reset + "  " + format_rfc3339(r.to_ms) +
         " (one point in time: a scrape without timestamps; " + std::to_string(r.gpu_count) + " GPUs on " +
         std::to_string(r.hosts.size()) + " hosts)\n" +
         "judged: the causes that need no duration (hardware_errors); every other cause needs minutes of data "
         "and is listed as not assessed\n";
  } else {
    o += std::string(st.bold) + "gpulens diagnose" + st.reset + "  " + format_rfc3339(r.from_ms) + " .. " +
         format_rfc3339(r.to_ms) + " (" + human(r.to_ms - r.from_ms) + ", " + std::to_string(r.gpu_count) +
         " GPUs on " + std::to_string(r.hosts.size()) + " hosts)\n";
  }
  for (const std::string& w : r.input_warnings) o += std::string(st.yellow) + "warning: " + st.reset + w + "\n";
  jobs_text(r, st, o);
  for (const HostReport& host : r.hosts) host_text(host, st, o);
  if (r.point_in_time) {
    o += "\n" + std::string(st.bold) + "waste" + st.reset + ": not computed from one point in time\n";
    return terminal_safe(o, kTerminalLayout);
  }
  timeline_text(r, st, o);
  double total = 0;
  for (const auto& [cause, s] : r.waste_by_cause) total += s;
  o += "\n" + std::string(st.bold) + (r.hosts.size() > 1 ? "fleet waste" : "waste") + st.reset + ": ";
  if (total <= 0 || covered_s <= 0) {
    o += "none found in the window\n";
    return terminal_safe(o, kTerminalLayout);
  }
  char b[200];
  std::snprintf(b, sizeof b, "%.1f GPU-hours of %.1f covered (%.1f of %zu GPUs)\n", hours(total),
                hours(covered_s) * static_cast<double>(r.gpu_count), total / covered_s, r.gpu_count);
  o += b;
  const std::vector<FleetCause> fleet = fleet_summary(r);
  const bool many = r.hosts.size() > 1;
  for (const FleetCause& c : fleet) {
    if (c.waste_gpu_seconds <= 0) continue;
    std::snprintf(b, sizeof b, "  fixing the %s is worth %.1f GPUs%s (%.1f GPU-hours", cause_words(c.cause).c_str(),
                  c.gpus_equivalent, many ? " fleet-wide" : "", hours(c.waste_gpu_seconds));
    o += b;
    if (many) {
      std::string hosts;
      for (size_t i = 0; i < c.hosts.size() && i < 5; ++i) hosts += (i ? ", " : "") + c.hosts[i];
      if (c.hosts.size() > 5) hosts += ", ... (" + std::to_string(c.hosts.size() - 5) + " more)";
      o += "; " + std::to_string(c.gpus) + " GPUs on " + std::to_string(c.hosts.size()) + " host" +
           (c.hosts.size() == 1 ? "" : "s") + (hosts.empty() ? "" : ": " + hosts);
    }
    o += ")\n";
  }
  return terminal_safe(o, kTerminalLayout);  // names and labels from outside: no escapes
}

}  // namespace gpulens::diagnose
