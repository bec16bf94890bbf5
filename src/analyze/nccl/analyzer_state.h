// Internal state of the NCCL Analyzer, shared by the line handlers
// (analyzer.cpp) and the summary (summarize.cpp). Not part of the public API.
//
// Everything here is bounded by the job's size: processes, distinct connection
// paths, distinct (process, src, dst, path) connections, ranks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analyze/nccl/analyzer.h"

namespace gpulens::nccl {

// One process (host:pid); logs without prefixes use a single anonymous one.
struct Proc {
  std::string host;  // empty for the anonymous process
  std::int64_t pid = -1;
  std::vector<std::string> selected;  // "Using network X" names, distinct
  std::vector<char> ib_link;          // link layer per NET/IB device index: 'I', 'R', '?'
  bool no_ib_device = false;
  bool socket_listed = false;         // NET/Socket : Using [0]...
  bool socket_code = false;           // error chain through transport/net_socket.cc
  bool ib_code = false;               // error chain through transport/net_ib.cc
  bool ofi = false;                   // aws-ofi-nccl lines (NET/OFI)
  bool nic_info_probe = false;        // a plugin's "No NIC info for dev N": its "include/net.h:N -> 2" follows
  std::optional<std::string> version;
};

// A connection seen on a channel line, deduplicated.
struct EdgeKey {
  std::uint32_t proc;
  std::uint32_t path;  // index into State::paths
  std::int32_t src, dst;
  bool operator==(const EdgeKey&) const = default;
};

struct EdgeKeyHash {
  size_t operator()(const EdgeKey& k) const {
    std::uint64_t h = (std::uint64_t{k.proc} << 32) ^ k.path;
    h ^= (std::uint64_t(std::uint32_t(k.src)) << 40) ^ (std::uint64_t(std::uint32_t(k.dst)) << 8);
    h *= 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

struct EdgeInfo {
  Dir dir = Dir::kNone;
  int dev = -1;  // NET device index
  bool gdr = false;
};

// Interned connection path: "P2P/CUMEM", or "NET/<name>" for network paths.
struct PathInfo {
  std::string text;
  bool net = false;
  std::string net_name;  // for NET paths
};

struct Analyzer::State {
  std::vector<Proc> procs;
  std::unordered_map<std::string, std::uint32_t> proc_index;
  std::string key;  // reused lookup buffer
  std::string last_host;
  std::int64_t last_pid = -2;
  std::uint32_t last_proc = 0;

  std::vector<PathInfo> paths;
  std::unordered_map<EdgeKey, EdgeInfo, EdgeKeyHash> edges;
  std::unordered_map<int, std::uint32_t> rank_proc;  // rank -> first process it was seen local to

  std::vector<std::string> versions;
  std::optional<std::string> first_version;
  std::optional<int> nranks, nnodes;
  int max_rank = -1;
  const char* max_rank_from = nullptr;  // the kind of line that first named max_rank (report.h counts_from)

  std::optional<int> coll_channels, nvls_channels, collnet_channels, p2p_channels;
  int listing_total = -1;
  int trees = -1;
  int graph_ring_max = -1;
  int conn_channel_max = -1;
  bool channel0_seen = false;
  bool nvls = false;
  bool collnet = false;

  std::vector<std::string> plugins;
  std::vector<std::string> devices;
  std::map<std::string, std::string> env;
  std::vector<std::string> gdr_disabled_lines;

  std::map<std::string, Event> errors;    // by class
  std::map<std::string, Event> warnings;  // by kind
  std::optional<int> first_code;          // first ncclResult_t in an error chain
  std::map<int, std::uint64_t> codes;
  bool socket_warn = false;
  std::string socket_warn_line;
  std::vector<std::string> evidence_socket;  // first lines showing NET/Socket data traffic
  std::vector<std::string> evidence_no_gdr;  // first NET lines without /GDRDMA
};

// Adds text to v unless present or v already holds cap entries.
inline void add_distinct(std::vector<std::string>& v, std::string_view text, size_t cap = 64) {
  for (const auto& x : v) {
    if (x == text) return;
  }
  if (v.size() < cap) v.emplace_back(text);
}

// Counts an event of kind in m, keeping the first line.
inline void note(std::map<std::string, Event>& m, const std::string& kind, std::string_view line) {
  Event& e = m[kind];
  if (e.count++ == 0) {
    e.kind = kind;
    e.first = std::string(line.substr(0, 400));
  }
}

// The report vocabulary for a network name: "IB" / "RoCE" (by link layer),
// "Socket", "Plugin:IBext", "Plugin:aws-ofi-nccl", "Plugin:<name>".
std::string transport_label(std::string_view net_name, char link_layer);

}  // namespace gpulens::nccl
