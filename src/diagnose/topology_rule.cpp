// The topology cause: a job placed across NUMA nodes, or a multi-GPU process
// whose GPUs have no NVLink (nor a shared PCIe switch) between them. Reads
// the placement facts of signals.h; engine.h documents the behaviour.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "diagnose/rules.h"

namespace gpulens::diagnose {
namespace {

// nvidia-smi topo -m paths as NVML's topology levels (PIX 10 ... SYS 50):
// the evidence value of gpu_topology_path. NVLINK is 0.
int path_level(std::string_view path) {
  if (path == "PIX") return 10;
  if (path == "PXB") return 20;
  if (path == "PHB") return 30;
  if (path == "NODE") return 40;
  if (path == "SYS") return 50;
  return 0;
}
// Above a PCIe switch (PXB) peer traffic goes through host bridges or the
// socket interconnect: no NVLink, no fast P2P.
constexpr int kWorstDirectLevel = 20;

std::string join(const std::vector<int>& v) {
  std::string out;
  for (int x : v) out += (out.empty() ? "" : ",") + std::to_string(x);
  return out;
}

struct Misplaced {
  const ProcessPlacement* proc = nullptr;
  std::vector<int> nodes;  // the process's allowed NUMA nodes (parsed), may be empty
  bool cpus_remote = false;  // none of its CPUs is local to the GPU
};

struct Unlinked {
  const ProcessPlacement* proc = nullptr;
  std::string peer, path;
};

}  // namespace

RuleResult topology_rule(const GpuContext& c, const Aligned& util, std::vector<NotAssessed>& not_assessed) {
  const GpuSignals& gpu = c.gpu;
  if (c.host.processes.empty()) {
    not_assessed.push_back({"topology", "no process CPU affinity (host_gpu_process_affinity_info, gpulens agent "
                                        "with process collection)"});
    return {};
  }
  const bool numa_known = !gpu.sig(GpuSig::kNumaNode).empty();
  if (!numa_known && gpu.peer_paths.empty() && gpu.local_cpus.empty()) {
    not_assessed.push_back({"topology", "no GPU topology (gpu_numa_node, gpu_topology_info, gpu_cpu_affinity_info)"});
    return {};
  }
  const size_t n = c.t.size();
  RuleResult r;
  r.cause = "topology";
  r.layer = "io";
  r.severity = Severity::kWarning;
  r.for_ms = c.th.topology_for_ms;
  r.holds.assign(n, -1);
  const Aligned numa = c.align(gpu.sig(GpuSig::kNumaNode));
  const std::optional<std::vector<int>> local = parse_cpu_list(gpu.local_cpus);

  std::vector<Misplaced> misplaced;  // per process on this GPU, static facts
  std::vector<Unlinked> unlinked;
  std::vector<Aligned> present;
  for (const ProcessPlacement& p : c.host.processes) {
    if (p.gpu != gpu.index) continue;
    Misplaced m{.proc = &p};
    if (auto nodes = parse_cpu_list(p.numa_nodes)) m.nodes = *nodes;
    const auto cpus = parse_cpu_list(p.cpus);
    if (cpus && !cpus->empty() && local && !local->empty()) {
      m.cpus_remote = std::none_of(cpus->begin(), cpus->end(),
                                   [&](int x) { return std::binary_search(local->begin(), local->end(), x); });
    }
    misplaced.push_back(std::move(m));
    present.push_back(c.align(p.present));
    Unlinked u{.proc = &p};
    for (const ProcessPlacement& q : c.host.processes) {
      if (q.pid != p.pid || q.gpu == p.gpu) continue;
      auto it = gpu.peer_paths.find(q.gpu);
      if (it == gpu.peer_paths.end() || path_level(it->second) <= kWorstDirectLevel) continue;
      if (u.path.empty() || path_level(it->second) > path_level(u.path)) { u.peer = q.gpu; u.path = it->second; }
    }
    unlinked.push_back(std::move(u));
  }

  // Which process and which reason, first seen, for the evidence and action.
  const Misplaced* cross_first = nullptr;
  const Unlinked* link_first = nullptr;
  int gpu_node = -1;
  Aligned node_ev(n, std::nan("")), path_ev(n, std::nan(""));
  for (size_t i = 0; i < n; ++i) {
    if (std::isnan(util[i])) continue;
    r.holds[i] = 0;
    if (util[i] <= c.th.active_util) continue;
    for (size_t k = 0; k < misplaced.size(); ++k) {
      if (std::isnan(present[k][i])) continue;
      const Misplaced& m = misplaced[k];
      const int node = std::isnan(numa[i]) ? -1 : static_cast<int>(numa[i]);
      const bool off_node = node >= 0 && !m.nodes.empty() && !std::binary_search(m.nodes.begin(), m.nodes.end(), node);
      if (off_node || m.cpus_remote) {
        r.holds[i] = 1;
        if (!cross_first) { cross_first = &m; gpu_node = node; }
        if (node >= 0) node_ev[i] = node;
      }
      if (!unlinked[k].path.empty()) {
        r.holds[i] = 1;
        if (!link_first) link_first = &unlinked[k];
        path_ev[i] = std::max(std::isnan(path_ev[i]) ? 0.0 : path_ev[i], static_cast<double>(path_level(unlinked[k].path)));
      }
    }
  }

  std::string action;
  if (cross_first) {
    const ProcessPlacement& p = *cross_first->proc;
    const std::string where = cross_first->nodes.empty() ? "CPUs " + p.cpus
                                                         : "NUMA node(s) " + join(cross_first->nodes) +
                                                               (p.cpus.empty() ? "" : " (CPUs " + p.cpus + ")");
    const std::string node = gpu_node >= 0 ? std::to_string(gpu_node) : "N";
    std::string detail = "pid " + p.pid + " may run only on " + where;
    if (cross_first->cpus_remote && !gpu.local_cpus.empty()) detail += "; the GPU's local CPUs are " + gpu.local_cpus;
    r.evidence.push_back({"gpu_numa_node", node_ev,
                          cross_first->nodes.empty() ? std::nan("") : static_cast<double>(cross_first->nodes.front()), detail});
    action += "Process " + p.pid + " may run only on " + where + " while GPU " + gpu.index + " is attached to NUMA node " +
              node + ": every host-device copy and the input pipeline cross the socket interconnect. Pin the process "
              "to the GPU's node (numactl --cpunodebind=" + node + " --membind=" + node + ", or the launcher's per-rank "
              "binding), or in Kubernetes use the kubelet topology manager policy single-numa-node with the static "
              "CPU manager.";
  }
  if (link_first) {
    const ProcessPlacement& p = *link_first->proc;
    r.evidence.push_back({"gpu_topology_path", path_ev, static_cast<double>(kWorstDirectLevel),
                          "path " + link_first->path + " to GPU " + link_first->peer + ", both used by pid " + p.pid});
    if (!action.empty()) action += " ";
    action += "Process " + p.pid + " uses GPUs " + gpu.index + " and " + link_first->peer + " whose path is " +
              link_first->path + " (no NVLink, no shared PCIe switch): collectives between them cross host bridges "
              "or sockets. Schedule the job on GPUs connected by NVLink (see nvidia-smi topo -m; choose them with "
              "CUDA_VISIBLE_DEVICES or the scheduler's topology-aware placement).";
  }
  r.action = action;
  return r;
}

}  // namespace gpulens::diagnose
