// The explanation graph: edge conditions over findings and their evidence.
#include "diagnose/explain.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

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
  symptom.explained_by = {root.cause, gpu, std::move(why)};
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
    else if (f.explained_by.gpu == g.gpu) local.emplace(f.explained_by.cause, std::move(f));
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
      {"network_fallback", "communication", "same GPU"},
  };
  return edges;
}

std::vector<std::vector<std::string>> jobs_of(const HostSignals& host) {
  std::vector<std::vector<std::string>> jobs;
  if (host.processes.empty()) {
    std::vector<std::string> all;
    for (const GpuSignals& g : host.gpus) all.push_back(g.index);
    if (!all.empty()) jobs.push_back(std::move(all));
    return jobs;
  }
  std::map<std::string, std::set<std::string>> by_pid;
  for (const ProcessPlacement& p : host.processes) by_pid[p.pid].insert(p.gpu);
  // Merge pids that share a GPU into one job.
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
  for (auto& grp : groups) jobs.emplace_back(grp.begin(), grp.end());
  return jobs;
}

void explain(const HostSignals& host, const Thresholds& th, HostReport& report) {
  for (GpuReport& g : report.gpus) same_gpu_edges(g, th);
  // Job peers of a throttled or degraded GPU: their idle time and slow
  // collectives are the slow GPU's doing.
  std::map<std::string, GpuReport*> by_index;
  for (GpuReport& g : report.gpus) by_index[g.gpu] = &g;
  for (const std::vector<std::string>& job : jobs_of(host)) {
    if (job.size() < 2) continue;
    for (const std::string& slow : job) {
      GpuReport* root_gpu = by_index.count(slow) ? by_index[slow] : nullptr;
      if (root_gpu == nullptr) continue;
      for (std::string_view cause : {"thermal_throttle", "power_cap", "pcie_link_degraded"}) {
        const Finding* root = firing(*root_gpu, cause);
        if (root == nullptr || !root->explained_by.cause.empty()) continue;
        for (const std::string& peer : job) {
          if (peer == slow || !by_index.count(peer)) continue;
          GpuReport& p = *by_index[peer];
          if (firing(p, cause) != nullptr) continue;  // throttled itself: its own cause
          for (Finding& f : p.findings) {
            if (f.state != State::kFiring || (f.cause != "idle" && f.cause != "communication")) continue;
            if (!overlap(f, *root)) continue;
            mark(f, *root, slow, "GPU " + slow + " of the same job is slowed (" + std::string(cause) +
                                     "); a synchronous job waits for its slowest GPU");
          }
        }
      }
    }
  }
  for (GpuReport& g : report.gpus) order(g);
}

}  // namespace gpulens::diagnose
