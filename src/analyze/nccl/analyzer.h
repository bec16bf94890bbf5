// Streaming analyser for NCCL_DEBUG=INFO logs (NCCL 2.3 through 2.29).
//
// Feed it every line of one job's logs, from one file or several (one per node
// is common), in any order; then call finish() for the Report. Memory stays
// bounded by the size of the job (hosts, processes, ranks, distinct
// connections), never by the length of the log.
//
//   Analyzer a;
//   for (std::string_view line : lines) a.feed(line);
//   Report r = a.finish();
//   // r.inter_node_transport == "Socket", r.findings[0].cause == "network_fallback"
//
// How each field is decided (line formats: the project's NCCL reference notes):
//   transport   `via NET/<name>/...` connection lines between nodes first, then
//               `Using network X`, then the NET/IB device list; IB is split into
//               IB and RoCE by the link layer of the devices. A single node with
//               no network connection reports "none".
//   nodes       `nNodes` when printed; else distinct hosts, where one hostname
//               whose process ids lie more than kPidGap apart counts as several
//               nodes (clusters often reuse names such as "ubuntu"); else 1 when
//               every rank is seen on one host.
//   channels    `N coll channels`, then the `Channel xx/NN :` listing, then the
//               Trees entries, then the highest channel index + 1 (trusted only
//               if channel 0 was seen or the count is even, as NCCL duplicates
//               channels).
//
// Thread-safety: one Analyzer per thread; feed() and finish() are not
// concurrent-safe. finish() may be called once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analyze/nccl/channel.h"
#include "analyze/nccl/line.h"
#include "analyze/nccl/report.h"

namespace gpulens::nccl {

class Analyzer {
 public:
  // Process ids on one hostname further apart than this belong to different nodes.
  static constexpr std::int64_t kPidGap = 10000;
  // Caps that keep memory bounded on hostile input; what exceeds them is counted.
  static constexpr size_t kMaxProcs = 1 << 16;
  static constexpr size_t kMaxEdges = 1 << 20;

  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  // One line without its newline. Lines that carry no NCCL information are
  // ignored (but counted in input().lines).
  void feed(std::string_view line);

  // Counters the reader adds to (bytes, files, skipped lines).
  InputStats& input() { return stats_; }

  Report finish();

  struct State;  // opaque; defined in analyzer_state.h

 private:
  std::unique_ptr<State> s_;
  InputStats stats_;
  Tokenizer tokenizer_;
};

}  // namespace gpulens::nccl
