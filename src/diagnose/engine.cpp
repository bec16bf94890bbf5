// Engine driver: timelines, alignment, runs, ordering, peer faults, waste.
// The rules themselves are in rules.cpp.
#include "diagnose/engine.h"

#include <algorithm>
#include <cstddef>
#include <cmath>
#include <map>
#include <set>

#include "diagnose/explain.h"
#include "diagnose/report_format.h"
#include "diagnose/rules.h"

namespace gpulens::diagnose {

std::string_view state_name(State s) { return s == State::kFiring ? "firing" : "pending"; }

double Report::covered_seconds() const {
  return gpu_count ? covered_gpu_seconds / static_cast<double>(gpu_count) : 0;
}

std::string_view severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kCritical: return "critical";
  }
  return "?";
}

bool Report::simulated() const {
  return std::any_of(hosts.begin(), hosts.end(), [](const HostReport& h) { return h.simulated; });
}

bool Report::has_findings(Severity at_least) const {
  for (const auto& h : hosts) {
    for (const auto& g : h.gpus) {
      for (const auto& f : g.findings) {
        if (f.state == State::kFiring && f.severity >= at_least) return true;
      }
    }
  }
  return false;
}

const std::vector<std::string_view>& cause_order() {
  static const std::vector<std::string_view> order{
      "hardware_errors", "input_pipeline", "host_transfer",    "memory_bandwidth", "network_fallback",
      "communication",   "kv_cache_pressure", "overload", "kernel_launch",  "topology",         "thermal_throttle", "power_cap",
      "pcie_link_degraded", "memory_fragmentation", "memory_pressure", "idle", "small_batch"};
  return order;
}

