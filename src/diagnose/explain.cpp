// The explanation graph: edge conditions over findings and their evidence.
#include "diagnose/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "diagnose/rules.h"

namespace gpulens::diagnose {
namespace {

const Evidence* evidence(const Finding& f, std::string_view signal) {
  for (const Evidence& e : f.evidence) {
    if (e.signal == signal) return &e;
  }
  return nullptr;
}

Finding* firing(GpuReport& g, std::string_view cause) {
  for (Finding& f : g.findings) {
    if (f.cause == cause && f.state == State::kFiring) return &f;
  }
  return nullptr;
}

bool overlap(const Finding& a, const Finding& b) {
  return a.since_ms < b.since_ms + std::max<int64_t>(b.held_ms, 1) &&
         b.since_ms < a.since_ms + std::max<int64_t>(a.held_ms, 1);
}

void mark(Finding& symptom, const Finding& root, const std::string& gpu, std::string why) {
  if (!symptom.explained_by.cause.empty()) return;  // the first explanation wins
  symptom.explained_by = {root.cause, gpu, std::move(why), {}};
}

void pct(double v, char* b, size_t n) { std::snprintf(b, n, "%.0f %%", v * 100); }

void same_gpu_edges(GpuReport& g, const Thresholds& th) {
  char b[32];
  if (Finding* link = firing(g, "pcie_link_degraded")) {
    if (Finding* ht = firing(g, "host_transfer")) {
      const Evidence* full = evidence(*ht, "pcie_util_full_link");
      if (full != nullptr && full->value < th.pcie_util) {
        pct(full->value, b, sizeof b);
        mark(*ht, *link, g.gpu, std::string("the traffic saturates the degraded link but is ") + b +
                                    " of the full link's peak");
      }
    }
  }
  if (Finding* frag = firing(g, "memory_fragmentation")) {
    if (Finding* mp = firing(g, "memory_pressure")) {
      const Evidence* used = evidence(*mp, "fb_used_ratio");
      const Evidence* share = evidence(*frag, "fragmentation");
      if (used != nullptr && share != nullptr && used->value * (1 - share->value) < th.memory_used) {
        pct(used->value * (1 - share->value), b, sizeof b);
        mark(*mp, *frag, g.gpu, std::string("without the reserved-but-unallocated memory the framebuffer would be ") +
                                    b + " full");
      }
    }
  }
  if (Finding* nf = firing(g, "network_fallback")) {
    if (Finding* comm = firing(g, "communication")) {
      mark(*comm, *nf, g.gpu, "the collectives are slow because NCCL runs over TCP sockets");
    }
  }
}

// Roots in their order, each followed by its same-GPU consequences; then
// findings explained by another GPU.
void order(GpuReport& g) {
  std::vector<Finding> roots, cross;
  std::multimap<std::string, Finding> local;  // root cause -> consequences
  for (Finding& f : g.findings) {
    if (f.explained_by.cause.empty()) roots.push_back(std::move(f));
    else if (f.explained_by.gpu == g.gpu && f.explained_by.host.empty()) local.emplace(f.explained_by.cause, std::move(f));
    else cross.push_back(std::move(f));
  }
  g.findings.clear();
  for (Finding& r : roots) {
    const std::string cause = r.cause;
    g.findings.push_back(std::move(r));
    auto [lo, hi] = local.equal_range(cause);
    for (auto it = lo; it != hi; ++it) g.findings.push_back(std::move(it->second));
    local.erase(lo, hi);
  }
  for (auto& [cause, f] : local) g.findings.push_back(std::move(f));  // root not listed (cannot happen)
  for (Finding& f : cross) g.findings.push_back(std::move(f));
}

}  // namespace

const std::vector<ExplanationEdge>& explanation_edges() {
  static const std::vector<ExplanationEdge> edges{
      {"pcie_link_degraded", "host_transfer", "same GPU"},
      {"memory_fragmentation", "memory_pressure", "same GPU"},
      {"hardware_errors", "*", "job peers"},
      {"thermal_throttle", "idle", "job peers"},
      {"thermal_throttle", "communication", "job peers"},
      {"power_cap", "idle", "job peers"},
      {"power_cap", "communication", "job peers"},
      {"pcie_link_degraded", "idle", "job peers"},
      {"pcie_link_degraded", "communication", "job peers"},
      {"thermal_throttle", "small_batch", "job peers"},
      {"power_cap", "small_batch", "job peers"},
      {"pcie_link_degraded", "small_batch", "job peers"},
      {"network_fallback", "communication", "same GPU"},
  };
  return edges;
}

std::vector<std::vector<std::string>> jobs_of(const HostSignals& host) {
  std::set<std::string> free;  // GPUs without a job id
  for (const GpuSignals& g : host.gpus) {
    if (g.job.empty()) free.insert(g.index);
  }
  std::vector<std::vector<std::string>> jobs;
  std::map<std::string, std::set<std::string>> by_pid;
  for (const ProcessPlacement& p : host.processes) {
    if (free.contains(p.gpu)) by_pid[p.pid].insert(p.gpu);
  }
  // Merge pids that share a GPU; a group of one GPU (one process per GPU, as
  // DDP runs) stays in the host's job.
  std::vector<std::set<std::string>> groups;
  for (auto& [pid, gpus] : by_pid) {
    std::set<std::string> merged = gpus;
    std::vector<std::set<std::string>> rest;
    for (auto& grp : groups) {
      const bool shares = std::any_of(grp.begin(), grp.end(), [&](const std::string& x) { return merged.contains(x); });
      if (shares) merged.insert(grp.begin(), grp.end());
      else rest.push_back(std::move(grp));
    }
    rest.push_back(std::move(merged));
    groups = std::move(rest);
  }
  std::vector<std::string> rest;  // the host's job, in the host's order
  std::set<std::string> taken;
  for (auto& grp : groups) {
    if (grp.size() < 2) continue;
    taken.insert(grp.begin(), grp.end());
    jobs.emplace_back(grp.begin(), grp.end());
  }
  for (const GpuSignals& g : host.gpus) {
    if (free.contains(g.index) && !taken.contains(g.index)) rest.push_back(g.index);
  }
  if (!rest.empty()) jobs.insert(jobs.begin(), std::move(rest));
  return jobs;
}

namespace {

// A GPU NVML never reported in the window (no utilisation sample) whose
// failure the kernel log told: the kmsg source's own index for a bus NVML
// does not list.
bool kernel_log_only_failure(const GpuSignals& g) {
  return g.job.empty() && g.sig(GpuSig::kGpuUtil).empty() && g.sig(GpuSig::kSmActive).empty() &&
         first_fatal_fault_ms(g) != INT64_MAX;
}

}  // namespace

std::vector<JobGroup> job_groups(const SignalSet& set) {
  std::map<std::string, JobGroup> by_id, by_host;  // real job ids first, then the hosts' jobs
  for (size_t h = 0; h < set.hosts.size(); ++h) {
    const HostSignals& host = set.hosts[h];
    std::set<std::string> ids;
    for (const GpuSignals& g : host.gpus) {
      if (g.job.empty()) continue;
      // The GPU's job, and each job that claims it at the same time.
      auto claim = [&](const std::string& id, const std::string& source) {
        ids.insert(id);
        JobGroup& j = by_id[id];
        j.job = id;
        if (j.source.empty()) j.source = source.empty() ? "environment" : source;
        j.gpus.emplace_back(h, g.index);
      };
      claim(g.job, g.job_source);
      for (const GpuSignals::JobClaim& c : g.also_jobs) claim(c.job, c.source);
    }
    // A lost GPU only the kernel log knows served the host's one job: NVML
    // lost it before it could name the job. With two jobs it is unknown which.
    std::set<std::string> adopted;
    if (ids.size() == 1) {
      for (const GpuSignals& g : host.gpus) {
        if (!kernel_log_only_failure(g)) continue;
        by_id[*ids.begin()].gpus.emplace_back(h, g.index);
        adopted.insert(g.index);
      }
    }
    auto local = jobs_of(host);
    for (auto& grp : local) std::erase_if(grp, [&](const std::string& i) { return adopted.contains(i); });
    std::erase_if(local, [](const std::vector<std::string>& grp) { return grp.empty(); });
    for (size_t k = 0; k < local.size(); ++k) {
      // The host's job is named by the host; a multi-GPU process's job by
      // the host and its GPUs.
      std::string id = host.name;
      if (k > 0 || local.size() > 1) {
        id += ":";
        for (size_t i = 0; i < local[k].size(); ++i) id += (i ? "," : "") + local[k][i];
      }
      JobGroup& j = by_host[id];
      j.job = id;
      j.source = "host";
      for (const std::string& gpu : local[k]) j.gpus.emplace_back(h, gpu);
    }
  }
  std::vector<JobGroup> out;
  for (auto& [key, j] : by_id) out.push_back(std::move(j));
  for (auto& [key, j] : by_host) out.push_back(std::move(j));
  return out;
}

JobFault job_fault(const SignalSet& set, const JobGroup& job) {
  JobFault f;
  for (const auto& [h, index] : job.gpus) {
    for (const GpuSignals& g : set.hosts[h].gpus) {
      if (g.index != index) continue;
      const int64_t t = first_fatal_fault_ms(g);
      if (t < f.ms) f = {true, t, h, index};
    }
  }
  return f;
}

std::string waiting_for(std::string_view host, std::string_view gpu, std::string_view cause) {
  return "waiting for GPU " + std::string(gpu) + " of " + std::string(host) + " (" + std::string(cause) + ")";
}

void explain(const HostSignals& /*host*/, const Thresholds& th, HostReport& report) {
  for (GpuReport& g : report.gpus) same_gpu_edges(g, th);
}

namespace {
// The value of `s` at or before t, if no older than `max_age_ms`; NaN otherwise.
double at(const Series& s, size_t& j, int64_t t, int64_t max_age_ms) {
  while (j + 1 < s.size() && s[j + 1].t_ms <= t) ++j;
  if (s.empty() || s[j].t_ms > t || t - s[j].t_ms > max_age_ms) return std::nan("");
  return s[j].v;
}
}  // namespace

int64_t stuck_since_ms(const HostSignals& host, const GpuSignals& gpu, const Thresholds& th) {
  constexpr double kSmIdle = 0.1;
  const Series& util = gpu.sig(GpuSig::kGpuUtil);
  if (util.empty()) return INT64_MAX;
  const int64_t max_age = std::clamp<int64_t>(3 * median_step_ms(util), 30'000, 300'000);
  const Series& sm = gpu.sig(GpuSig::kSmActive);
  const Series& nv = gpu.sig(GpuSig::kNvlinkUtil);
  const Series& nv_rx = gpu.sig(GpuSig::kNvlinkRxBps);
  const Series& used = gpu.sig(GpuSig::kFbUsed);
  const Series& ib_rx = host.sig(HostSig::kIbRxBps);
  const Series& ib_tx = host.sig(HostSig::kIbTxBps);
  size_t js = 0, jn = 0, jr = 0, ju = 0, ji = 0, jt = 0;
  int64_t since = INT64_MAX;
  for (const Point& p : util) {
    const double s = at(sm, js, p.t_ms, max_age), n = at(nv, jn, p.t_ms, max_age), r = at(nv_rx, jr, p.t_ms, max_age);
    const double u = at(used, ju, p.t_ms, max_age), ir = at(ib_rx, ji, p.t_ms, max_age), it = at(ib_tx, jt, p.t_ms, max_age);
    const bool quiet = !(n > 0.01) && !(r > 1e6) && !(ir > th.ib_idle_bytes_per_second) &&
                       !(it > th.ib_idle_bytes_per_second);
    const bool spinning = p.v >= th.busy_util && s < kSmIdle && quiet;  // unknown SM activity: not judged
    const bool parked = p.v <= th.idle_util && u >= th.idle_memory_bytes;
    if (spinning || parked) {
      if (since == INT64_MAX) since = p.t_ms;
    } else {
      since = INT64_MAX;
    }
  }
  if (since == INT64_MAX || util.back().t_ms - since + median_step_ms(util) < th.default_for_ms) return INT64_MAX;
  return since;
}

void explain_jobs(const SignalSet& set, const std::vector<JobGroup>& jobs, const Thresholds& th, Report& report) {
  // The report's hosts are in the set's order (diagnose()), one per host.
  auto gpu_at = [&](size_t h, const std::string& index) -> GpuReport* {
    if (h >= report.hosts.size()) return nullptr;
    for (GpuReport& g : report.hosts[h].gpus) {
      if (g.gpu == index) return &g;
    }
    return nullptr;
  };
  for (const JobGroup& job : jobs) {
    JobReport jr;
    jr.job = job.job;
    jr.source = job.source;
    std::set<size_t> hosts;
    for (const auto& [h, index] : job.gpus) {
      jr.gpus.push_back(set.hosts[h].name + "/" + index);
      hosts.insert(h);
    }
    jr.hosts = hosts.size();
    for (const auto& [h, index] : job.gpus) {
      // A GPU another job claims at the same time: both jobs list it.
      for (const GpuSignals& g : set.hosts[h].gpus) {
        if (g.index != index || g.also_jobs.empty()) continue;
        std::string others;
        auto name = [&](const std::string& id) {
          if (id == job.job) return;
          others += (others.empty() ? "" : ", ") + id;
        };
        name(g.job);
        for (const GpuSignals::JobClaim& c : g.also_jobs) name(c.job);
        jr.notes.push_back("GPU " + index + " of " + set.hosts[h].name + " is also claimed by job " + others +
                           " at the same time: it is listed under each, its waste counts in each job");
      }
    }
    const JobFault fault = job_fault(set, job);
    if (fault.found) {
      jr.has_root = true;
      jr.root = {set.hosts[fault.host].name, fault.gpu, "hardware_errors", fault.ms};
    } else {
      // The straggler: the longest firing slow-down the whole job does not share.
      const Finding* best = nullptr;
      std::pair<size_t, std::string> where;
      for (std::string_view cause : {"thermal_throttle", "power_cap", "pcie_link_degraded"}) {
        size_t holding = 0;
        const Finding* longest = nullptr;
        std::pair<size_t, std::string> at;
        for (const auto& [h, index] : job.gpus) {
          GpuReport* g = gpu_at(h, index);
          const Finding* f = g ? firing(*g, cause) : nullptr;
          if (f == nullptr || !f->explained_by.cause.empty()) continue;
          ++holding;
          if (longest == nullptr || f->held_ms > longest->held_ms) { longest = f; at = {h, index}; }
        }
        if (longest == nullptr || holding == job.gpus.size()) continue;
        if (best == nullptr || longest->held_ms > best->held_ms) { best = longest; where = at; }
      }
      if (best != nullptr) {
        jr.has_root = true;
        jr.root = {set.hosts[where.first].name, where.second, best->cause, best->since_ms};
        const std::string host = set.hosts[where.first].name;
        for (const auto& [h, index] : job.gpus) {
          GpuReport* p = gpu_at(h, index);
          if (p == nullptr || (h == where.first && index == where.second)) continue;
          if (firing(*p, best->cause) != nullptr) continue;  // slowed itself: its own cause
          for (Finding& f : p->findings) {
            if (f.state != State::kFiring || !f.explained_by.cause.empty()) continue;
            if (f.cause != "idle" && f.cause != "communication" && f.cause != "small_batch") continue;
            if (!overlap(f, *best)) continue;
            f.explained_by = {best->cause, where.second,
                              waiting_for(host, where.second, best->cause) +
                                  ": a synchronous job runs at the speed of its slowest GPU",
                              host};
          }
        }
      }
    }
    if (!jr.has_root && job.gpus.size() >= 2) {
      // Every rank stuck: a hang of the job, from when the last one stopped.
      bool all = true;
      int64_t last = INT64_MIN, first = INT64_MAX;
      for (const auto& [h, index] : job.gpus) {
        int64_t since = INT64_MAX;
        for (const GpuSignals& g : set.hosts[h].gpus) {
          if (g.index == index) since = stuck_since_ms(set.hosts[h], g, th);
        }
        if (since == INT64_MAX) { all = false; break; }
        last = std::max(last, since);
        if (since < first) {
          first = since;
          jr.hang.host = set.hosts[h].name;
          jr.hang.gpu = index;
        }
      }
      if (all) {
        jr.hung = true;
        jr.hang.cause = "hang";
        jr.hang.since_ms = last;
        // Stopped at the same moment: no rank is visibly first.
        if (first == last) {
          jr.hang.host.clear();
          jr.hang.gpu.clear();
        }
      }
    }
    report.jobs.push_back(std::move(jr));
  }
  // A finding another GPU explains gives no advice of its own.
  for (HostReport& h : report.hosts) {
    for (GpuReport& g : h.gpus) {
      for (Finding& f : g.findings) {
        if (f.explained_by.host.empty()) continue;
        f.action = "None of its own: " + waiting_for(f.explained_by.host, f.explained_by.gpu, f.explained_by.cause) +
                   "; fix that first.";
      }
      order(g);
    }
  }
}

}  // namespace gpulens::diagnose
