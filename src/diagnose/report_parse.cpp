// report_json() read back with simdjson's DOM parser.
#include "diagnose/report_parse.h"

#include <simdjson.h>

#include <cmath>

#include "diagnose/evidence_series.h"
#include "util/duration.h"

namespace gpulens::diagnose {
namespace {

using simdjson::dom::element;

std::string str(element e, const char* key) {
  std::string_view v;
  return e[key].get(v) ? std::string() : std::string(v);
}
double number(element e, const char* key) {
  double v = 0;
  if (!e[key].get(v)) return v;
  int64_t i = 0;
  return e[key].get(i) ? std::nan("") : static_cast<double>(i);
}
int64_t time_ms(element e, const char* key) {
  const std::string t = str(e, key);
  Result<int64_t> ms = parse_time_ms(t);
  return ms ? *ms : 0;
}
int64_t ms_of(double seconds) {
  return std::isfinite(seconds) && std::fabs(seconds) < 1e12 ? static_cast<int64_t>(std::llround(seconds * 1000)) : 0;
}

Severity severity_of(std::string_view s) {
  return s == "critical" ? Severity::kCritical : s == "info" ? Severity::kInfo : Severity::kWarning;
}

Finding finding_of(element f) {
  Finding out;
  out.cause = str(f, "cause");
  out.layer = str(f, "layer");
  out.severity = severity_of(str(f, "severity"));
  out.state = str(f, "state") == "pending" ? State::kPending : State::kFiring;
  bool ongoing = false;
  out.ongoing = !f["ongoing"].get(ongoing) && ongoing;
  out.since_ms = time_ms(f, "since");
  out.held_ms = ms_of(number(f, "held_seconds"));
  out.for_ms = ms_of(number(f, "for_seconds"));
  out.action = str(f, "action");
  const double waste = number(f, "waste_gpu_hours");
  out.waste_gpu_seconds = std::isfinite(waste) ? waste * 3600 : 0;
  simdjson::dom::array ev;
  if (!f["evidence"].get(ev)) {
    for (element e : ev) {
      out.evidence.push_back({str(e, "signal"), number(e, "value"), number(e, "threshold"), str(e, "detail")});
      // Its series (evidence_series.h), as many points as the writer bounds them to.
      simdjson::dom::array t, v;
      if (e["series"]["t"].get(t) || e["series"]["v"].get(v)) continue;
      Series& s = out.evidence.back().series;
      auto ti = t.begin(), vi = v.begin();
      for (; ti != t.end() && vi != v.end() && s.size() < kMaxEvidencePoints; ++ti, ++vi) {
        int64_t at = 0;
        double value = 0;
        if ((*ti).get(at) || (*vi).get(value)) continue;  // null: not a number there
        s.push_back({at, value});
      }
    }
  }
  element by;
  if (!f["explained_by"].get(by) && by.is_object()) out.explained_by = {str(by, "cause"), str(by, "gpu"), str(by, "why"), str(by, "host")};
  simdjson::dom::array periods;
  if (!f["periods"].get(periods)) {
    for (element p : periods) out.periods.emplace_back(time_ms(p, "from"), time_ms(p, "to"));
  }
  element profile;
  if (!f["profile"].get(profile) && profile.is_object()) {
    ProfileSummary& p = out.profile;
    p.state = str(profile, "state");
    p.capture = str(profile, "capture");
    const double pid = number(profile, "pid");
    p.pid = std::isfinite(pid) ? static_cast<int64_t>(pid) : 0;
    p.kind = str(profile, "kind");
    p.at_ms = time_ms(profile, "at");
    p.of = str(profile, "of");
    simdjson::dom::array top;
    if (!profile["top"].get(top)) {
      for (element t : top) p.top.push_back({str(t, "name"), number(t, "share")});
    }
    const double wait = number(profile, "dataloader_wait_share"), sync = number(profile, "device_sync_share");
    p.dataloader_wait = std::isfinite(wait) ? wait : -1;
    p.device_sync = std::isfinite(sync) ? sync : -1;
    p.verdict = str(profile, "verdict");
    p.summary = str(profile, "summary");
  }
  return out;
}

}  // namespace

Result<Report> report_from_json(std::string_view json, std::string_view what) {
  simdjson::dom::parser parser;
  element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc); err) {
    return io_error(std::string(what) + ": not a diagnosis report: " + simdjson::error_message(err));
  }
  simdjson::dom::array hosts;
  if (doc["hosts"].get(hosts)) return io_error(std::string(what) + ": not a diagnosis report (no \"hosts\")");
  Report r;
  element window;
  if (!doc["window"].get(window)) {
    r.from_ms = time_ms(window, "from");
    r.to_ms = time_ms(window, "to");
  }
  for (element h : hosts) {
    HostReport hr;
    hr.host = str(h, "host");
    bool simulated = false;
    if (!h["simulated"].get_bool().get(simulated)) hr.simulated = simulated;
    hr.scenario = str(h, "scenario");
    simdjson::dom::array gpus;
    if (h["gpus"].get(gpus)) continue;
    for (element g : gpus) {
      GpuReport gr;
      gr.gpu = str(g, "gpu");
      gr.uuid = str(g, "uuid");
      gr.model = str(g, "model");
      if (element mig; !g["mig"].get(mig) && mig.is_object()) {
        gr.mig = {str(mig, "gpu"), str(mig, "gpu_instance_id"), str(mig, "profile"), str(mig, "uuid")};
      }
      const double waste = number(g, "waste_gpu_hours");
      gr.waste_gpu_seconds = std::isfinite(waste) ? waste * 3600 : 0;
      const double covered = number(g, "covered_seconds");
      gr.covered_ms = std::isfinite(covered) ? ms_of(covered) : r.to_ms - r.from_ms;
      simdjson::dom::array list;
      if (!g["findings"].get(list)) {
        for (element f : list) gr.findings.push_back(finding_of(f));
      }
      if (!g["not_assessed"].get(list)) {
        for (element n : list) gr.not_assessed.push_back({str(n, "cause"), str(n, "reason")});
      }
      if (!g["notes"].get(list)) {
        for (element n : list) {
          std::string_view v;
          if (!n.get(v)) gr.notes.emplace_back(v);
        }
      }
      r.covered_gpu_seconds += static_cast<double>(gr.covered_ms) / 1000.0;
      ++r.gpu_count;
      hr.gpus.push_back(std::move(gr));
    }
    r.hosts.push_back(std::move(hr));
  }
  simdjson::dom::array jobs;
  if (!doc["jobs"].get(jobs)) {
    for (element j : jobs) {
      JobReport jr;
      jr.job = str(j, "job");
      jr.source = str(j, "source");
      simdjson::dom::array gpus;
      if (!j["gpus"].get(gpus)) {
        for (element g : gpus) {
          std::string_view v;
          if (!g.get(v)) jr.gpus.emplace_back(v);
        }
      }
      const double hosts_n = number(j, "hosts");
      jr.hosts = std::isfinite(hosts_n) && hosts_n > 0 ? static_cast<size_t>(hosts_n) : 0;
      if (element root; !j["root"].get(root) && root.is_object()) {
        jr.has_root = true;
        jr.root = {str(root, "host"), str(root, "gpu"), str(root, "cause"), time_ms(root, "since")};
      }
      if (element hang; !j["hang"].get(hang) && hang.is_object()) {
        jr.hung = true;
        jr.hang.cause = "hang";
        jr.hang.since_ms = time_ms(hang, "since");
        if (element first; !hang["first"].get(first) && first.is_object()) {
          jr.hang.host = str(first, "host");
          jr.hang.gpu = str(first, "gpu");
        }
      }
      const double w = number(j, "waste_gpu_hours");
      jr.waste_gpu_seconds = std::isfinite(w) ? w * 3600 : 0;
      simdjson::dom::array notes;
      if (!j["notes"].get(notes)) {
        for (element n : notes) {
          std::string_view v;
          if (!n.get(v)) jr.notes.emplace_back(v);
        }
      }
      r.jobs.push_back(std::move(jr));
    }
  }
  element by_cause;
  if (!doc["waste"]["by_cause"].get(by_cause) && by_cause.is_object()) {
    for (auto [k, v] : simdjson::dom::object(by_cause)) {
      const double h = number(v, "gpu_hours");
      if (std::isfinite(h)) r.waste_by_cause[std::string(k)] = h * 3600;
    }
  }
  simdjson::dom::array warnings;
  if (!doc["warnings"].get(warnings)) {
    for (element w : warnings) {
      std::string_view v;
      if (!w.get(v)) r.input_warnings.emplace_back(v);
    }
  }
  return r;
}

}  // namespace gpulens::diagnose