namespace {

size_t rank_of(std::string_view cause) {
  const auto& o = cause_order();
  return static_cast<size_t>(std::find(o.begin(), o.end(), cause) - o.begin());
}

// Values of `s` on `timeline`: the latest sample at or before t, if no older
// than `lookback_ms`; NaN otherwise.
Aligned align(const Series& s, const std::vector<int64_t>& timeline, int64_t lookback_ms) {
  Aligned out(timeline.size(), std::nan(""));
  if (s.empty()) return out;
  size_t j = 0;
  for (size_t i = 0; i < timeline.size(); ++i) {
    const int64_t t = timeline[i];
    while (j + 1 < s.size() && s[j + 1].t_ms <= t) ++j;
    if (s[j].t_ms <= t && t - s[j].t_ms <= lookback_ms) out[i] = s[j].v;
  }
  return out;
}

// The runs of `holds`: maximal stretches where the condition is true. A run
// breaks where the condition is false or unknown, or at a gap in the timeline
// longer than `max_gap_ms` (no data: as a Prometheus alert, the state resets).
struct Run {
  size_t first, last;
  int64_t covered_ms;  // t[last] - t[first] + one step: the time its points stand for
};
std::vector<Run> runs_of(const std::vector<int8_t>& holds, const std::vector<int64_t>& t, int64_t step_ms,
                         int64_t max_gap_ms) {
  std::vector<Run> out;
  size_t i = 0;
  while (i < holds.size()) {
    if (holds[i] != 1) { ++i; continue; }
    size_t j = i;
    while (j + 1 < holds.size() && holds[j + 1] == 1 && t[j + 1] - t[j] <= max_gap_ms) ++j;
    out.push_back({i, j, t[j] - t[i] + step_ms});
    i = j + 1;
  }
  return out;
}

void diagnose_gpu(const HostSignals& host, const GpuSignals& gpu, const Thresholds& th, int64_t window_from,
                  int64_t window_to, int64_t cutoff_ms, GpuReport& out) {
  // The timeline: the GPU's utilisation samples (or the best stand-in).
  const Series* primary = nullptr;
  for (GpuSig s : {GpuSig::kGpuUtil, GpuSig::kSmActive, GpuSig::kGrActive, GpuSig::kGpuUp, GpuSig::kLastXid,
                   GpuSig::kHealthStatus, GpuSig::kTemperature}) {
    if (!gpu.sig(s).empty()) { primary = &gpu.sig(s); break; }
  }
  if (primary == nullptr) {
    out.notes.push_back("no utilisation or health signals for this GPU: nothing assessed");
    return;
  }
  GpuContext ctx{.host = host, .gpu = gpu, .th = th, .t = {}, .align = {}};
  // Health signals extend the timeline: a lost GPU stops reporting
  // utilisation but still says it is lost.
  for (const Series* s :
       {primary, &gpu.sig(GpuSig::kGpuUp), &gpu.sig(GpuSig::kLastXid), &gpu.sig(GpuSig::kHealthStatus)}) {
    for (const Point& p : *s) {
      if (p.t_ms >= window_from && p.t_ms <= window_to) ctx.t.push_back(p.t_ms);
    }
  }
  std::sort(ctx.t.begin(), ctx.t.end());
  ctx.t.erase(std::unique(ctx.t.begin(), ctx.t.end()), ctx.t.end());
  if (ctx.t.empty()) return;
  ctx.step_ms = std::max<int64_t>(median_step_ms(*primary), 1000);
  ctx.lookback_ms = std::clamp<int64_t>(3 * ctx.step_ms, 30'000, 300'000);
  ctx.span_ms = ctx.t.back() - ctx.t.front() + ctx.step_ms;
  ctx.cutoff_ms = cutoff_ms;
  ctx.align = [&ctx](const Series& s) { return align(s, ctx.t, ctx.lookback_ms); };

  std::vector<RuleResult> results = evaluate_rules(ctx, out.not_assessed, out.notes);

  // Durations: each point stands for the time to the next one (bounded).
  const size_t n = ctx.t.size();
  std::vector<double> dt(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t d = i + 1 < n ? ctx.t[i + 1] - ctx.t[i] : ctx.step_ms;
    dt[i] = static_cast<double>(std::min(d, ctx.lookback_ms)) / 1000.0;
  }
  std::sort(results.begin(), results.end(),
            [](const RuleResult& a, const RuleResult& b) { return rank_of(a.cause) < rank_of(b.cause); });

  // Exact durations, as Prometheus alerts: a run fires when its points cover
  // at least `for_ms`; a shorter run still holding at the last point is
  // pending; a shorter run that ended is a blip and dropped.
  std::vector<uint8_t> qualified(n);
  std::vector<int> owner(n, -1);  // which finding a point's waste is charged to
  for (RuleResult& r : results) {
    std::fill(qualified.begin(), qualified.end(), 0);
    const std::vector<Run> runs = runs_of(r.holds, ctx.t, ctx.step_ms, ctx.lookback_ms);
    bool firing = false;
    bool ongoing = false;
    const Run* pending = nullptr;
    for (const Run& run : runs) {
      if (run.covered_ms >= r.for_ms) {
        firing = true;
        ongoing = run.last + 1 == n;
        std::fill(qualified.begin() + static_cast<ptrdiff_t>(run.first),
                  qualified.begin() + static_cast<ptrdiff_t>(run.last) + 1, 1);
      } else if (run.last + 1 == n) {
        pending = &run;
      }
    }
    if (!firing && pending == nullptr) continue;
    Finding f;
    f.cause = std::string(r.cause);
    f.layer = std::string(r.layer);
    f.severity = r.severity;
    f.action = r.action;
    f.for_ms = r.for_ms;
    f.ongoing = ongoing || !firing;
    if (!firing) {
      // Evidence and time of the pending run; no waste until it fires.
      f.state = State::kPending;
      std::fill(qualified.begin() + static_cast<ptrdiff_t>(pending->first), qualified.end(), 1);
    }
    for (size_t i = 0; i < n; ++i) {
      if (!qualified[i]) continue;
      const int64_t end = ctx.t[i] + static_cast<int64_t>(dt[i] * 1000.0);
      if (!f.periods.empty() && f.periods.back().second >= ctx.t[i]) f.periods.back().second = end;
      else f.periods.emplace_back(ctx.t[i], end);
    }
    bool any = false;
    for (size_t i = 0; i < n; ++i) {
      if (!qualified[i]) continue;
      if (!any) f.since_ms = ctx.t[i];
      any = true;
      f.held_ms += static_cast<int64_t>(dt[i] * 1000.0);
    }
    for (const EvidenceSpec& e : r.evidence) {
      double sum = 0;
      size_t cnt = 0;
      for (size_t i = 0; i < n; ++i) {
        if (qualified[i] && !std::isnan(e.values[i])) { sum += e.values[i]; ++cnt; }
      }
      if (cnt) f.evidence.push_back({std::string(e.signal.name), sum / static_cast<double>(cnt), e.threshold, e.detail});
    }
    const int index = static_cast<int>(out.findings.size());
    if (firing) {
      for (size_t i = 0; i < n; ++i) {
        if (qualified[i] && owner[i] < 0) owner[i] = index;
      }
    }
    out.findings.push_back(std::move(f));
  }
  // Waste per point, charged to its first cause: all of it for an idle or
  // failed GPU, the lost clock (1 - SM clock / max) for a throttled one,
  // else the SMs' idle share (1 - SM active).
  const Aligned sm = ctx.align(ctx.busy_series());
  const Aligned clock = ctx.align(gpu.sig(GpuSig::kSmClock));
  const Aligned clock_max = ctx.align(gpu.sig(GpuSig::kSmClockMax));
  double covered = 0;
  for (size_t i = 0; i < n; ++i) {
    covered += dt[i];
    if (owner[i] < 0) continue;
    Finding& f = out.findings[static_cast<size_t>(owner[i])];
    double lost;
    if (f.cause == "idle" || f.cause == "hardware_errors") {
      lost = 1.0;
    } else if ((f.cause == "thermal_throttle" || f.cause == "power_cap") && clock_max[i] > 0 &&
               !std::isnan(clock[i])) {
      lost = 1.0 - std::clamp(clock[i] / clock_max[i], 0.0, 1.0);
    } else {
      lost = std::isnan(sm[i]) ? 1.0 : 1.0 - std::clamp(sm[i], 0.0, 1.0);
    }
    f.waste_gpu_seconds += lost * dt[i];
  }
  out.covered_ms = static_cast<int64_t>(covered * 1000.0);
  for (const Finding& f : out.findings) out.waste_gpu_seconds += f.waste_gpu_seconds;
  // Firing before pending, then by severity (the order of investigation
  // within each, from the sort above).
  std::stable_sort(out.findings.begin(), out.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.state != b.state) return a.state == State::kFiring;
    return a.severity > b.severity;
  });
}


