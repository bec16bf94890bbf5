// Analyzer::finish(): turns the collected State into a Report (nodes, ranks,
// transport, GDR, intra-node paths, channels, error class). The rules are
// listed in analyzer.h.
#include <algorithm>
#include <set>

#include "analyze/nccl/analyzer.h"
#include "analyze/nccl/analyzer_state.h"
#include "analyze/nccl/findings.h"

namespace gpulens::nccl {
namespace {

struct Nodes {
  std::vector<int> of_proc;         // node index per process, -1 for the anonymous one
  std::vector<std::string> labels;  // per node: host, or host#pid when a name is shared
};

// Groups processes into nodes: by hostname, split where process ids jump.
Nodes group_nodes(const std::vector<Proc>& procs) {
  Nodes n;
  n.of_proc.assign(procs.size(), -1);
  std::map<std::string, std::vector<std::uint32_t>> by_host;
  std::vector<std::string> order;
  for (std::uint32_t i = 1; i < procs.size(); ++i) {
    auto& v = by_host[procs[i].host];
    if (v.empty()) order.push_back(procs[i].host);
    v.push_back(i);
  }
  for (const auto& host : order) {
    auto& ids = by_host[host];
    std::sort(ids.begin(), ids.end(),
              [&](std::uint32_t a, std::uint32_t b) { return procs[a].pid < procs[b].pid; });
    std::vector<size_t> starts;  // node indexes created for this host
    std::int64_t prev = -1;
    for (std::uint32_t id : ids) {
      if (prev < 0 || procs[id].pid - prev > Analyzer::kPidGap) {
        starts.push_back(n.labels.size());
        n.labels.push_back(host + "#" + std::to_string(procs[id].pid));
      }
      n.of_proc[id] = static_cast<int>(n.labels.size() - 1);
      prev = procs[id].pid;
    }
    if (starts.size() == 1) n.labels[starts[0]] = host;
  }
  return n;
}

std::string join_mixed(const std::set<std::string>& labels) {
  if (labels.size() == 1) return *labels.begin();
  std::string out = "mixed:";
  for (const auto& l : labels) {
    if (out.size() > 6) out += "+";
    out += l;
  }
  return out;
}

}  // namespace

Report Analyzer::finish() {
  State& s = *s_;
  Report r;
  r.input = stats_;
  r.nccl_version = s.first_version;
  r.nccl_versions = s.versions;
  for (std::uint32_t i = 1; i < s.procs.size(); ++i) add_distinct(r.hosts, s.procs[i].host, SIZE_MAX);
  r.processes = static_cast<int>(s.procs.size() - 1);

  Nodes nodes = group_nodes(s.procs);
  auto node_of_rank = [&](int rank) -> int {
    auto it = s.rank_proc.find(rank);
    return it == s.rank_proc.end() ? -1 : nodes.of_proc[it->second];
  };

  // Ranks: the largest communicator's size, unless some line names a higher
  // rank (the log printed only a sub-communicator's init lines): the highest
  // rank named + 1. Each source counts; the strongest says it on a tie.
  if (s.nranks) {
    r.ranks = s.nranks;
    r.ranks_from = "nranks";
  }
  if (s.max_rank >= 0 && s.max_rank + 1 > r.ranks.value_or(0)) {
    r.ranks = s.max_rank + 1;
    r.ranks_from = s.max_rank_from ? s.max_rank_from : "rank_lines";
  }
  if (r.processes > 0) r.processes_from = "line_prefixes";

  // Connections between ranks on the same node are intra-node, whatever the path.
  struct Edge {
    const EdgeKey* key;
    const EdgeInfo* info;
    bool intra;
  };
  std::vector<Edge> net_edges;
  bool net_to_unlocated = false;
  std::vector<std::uint32_t> intra_paths;  // path ids, to keep first-seen order
  std::vector<bool> intra_path_gdr(s.paths.size(), false);
  std::vector<bool> intra_path_seen(s.paths.size(), false);
  for (const auto& [key, info] : s.edges) {
    int a = node_of_rank(key.src), b = node_of_rank(key.dst);
    const PathInfo& path = s.paths[key.path];
    bool intra = !path.net || (a >= 0 && a == b);
    if (path.net) {
      net_edges.push_back(Edge{&key, &info, intra});
      if (a < 0 || b < 0) net_to_unlocated = true;
    }
    if (intra) {
      intra_path_seen[key.path] = true;
      if (info.gdr) intra_path_gdr[key.path] = true;
    }
  }
  for (std::uint32_t p = 0; p < s.paths.size(); ++p) {
    if (!intra_path_seen[p]) continue;
    std::string text = s.paths[p].text;
    if (s.paths[p].net && intra_path_gdr[p]) text += "/GDRDMA";
    r.intra_node.push_back(text);
  }
  r.nvls = s.nvls;
  r.collnet = s.collnet;
  if (s.nvls) r.intra_node.push_back("NVLS");

  // Nodes.
  int seen_nodes = static_cast<int>(nodes.labels.size());
  std::vector<std::set<int>> located(nodes.labels.size());
  for (const auto& [rank, proc] : s.rank_proc) {
    if (nodes.of_proc[proc] >= 0) located[nodes.of_proc[proc]].insert(rank);
  }
  // nNodes first; but a communicator within one node (a tensor-parallel
  // group's "nNodes 1") is not the job: more hosts printing lines are more
  // nodes (NCCL itself tells nodes apart by hostname).
  const int hostnames = static_cast<int>(r.hosts.size());
  if (s.nnodes && *s.nnodes >= hostnames) {
    r.nodes = s.nnodes;
    r.nodes_from = "nNodes";
  } else if (s.nnodes) {
    r.nodes = hostnames;
    r.nodes_from = "hostnames";
  } else if (r.ranks && seen_nodes > 0 && net_to_unlocated) {
    // Ranks reached over the network live on nodes not in this log; when every
    // node with known ranks holds the same number, the job has ranks / that many.
    size_t per = 0;
    bool same = true;
    for (const auto& l : located) {
      if (l.empty()) continue;
      same = same && (per == 0 || l.size() == per);
      per = l.size();
    }
    same = same && per > 0;
    if (same && *r.ranks % per == 0 && static_cast<int>(*r.ranks / per) > seen_nodes) {
      r.nodes = static_cast<int>(*r.ranks / per);
      r.nodes_from = "ranks_per_node";
    }
  }
  if (!r.nodes && seen_nodes >= 2) {
    r.nodes = seen_nodes;
    r.nodes_from = "hostnames";
  }
  if (!r.nodes && seen_nodes == 1 && r.ranks && static_cast<int>(located[0].size()) == *r.ranks) {
    r.nodes = 1;
    r.nodes_from = "hostname_holds_all_ranks";
  }

  // Inter-node transport, decided per node, then compared across nodes.
  auto link_layer = [&](std::uint32_t proc, int dev) -> char {
    auto pick = [&](const Proc& p) -> char {
      if (p.ib_link.empty()) return 0;
      if (dev >= 0 && static_cast<size_t>(dev) < p.ib_link.size()) return p.ib_link[dev];
      return p.ib_link[0];
    };
    if (char c = pick(s.procs[proc])) return c;
    for (std::uint32_t i = 0; i < s.procs.size(); ++i) {
      if (nodes.of_proc[i] == nodes.of_proc[proc]) {
        if (char c = pick(s.procs[i])) return c;
      }
    }
    for (const auto& p : s.procs) {
      if (char c = pick(p)) return c;
    }
    return '?';
  };
  bool any_inter = std::any_of(net_edges.begin(), net_edges.end(), [](const Edge& e) { return !e.intra; });
  int node_count = std::max(seen_nodes, 1);
  auto node_key = [&](std::uint32_t proc) { return nodes.of_proc[proc] < 0 ? seen_nodes : nodes.of_proc[proc]; };
  std::vector<std::set<std::string>> per_node(node_count + 1);
  for (const Edge& e : net_edges) {
    if (any_inter && e.intra) continue;
    const PathInfo& path = s.paths[e.key->path];
    per_node[node_key(e.key->proc)].insert(transport_label(path.net_name, link_layer(e.key->proc, e.info->dev)));
  }
  bool any_edges = !net_edges.empty();
  for (std::uint32_t i = 0; i < s.procs.size(); ++i) {
    int n = node_key(i);
    if (!per_node[n].empty() && any_edges) continue;
    // No network connection lines for this node: what it selected.
    const Proc& p = s.procs[i];
    std::set<std::string> picked;
    for (const auto& name : p.selected) picked.insert(transport_label(name, link_layer(i, -1)));
    if (picked.empty() && !p.ib_link.empty()) picked.insert(transport_label("IB", link_layer(i, -1)));
    if (picked.empty() && p.no_ib_device && p.socket_listed) picked.insert("Socket");
    if (picked.empty() && p.socket_code) picked.insert("Socket");
    if (picked.empty() && p.ib_code) picked.insert(transport_label("IB", link_layer(i, -1)));
    if (picked.empty() && p.ofi) picked.insert("Plugin:aws-ofi-nccl");
    per_node[n].insert(picked.begin(), picked.end());
  }
  bool hosted = seen_nodes > 0;
  std::set<std::string> all;
  for (int n = 0; n <= node_count; ++n) {
    if (per_node[n].empty() || (hosted && n == seen_nodes)) continue;
    all.insert(per_node[n].begin(), per_node[n].end());
    std::string label = n < seen_nodes ? nodes.labels[n] : "(no host prefix)";
    r.transport_by_node[label] = join_mixed(per_node[n]);
  }
  if (r.nodes == 1 && !any_edges) {
    r.inter_node_transport = "none";
  } else if (!all.empty()) {
    r.inter_node_transport = join_mixed(all);
  }

  // GPUDirect RDMA.
  if (any_edges) {
    bool gdr = std::any_of(net_edges.begin(), net_edges.end(), [](const Edge& e) { return e.info->gdr; });
    r.gdr = gdr ? "yes" : "no";
  } else if (r.inter_node_transport == "Socket" || r.inter_node_transport == "none") {
    r.gdr = "no";
  }

  // Channels.
  r.coll_channels = s.coll_channels;
  r.nvls_channels = s.nvls_channels;
  r.collnet_channels = s.collnet_channels;
  r.p2p_channels = s.p2p_channels;
  if (s.trees > 0) r.trees = s.trees;
  if (s.coll_channels && *s.coll_channels > 0) {
    r.channels = s.coll_channels;
  } else if (s.listing_total > 0) {
    r.channels = s.listing_total;
  } else if (s.trees > 0) {
    r.channels = s.trees;
  } else if (s.graph_ring_max >= 0) {
    r.channels = s.graph_ring_max + 1;
  } else if (s.conn_channel_max >= 0 && (s.channel0_seen || (s.conn_channel_max + 1) % 2 == 0)) {
    r.channels = s.conn_channel_max + 1;
  }

  r.net_plugins = s.plugins;
  r.net_devices = s.devices;
  r.environment = s.env;

  // Error class: the most specific failure in the log.
  if (s.socket_warn) {
    const char* cls = s.first_code == 6 ? "remote_error" : "socket_error";
    Event& e = s.errors[cls];
    if (e.count++ == 0) {
      e.kind = cls;
      e.first = s.socket_warn_line;
    }
  }
  if (s.errors.empty() && s.first_code) {
    static const std::map<int, const char*> kByCode{
        {1, "cuda_error"}, {2, "system_error"}, {3, "internal_error"}, {6, "remote_error"}};
    if (auto it = kByCode.find(*s.first_code); it != kByCode.end()) {
      Event& e = s.errors[it->second];
      e.kind = it->second;
      e.count = s.codes[*s.first_code];
      e.first = "error code " + std::to_string(*s.first_code) + " returned through the call chain";
    }
  }
  static const char* kPriority[] = {"ib_completion_error", "ib_setup_error", "plugin_error",
                                    "socket_error",        "remote_error",   "timeout",
                                    "cuda_error",          "system_error",   "internal_error"};
  for (const char* cls : kPriority) {
    auto it = s.errors.find(cls);
    if (it == s.errors.end()) continue;
    if (r.error_class == "none") {
      r.error_class = cls;
      r.error = it->second.first;
    }
    r.errors.push_back(it->second);
  }
  for (const auto& [kind, e] : s.warnings) r.warnings.push_back(e);

  r.findings = derive_findings(r, Evidence{s.evidence_socket, s.gdr_disabled_lines, s.evidence_no_gdr});
  return r;
}

}  // namespace gpulens::nccl
