// Text and JSON renderers of a Report.
#include "diagnose/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "util/duration.h"

namespace gpulens::diagnose {
namespace {

void json_string(std::string& out, std::string_view s) {
  out.push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
}

void json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  out += b;
}

std::string num(double v) {
  char b[32];
  if (std::fabs(v) >= 1e9) std::snprintf(b, sizeof b, "%.3g", v);
  else if (std::fabs(v) >= 100) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

double hours(double seconds) { return seconds / 3600.0; }

// "6h", "25m", "2h30m", "45s": durations as people read them.
std::string human(int64_t ms) {
  const int64_t s = (ms + 500) / 1000;
  if (s < 120) return std::to_string(s) + "s";
  const int64_t m = (s + 30) / 60;
  if (m < 120) return std::to_string(m) + "m";
  const int64_t h = m / 60, rest = m % 60;
  return std::to_string(h) + "h" + (rest ? std::to_string(rest) + "m" : "");
}

}  // namespace

std::string cause_words(std::string_view cause) {
  std::string s(cause);
  for (char& c : s) {
    if (c == '_') c = ' ';
  }
  if (cause == "pcie_link_degraded") return "PCIe link";
  if (cause == "hardware_errors") return "hardware";
  if (cause == "idle") return "idle GPUs";
  if (cause == "small_batch") return "batch size";
  return s;
}

std::string report_json(const Report& r) {
  std::string o;
  o.reserve(4096);
  o += "{\"hosts\":[";
  for (size_t h = 0; h < r.hosts.size(); ++h) {
    const HostReport& host = r.hosts[h];
    if (h) o += ',';
    o += "{\"host\":";
    json_string(o, host.host);
    o += ",\"gpus\":[";
    for (size_t g = 0; g < host.gpus.size(); ++g) {
      const GpuReport& gpu = host.gpus[g];
      if (g) o += ',';
      o += "{\"gpu\":";
      json_string(o, gpu.gpu);
      o += ",\"uuid\":";
      json_string(o, gpu.uuid);
      o += ",\"findings\":[";
      for (size_t f = 0; f < gpu.findings.size(); ++f) {
        const Finding& fi = gpu.findings[f];
        if (f) o += ',';
        o += "{\"cause\":";
        json_string(o, fi.cause);
        o += ",\"layer\":";
        json_string(o, fi.layer);
        o += ",\"severity\":";
        json_string(o, severity_name(fi.severity));
        o += ",\"since\":";
        json_string(o, format_rfc3339(fi.since_ms));
        o += ",\"evidence\":[";
        for (size_t e = 0; e < fi.evidence.size(); ++e) {
          if (e) o += ',';
          o += "{\"signal\":";
          json_string(o, fi.evidence[e].signal);
          o += ",\"value\":";
          json_number(o, fi.evidence[e].value);
          o += ",\"threshold\":";
          json_number(o, fi.evidence[e].threshold);
          if (!fi.evidence[e].detail.empty()) {
            o += ",\"detail\":";
            json_string(o, fi.evidence[e].detail);
          }
          o += '}';
        }
        o += "],\"action\":";
        json_string(o, fi.action);
        o += ",\"held_seconds\":";
        json_number(o, static_cast<double>(fi.held_ms) / 1000.0);
        o += ",\"waste_gpu_hours\":";
        json_number(o, hours(fi.waste_gpu_seconds));
        o += ",\"state\":";
        json_string(o, state_name(fi.state));
        o += ",\"for_seconds\":";
        json_number(o, static_cast<double>(fi.for_ms) / 1000.0);
        o += '}';
      }
      o += "],\"model\":";
      json_string(o, gpu.model);
      o += ",\"waste_gpu_hours\":";
      json_number(o, hours(gpu.waste_gpu_seconds));
      o += ",\"covered_seconds\":";
      json_number(o, static_cast<double>(gpu.covered_ms) / 1000.0);
      o += ",\"not_assessed\":[";
      for (size_t n = 0; n < gpu.not_assessed.size(); ++n) {
        if (n) o += ',';
        o += "{\"cause\":";
        json_string(o, gpu.not_assessed[n].cause);
        o += ",\"reason\":";
        json_string(o, gpu.not_assessed[n].reason);
        o += '}';
      }
      o += "],\"notes\":[";
      for (size_t n = 0; n < gpu.notes.size(); ++n) {
        if (n) o += ',';
        json_string(o, gpu.notes[n]);
      }
      o += "]}";
    }
    o += "]}";
  }
  o += "],\"window\":{\"from\":";
  json_string(o, format_rfc3339(r.from_ms));
  o += ",\"to\":";
  json_string(o, format_rfc3339(r.to_ms));
  o += "},\"waste\":{\"gpus\":";
  json_number(o, static_cast<double>(r.gpu_count));
  const double window_h = hours(static_cast<double>(r.to_ms - r.from_ms) / 1000.0);
  const double covered_h = hours(r.covered_seconds());
  o += ",\"window_hours\":";
  json_number(o, window_h);
  o += ",\"covered_hours\":";
  json_number(o, covered_h);
  double total = 0;
  for (const auto& [cause, s] : r.waste_by_cause) total += s;
  o += ",\"total_gpu_hours\":";
  json_number(o, hours(total));
  o += ",\"by_cause\":{";
  bool first = true;
  for (const auto& [cause, s] : r.waste_by_cause) {
    if (!first) o += ',';
    first = false;
    json_string(o, cause);
    o += ":{\"gpu_hours\":";
    json_number(o, hours(s));
    o += ",\"gpus_equivalent\":";
    json_number(o, covered_h > 0 ? hours(s) / covered_h : 0);
    o += '}';
  }
  o += "}},\"warnings\":[";
  for (size_t i = 0; i < r.input_warnings.size(); ++i) {
    if (i) o += ',';
    json_string(o, r.input_warnings[i]);
  }
  o += "]}\n";
  return o;
}

std::string report_text(const Report& r, bool colour) {
  const char* bold = colour ? "\033[1m" : "";
  const char* red = colour ? "\033[31m" : "";
  const char* yellow = colour ? "\033[33m" : "";
  const char* blue = colour ? "\033[36m" : "";
  const char* dim = colour ? "\033[2m" : "";
  const char* reset = colour ? "\033[0m" : "";
  std::string o;
  const double window_s = r.covered_seconds();
  o += std::string(bold) + "gpulens diagnose" + reset + "  " + format_rfc3339(r.from_ms) + " .. " +
       format_rfc3339(r.to_ms) + " (" + human(r.to_ms - r.from_ms) + ", " +
       std::to_string(r.gpu_count) + " GPUs on " + std::to_string(r.hosts.size()) + " hosts)\n";
  for (const std::string& w : r.input_warnings) o += std::string(yellow) + "warning: " + reset + w + "\n";
  for (const HostReport& host : r.hosts) {
    o += "\n" + std::string(bold) + "host " + host.host + reset + "\n";
    // Reasons shared by every GPU of the host are printed once.
    std::set<std::pair<std::string, std::string>> common;
    if (!host.gpus.empty()) {
      for (const NotAssessed& n : host.gpus[0].not_assessed) common.insert({n.cause, n.reason});
      for (const GpuReport& g : host.gpus) {
        std::set<std::pair<std::string, std::string>> mine;
        for (const NotAssessed& n : g.not_assessed) mine.insert({n.cause, n.reason});
        std::set<std::pair<std::string, std::string>> both;
        for (const auto& x : common) {
          if (mine.contains(x)) both.insert(x);
        }
        common = std::move(both);
      }
    }
    size_t quiet = 0;
    for (const GpuReport& g : host.gpus) {
      std::vector<const NotAssessed*> own;
      for (const NotAssessed& n : g.not_assessed) {
        if (!common.contains({n.cause, n.reason})) own.push_back(&n);
      }
      if (g.findings.empty() && g.notes.empty() && own.empty()) {
        ++quiet;
        continue;
      }
      o += "  GPU " + g.gpu + (g.model.empty() ? "" : "  " + g.model) + (g.uuid.empty() ? "" : "  " + g.uuid) + "\n";
      if (g.findings.empty()) o += std::string("    ") + dim + "no findings" + reset + "\n";
      for (const Finding& f : g.findings) {
        const char* c = f.severity == Severity::kCritical ? red : f.severity == Severity::kWarning ? yellow : blue;
        std::string sev(severity_name(f.severity));
        for (char& ch : sev) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        if (f.state == State::kPending) {
          o += "    " + std::string(dim) + "PENDING" + reset + "  " + f.cause + " (" + f.layer + ", would be " +
               std::string(severity_name(f.severity)) + ")  since " + format_rfc3339(f.since_ms) + ", held " + human(f.held_ms) +
               " of the " + human(f.for_ms) + " it needs" +
               (g.covered_ms < f.for_ms ? "; the data covers only " + human(g.covered_ms) : std::string()) + "\n";
        } else {
          o += "    " + std::string(c) + bold + sev + reset + "  " + bold + f.cause + reset + " (" + f.layer +
               ")  since " + format_rfc3339(f.since_ms) + ", held " + human(f.held_ms) + "\n";
        }
        std::string ev;
        for (const Evidence& e : f.evidence) {
          if (!ev.empty()) ev += "; ";
          ev += e.signal + " " + num(e.value) + " (threshold " + num(e.threshold) +
                (e.detail.empty() ? ")" : "; " + e.detail + ")");
        }
        if (!ev.empty()) o += "      evidence: " + ev + "\n";
        o += "      action: " + f.action + "\n";
      }
      for (const std::string& n : g.notes) o += std::string("      ") + dim + "note: " + n + reset + "\n";
      for (const NotAssessed* n : own) {
        o += std::string("      ") + dim + "not assessed: " + n->cause + ": " + n->reason + reset + "\n";
      }
    }
    if (quiet) o += "  " + std::to_string(quiet) + " GPU(s) with no findings\n";
    for (const auto& [cause, reason] : common) {
      o += std::string("  ") + dim + "not assessed (all GPUs): " + cause + ": " + reason + reset + "\n";
    }
  }
  double total = 0;
  for (const auto& [cause, s] : r.waste_by_cause) total += s;
  o += "\n" + std::string(bold) + "waste" + reset + ": ";
  if (total <= 0 || window_s <= 0) {
    o += "none found in the window\n";
    return o;
  }
  char b[160];
  std::snprintf(b, sizeof b, "%.1f GPU-hours of %.1f covered (%.1f of %zu GPUs)\n", hours(total),
                hours(window_s) * static_cast<double>(r.gpu_count), total / window_s, r.gpu_count);
  o += b;
  std::vector<std::pair<double, std::string>> by;
  for (const auto& [cause, s] : r.waste_by_cause) {
    if (s > 0) by.emplace_back(s, cause);
  }
  std::sort(by.rbegin(), by.rend());
  for (const auto& [s, cause] : by) {
    std::snprintf(b, sizeof b, "  fixing the %s is worth %.1f GPUs (%.1f GPU-hours)\n", cause_words(cause).c_str(),
                  s / window_s, hours(s));
    o += b;
  }
  return o;
}

}  // namespace gpulens::diagnose