// One point in time: a cause with a duration cannot be judged, whether or
// not its condition holds at that point; say which, for how long it needs
// data, and whether it holds now. Counters have no rate from one point.
void judge_point_in_time(const Thresholds& th, HostReport& hr) {
  for (GpuReport& g : hr.gpus) {
    std::vector<std::string> holding;
    std::vector<Finding> kept;
    for (Finding& f : g.findings) {
      if (cause_duration_ms(f.cause, th) > 0) {
        holding.push_back(f.cause);
      } else {
        f.waste_gpu_seconds = 0;
        f.held_ms = 0;  // a point: no time held ("at", not "since")
        f.periods.clear();
        kept.push_back(std::move(f));
      }
    }
    g.findings = std::move(kept);
    g.waste_gpu_seconds = 0;
    std::vector<NotAssessed> na;
    for (std::string_view cause : cause_order()) {
      const int64_t d = cause_duration_ms(cause, th);
      if (d <= 0) {
        for (NotAssessed& n : g.not_assessed) {
          if (n.cause == cause) na.push_back(std::move(n));
        }
        continue;
      }
      const bool holds = std::find(holding.begin(), holding.end(), cause) != holding.end();
      na.push_back({std::string(cause), "needs " + human(d) + " of data; a plain scrape is one point in time" +
                                            (holds ? " (its condition holds at that point)" : "")});
    }
    g.not_assessed = std::move(na);
    g.notes.push_back("one point in time (a scrape without timestamps): counters (ECC, XID counts, PCIe and "
                      "network bytes, CPU time) give no rate; judged: the last XID, gpu_up, row-remap failure, DCGM health "
                      "watches");
  }
}

}  // namespace

