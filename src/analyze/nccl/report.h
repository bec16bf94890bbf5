// What `gpulens nccl` tells about a job from its NCCL_DEBUG=INFO output.
//
// A Report is produced by Analyzer::finish() (analyzer.h) and printed by
// render_text() / render_json() (render.h). Optional fields are empty when the
// log does not establish them: "unknown" is never reported as 0.
//
// Vocabularies (stable; tests and other tools read them):
//   inter_node_transport  IB | RoCE | Socket | Plugin:<name> | none | unknown |
//                         mixed:A+B (nodes chose different networks)
//   gdr                   yes | no | unknown
//   error_class           none | timeout | system_error | remote_error | socket_error |
//                         ib_setup_error | ib_completion_error | plugin_error | cuda_error
//   Finding::cause        a cause id of the project's findings vocabulary
//                         (network_fallback, communication, topology)
//   Finding::severity     critical | warning | info
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gpulens::nccl {

struct Finding {
  std::string cause;     // findings vocabulary id, e.g. "network_fallback"
  std::string check;     // what this analyser detected, e.g. "socket_transport"
  std::string severity;  // critical | warning | info
  std::string summary;   // one line for people
  std::vector<std::string> evidence;  // log lines or values
  std::string action;    // what to do about it
};

// A class of warning or error lines, with how often it occurred.
struct Event {
  std::string kind;   // e.g. "ib_completion_error", "no_ib_device", "ib_disabled_by_env"
  std::uint64_t count = 0;
  std::string first;  // the first line of this kind (trimmed message)
};

// What was read and what was skipped, so that the numbers can be trusted.
struct InputStats {
  std::uint64_t files = 0;
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;
  std::uint64_t nccl_lines = 0;        // lines that carried NCCL information
  std::uint64_t binary_lines = 0;      // skipped: NUL or control bytes
  std::uint64_t overlong_lines = 0;    // cut at the line length limit, rest skipped
  std::uint64_t unparsed_channel_lines = 0;  // "Channel ..." lines too damaged to read
  std::uint64_t dropped_edges = 0;     // connections beyond the memory cap, not tracked
};

struct Report {
  std::optional<std::string> nccl_version;  // first version printed, as printed
  std::vector<std::string> nccl_versions;   // all distinct versions printed
  std::optional<int> ranks;
  std::optional<int> nodes;
  // Which evidence each count came from (JSON "counts_from"; empty: unknown):
  //   ranks      nranks (init line) | rank_lines (init "rank N", nccl-tests
  //              "Rank N" headers) | connection_lines | ring_listing | tree_listing
  //              (highest rank named + 1)
  //   nodes      nNodes (init line) | ranks_per_node (ranks / ranks per node
  //              seen) | hostnames (line prefixes) | hostname_holds_all_ranks
  //   processes  line_prefixes (distinct host:pid of line prefixes and nccl-tests headers)
  std::string ranks_from, nodes_from, processes_from;
  std::vector<std::string> hosts;           // distinct hostnames, first-seen order
  int processes = 0;                        // distinct host:pid pairs
  std::string inter_node_transport = "unknown";
  std::map<std::string, std::string> transport_by_node;  // node label -> transport
  std::string gdr = "unknown";
  std::vector<std::string> intra_node;      // distinct intra-node paths, e.g. "P2P/CUMEM", "NVLS"
  std::optional<int> channels;
  std::optional<int> coll_channels, nvls_channels, collnet_channels, p2p_channels;
  std::optional<int> trees;                 // entries of the Trees line
  bool nvls = false;                        // NVLS (NVLink SHARP) in use
  bool collnet = false;                     // CollNet (in-network reduction) in use
  std::vector<std::string> net_plugins;     // external net plugins loaded or selected
  std::vector<std::string> net_devices;     // "mlx5_0:1/IB", "ens5 (socket)"
  std::map<std::string, std::string> environment;  // NCCL_* set by environment
  std::string error_class = "none";
  std::optional<std::string> error;         // first line of the error class
  std::vector<Event> errors;
  std::vector<Event> warnings;
  std::vector<Finding> findings;            // most important first
  InputStats input;
};

}  // namespace gpulens::nccl
