// Text and JSON renderers of a Report.
#include "diagnose/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "diagnose/report_format.h"
#include "util/duration.h"
#include "util/json.h"

namespace gpulens::diagnose {
namespace {

void json_string(std::string& out, std::string_view s) { append_json_string(out, s); }

void json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  out += b;
}

// [item,item,...]: each item written by `write(o, item)`. The report's
// arrays all have this shape.
template <typename Items, typename Write>
void report_json_array(std::string& o, const Items& items, Write write) {
  o += '[';
  bool first = true;
  for (const auto& item : items) {
    if (!first) o += ',';
    first = false;
    write(o, item);
  }
  o += ']';
}

// An array of strings.
void report_json_strings(std::string& o, const std::vector<std::string>& items) {
  report_json_array(o, items, [](std::string& out, const std::string& s) { json_string(out, s); });
}

// ,"profile":{...}: the capture attached to a finding (docs/diagnose.md).
void profile_json(std::string& o, const ProfileSummary& p) {
  o += ",\"profile\":{\"state\":";
  json_string(o, p.state);
  o += ",\"capture\":";
  if (p.capture.empty()) o += "null";
  else json_string(o, p.capture);
  o += ",\"pid\":";
  json_number(o, static_cast<double>(p.pid));
  o += ",\"kind\":";
  json_string(o, p.kind);
  o += ",\"at\":";
  json_string(o, format_rfc3339(p.at_ms));
  o += ",\"of\":";
  if (p.of.empty()) o += "null";
  else json_string(o, p.of);
  o += ",\"top\":";
  report_json_array(o, p.top, [](std::string& out, const auto& t) {
    out += "{\"name\":";
    json_string(out, t.name);
    out += ",\"share\":";
    json_number(out, t.share);
    out += '}';
  });
  o += ",\"dataloader_wait_share\":";
  if (p.dataloader_wait < 0) o += "null";
  else json_number(o, p.dataloader_wait);
  o += ",\"device_sync_share\":";
  if (p.device_sync < 0) o += "null";
  else json_number(o, p.device_sync);
  o += ",\"verdict\":";
  if (p.verdict.empty()) o += "null";
  else json_string(o, p.verdict);
  o += ",\"summary\":";
  json_string(o, p.summary);
  o += '}';
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

std::string simulated_banner(const Report& r) {
  std::vector<const HostReport*> sim;
  for (const HostReport& h : r.hosts) {
    if (h.simulated) sim.push_back(&h);
  }
  if (sim.empty()) return {};
  std::string o = sim.size() == 1 ? "SIMULATED DATA: host " : "SIMULATED DATA: hosts ";
  constexpr size_t kNamed = 8;
  for (size_t i = 0; i < sim.size() && i < kNamed; ++i) {
    if (i) o += ", ";
    o += sim[i]->host;
    if (!sim[i]->scenario.empty()) o += " (scenario " + sim[i]->scenario + ")";
  }
  if (sim.size() > kNamed) o += " and " + std::to_string(sim.size() - kNamed) + " more";
  o += sim.size() == 1 ? " served gpulens_simulated 1: its values come from a scenario, not from a GPU"
                       : " served gpulens_simulated 1: their values come from a scenario, not from a GPU";
  return o;
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
      if (!gpu.mig.empty()) {
        o += ",\"mig\":{\"gpu\":";
        json_string(o, gpu.mig.gpu);
        o += ",\"gpu_instance_id\":";
        json_string(o, gpu.mig.gpu_instance);
        o += ",\"profile\":";
        json_string(o, gpu.mig.profile);
        o += ",\"uuid\":";
        json_string(o, gpu.mig.uuid);
        o += '}';
      }
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
          // The signal over the window (evidence_series.h): times in ms, values.
          if (const Series& s = fi.evidence[e].series; !s.empty()) {
            o += ",\"series\":{\"t\":[";
            for (size_t k = 0; k < s.size(); ++k) {
              if (k) o += ',';
              o += std::to_string(s[k].t_ms);
            }
            o += "],\"v\":[";
            for (size_t k = 0; k < s.size(); ++k) {
              if (k) o += ',';
              json_number(o, s[k].v);
            }
            o += "]}";
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
        o += fi.ongoing ? ",\"ongoing\":true" : ",\"ongoing\":false";
        o += ",\"for_seconds\":";
        json_number(o, static_cast<double>(fi.for_ms) / 1000.0);
        o += ",\"explained_by\":";
        if (fi.explained_by.cause.empty()) {
          o += "null";
        } else {
          o += "{\"cause\":";
          json_string(o, fi.explained_by.cause);
          o += ",\"gpu\":";
          json_string(o, fi.explained_by.gpu);
          o += ",\"why\":";
          json_string(o, fi.explained_by.why);
          if (!fi.explained_by.host.empty()) {
            o += ",\"host\":";
            json_string(o, fi.explained_by.host);
          }
          o += '}';
        }
        o += ",\"periods\":[";
        for (size_t p = 0; p < fi.periods.size(); ++p) {
          if (p) o += ',';
          o += "{\"from\":";
          json_string(o, format_rfc3339(fi.periods[p].first));
          o += ",\"to\":";
          json_string(o, format_rfc3339(fi.periods[p].second));
          o += '}';
        }
        o += ']';
        if (!fi.profile.state.empty()) profile_json(o, fi.profile);
        o += '}';
      }
      o += "],\"model\":";
      json_string(o, gpu.model);
      o += ",\"waste_gpu_hours\":";
      json_number(o, hours(gpu.waste_gpu_seconds));
      o += ",\"covered_seconds\":";
      json_number(o, static_cast<double>(gpu.covered_ms) / 1000.0);
      o += ",\"not_assessed\":";
      report_json_array(o, gpu.not_assessed, [](std::string& out, const auto& na) {
        out += "{\"cause\":";
        json_string(out, na.cause);
        out += ",\"reason\":";
        json_string(out, na.reason);
        out += '}';
      });
      o += ",\"notes\":";
      report_json_strings(o, gpu.notes);
      o += '}';
    }
    o += "],\"simulated\":";
    if (host.simulated) {
      o += "true,\"scenario\":";
      json_string(o, host.scenario);
    } else {
      o += "false";
    }
    o += '}';
  }
  o += "],\"jobs\":[";
  for (size_t j = 0; j < r.jobs.size(); ++j) {
    const JobReport& job = r.jobs[j];
    if (j) o += ',';
    o += "{\"job\":";
    json_string(o, job.job);
    o += ",\"source\":";
    json_string(o, job.source);
    o += ",\"gpus\":";
    report_json_strings(o, job.gpus);
    o += ",\"hosts\":";
    json_number(o, static_cast<double>(job.hosts));
    o += ",\"root\":";
    if (!job.has_root) {
      o += "null";
    } else {
      o += "{\"host\":";
      json_string(o, job.root.host);
      o += ",\"gpu\":";
      json_string(o, job.root.gpu);
      o += ",\"cause\":";
      json_string(o, job.root.cause);
      o += ",\"since\":";
      json_string(o, format_rfc3339(job.root.since_ms));
      o += '}';
    }
    o += ",\"hang\":";
    if (!job.hung) {
      o += "null";
    } else {
      o += "{\"since\":";
      json_string(o, format_rfc3339(job.hang.since_ms));
      o += ",\"first\":";
      if (job.hang.gpu.empty()) {
        o += "null";
      } else {
        o += "{\"host\":";
        json_string(o, job.hang.host);
        o += ",\"gpu\":";
        json_string(o, job.hang.gpu);
        o += '}';
      }
      o += '}';
    }
    o += ",\"waste_gpu_hours\":";
    json_number(o, hours(job.waste_gpu_seconds));
    o += ",\"notes\":";
    report_json_strings(o, job.notes);
    o += '}';
  }
  o += "],\"simulated\":";
  o += r.simulated() ? "true" : "false";
  o += ",\"window\":{\"from\":";
  json_string(o, format_rfc3339(r.from_ms));
  o += ",\"to\":";
  json_string(o, format_rfc3339(r.to_ms));
  if (r.point_in_time) o += ",\"point_in_time\":true";
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
  o += "}},\"fleet\":{\"hosts\":";
  json_number(o, static_cast<double>(r.hosts.size()));
  o += ",\"gpus\":";
  json_number(o, static_cast<double>(r.gpu_count));
  o += ",\"causes\":[";
  const std::vector<FleetCause> fleet = fleet_summary(r);
  for (size_t i = 0; i < fleet.size(); ++i) {
    const FleetCause& c = fleet[i];
    if (i) o += ',';
    o += "{\"cause\":";
    json_string(o, c.cause);
    o += ",\"gpu_hours\":";
    json_number(o, hours(c.waste_gpu_seconds));
    o += ",\"gpus_equivalent\":";
    json_number(o, c.gpus_equivalent);
    o += ",\"gpus_affected\":";
    json_number(o, static_cast<double>(c.gpus));
    o += ",\"hosts_affected\":";
    json_number(o, static_cast<double>(c.hosts.size()));
    o += ",\"hosts\":";
    report_json_strings(o, c.hosts);
    o += '}';
  }
  o += "]},\"warnings\":";
  report_json_strings(o, r.input_warnings);
  o += "}\n";
  return o;
}

}  // namespace gpulens::diagnose