int64_t cause_duration_ms(std::string_view cause, const Thresholds& th) {
  if (cause == "hardware_errors") return 0;
  if (cause == "host_transfer") return th.pcie_for_ms;
  if (cause == "pcie_link_degraded") return th.link_degraded_for_ms;
  if (cause == "kernel_launch" || cause == "small_batch") return th.occupancy_for_ms;
  if (cause == "topology") return th.topology_for_ms;
  if (cause == "thermal_throttle") return th.thermal_for_ms;
  if (cause == "memory_fragmentation") return th.fragmentation_for_ms;
  if (cause == "idle") return th.low_util_for_ms;
  return th.default_for_ms;
}


void merge_report(Report& into, Report part) {
  if (into.hosts.empty() && into.gpu_count == 0) {
    into.from_ms = part.from_ms;
    into.to_ms = part.to_ms;
  } else {
    into.from_ms = std::min(into.from_ms, part.from_ms);
    into.to_ms = std::max(into.to_ms, part.to_ms);
  }
  for (HostReport& h : part.hosts) into.hosts.push_back(std::move(h));
  for (JobReport& j : part.jobs) {
    // A job whose hosts fell into several batches: one entry, judged per batch.
    auto same = std::find_if(into.jobs.begin(), into.jobs.end(), [&](const JobReport& x) {
      return x.job == j.job && x.source == j.source && x.source != "host";
    });
    if (same == into.jobs.end()) {
      into.jobs.push_back(std::move(j));
      continue;
    }
    for (std::string& g : j.gpus) same->gpus.push_back(std::move(g));
    for (std::string& n : j.notes) same->notes.push_back(std::move(n));
    same->hosts += j.hosts;
    same->waste_gpu_seconds += j.waste_gpu_seconds;
    if (!same->has_root && j.has_root) {
      same->has_root = true;
      same->root = std::move(j.root);
    }
    same->hung = same->hung && j.hung;
  }
  for (const auto& [cause, waste] : part.waste_by_cause) into.waste_by_cause[cause] += waste;
  into.gpu_count += part.gpu_count;
  into.covered_gpu_seconds += part.covered_gpu_seconds;
  for (std::string& w : part.input_warnings) into.input_warnings.push_back(std::move(w));
}

Report diagnose(const SignalSet& set, const Thresholds& th) {
  Report report;
  report.from_ms = set.from_ms;
  report.to_ms = set.to_ms;
  report.point_in_time = set.point_in_time;
  // A GPU that fails takes its job down, on every host of the job: the
  // moment of the job's first fatal fault bounds the others' windows.
  const std::vector<JobGroup> jobs = job_groups(set);
  struct PeerOf {
    int64_t ms;
    std::string host, gpu;
  };
  std::map<std::pair<size_t, std::string>, PeerOf> peer_of;  // (host, GPU) -> the job's failed GPU
  for (const JobGroup& job : jobs) {
    const JobFault fault = job_fault(set, job);
    if (!fault.found) continue;
    for (const auto& member : job.gpus) {
      if (member.first == fault.host && member.second == fault.gpu) continue;
      // A GPU of two jobs waits for the fault that came first.
      auto [it, fresh] = peer_of.try_emplace(member, PeerOf{fault.ms, set.hosts[fault.host].name, fault.gpu});
      if (!fresh && fault.ms < it->second.ms) it->second = {fault.ms, set.hosts[fault.host].name, fault.gpu};
    }
  }
  for (size_t h = 0; h < set.hosts.size(); ++h) {
    const HostSignals& host = set.hosts[h];
    HostReport hr;
    hr.host = host.name;
    hr.simulated = host.simulated;
    hr.scenario = host.scenario;
    for (const GpuSignals& g : host.gpus) {
      GpuReport gr;
      gr.gpu = g.index;
      gr.uuid = g.uuid;
      gr.model = g.model;
      gr.mig = g.mig;
      if (!g.also_jobs.empty()) {
        std::string ids = g.job;
        for (const GpuSignals::JobClaim& c : g.also_jobs) ids += ", " + c.job;
        gr.notes.push_back("claimed by " + std::to_string(g.also_jobs.size() + 1) + " jobs at the same time (" + ids +
                           "): listed under each job; its waste counts once per cause and in each job's total");
      }
      const auto peer = peer_of.find({h, g.index});
      int64_t cutoff = first_fatal_fault_ms(g);
      if (peer != peer_of.end()) {
        cutoff = std::min(cutoff, peer->second.ms);
        gr.notes.push_back("GPU " + peer->second.gpu + (peer->second.host == host.name ? "" : " of " + peer->second.host) +
                           " failed (hardware_errors); this GPU is assessed only up to then, its later stall is not "
                           "its own fault");
      }
      diagnose_gpu(host, g, th, set.from_ms, set.to_ms, cutoff, gr);
      if (peer != peer_of.end()) {
        // What the peer shows from the fault on: consequences of the failed GPU.
        const PeerOf& root = peer->second;
        GpuReport after;
        after.gpu = g.index;
        diagnose_gpu(host, g, th, set.from_ms, set.to_ms, INT64_MAX, after);
        for (Finding& f : after.findings) {
          if (f.state != State::kFiring || f.since_ms < root.ms || f.cause == "hardware_errors") continue;
          f.explained_by = {"hardware_errors", root.gpu,
                            waiting_for(root.host, root.gpu, "hardware_errors") +
                                ": it failed; the stall that follows is not this GPU's fault",
                            root.host};
          gr.waste_gpu_seconds += f.waste_gpu_seconds;
          gr.findings.push_back(std::move(f));
        }
      }
      if (!gr.mig.empty()) {
        // The instance, named where the evidence is read.
        const std::string who = gr.mig.describe();
        for (Finding& f : gr.findings) {
          if (f.evidence.empty()) continue;
          std::string& d = f.evidence.front().detail;
          d = d.empty() ? who : who + "; " + d;
        }
      }
      report.covered_gpu_seconds += static_cast<double>(gr.covered_ms) / 1000.0;
      ++report.gpu_count;
      hr.gpus.push_back(std::move(gr));
    }
    if (set.point_in_time) judge_point_in_time(th, hr);
    explain(host, th, hr);
    report.hosts.push_back(std::move(hr));
  }
  explain_jobs(set, jobs, th, report);
  // Waste: a consequence's under its root cause, per cause and per job.
  std::map<std::pair<std::string, std::string>, double> by_gpu;  // (host, GPU) -> waste
  for (const HostReport& hr : report.hosts) {
    for (const GpuReport& gr : hr.gpus) {
      for (const Finding& f : gr.findings) {
        report.waste_by_cause[f.explained_by.cause.empty() ? f.cause : f.explained_by.cause] += f.waste_gpu_seconds;
        by_gpu[{hr.host, gr.gpu}] += f.waste_gpu_seconds;
      }
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (const auto& [h, index] : jobs[j].gpus) {
      report.jobs[j].waste_gpu_seconds += by_gpu[{set.hosts[h].name, index}];
    }
  }
  return report;
}

namespace {
struct ModelPeak {
  std::string_view token;
  double pcie;
  double nvlink;  // per direction, SXM parts
};
// Longest tokens first: "H100 PCIe" before "H100".
constexpr ModelPeak kModels[] = {
    {"GB200", 63.015e9, 900e9}, {"B200", 63.015e9, 900e9}, {"H200", 63.015e9, 450e9},
    {"H100 PCIe", 63.015e9, 0}, {"H100", 63.015e9, 450e9}, {"H800", 63.015e9, 200e9},
    {"A100-PCIE", 31.508e9, 0}, {"A100 PCIe", 31.508e9, 0}, {"A100", 31.508e9, 300e9},
    {"A800", 31.508e9, 200e9}, {"L40", 31.508e9, 0},        {"L4", 31.508e9, 0},
    {"A10", 31.508e9, 0},       {"V100", 15.754e9, 150e9},  {"T4", 15.754e9, 0},
};
const ModelPeak* model_peak(std::string_view model) {
  for (const ModelPeak& m : kModels) {
    if (model.find(m.token) != model.npos) return &m;
  }
  return nullptr;
}
}  // namespace

double pcie_model_bytes_per_second(std::string_view model) {
  const ModelPeak* m = model_peak(model);
  return m ? m->pcie : 0;
}

double nvlink_model_bytes_per_second(std::string_view model) {
  const ModelPeak* m = model_peak(model);
  return m ? m->nvlink : 0;
}

}  // namespace gpulens::diagnose
