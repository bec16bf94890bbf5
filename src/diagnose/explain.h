// Root cause over symptom: the explanation graph between causes.
//
// Rules judge each cause on its own, so one fault can surface as several
// findings: a PCIe link trained at Gen3 x8 also "saturates" its own reduced
// peak (host_transfer). The graph below says which cause explains which
// other, and when; an explained finding is kept but becomes a consequence of
// its root cause (Finding::explained_by), listed after it, and its waste is
// counted under the root ("fixing the link is worth ...").
//
//   cause                explains           when
//   pcie_link_degraded   host_transfer      same GPU; the traffic saturates the
//                                           degraded link but stays under
//                                           pcie_util of the full link (gen max x
//                                           width max)
//   memory_fragmentation memory_pressure    same GPU; without the reserved-but-
//                                           unallocated share (used x
//                                           fragmentation) the framebuffer
//                                           would be under memory_used
//   hardware_errors      (any)              a job peer of a GPU with a fatal
//                                           fault: what the peer shows from the
//                                           fault on (its stall)
//   thermal_throttle,    idle,              a job peer of a throttled or
//   power_cap,           communication      degraded GPU, overlapping in time:
//   pcie_link_degraded                      a synchronous job waits for its
//                                           slowest GPU
//   network_fallback     communication      same GPU
//
// A job is the GPUs one process uses (host_gpu_process_affinity_info); without
// process placement, all GPUs of a host count as one job. Where the condition
// does not hold the symptom stands alone (a saturated full-speed link is
// host_transfer, full memory without fragmentation is memory_pressure).
//
//   explain(host_signals, thresholds, host_report);   // after the rules
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "diagnose/engine.h"

namespace gpulens::diagnose {

struct ExplanationEdge {
  std::string_view cause;     // the root
  std::string_view explains;  // the symptom ("*": any)
  std::string_view scope;     // "same GPU" or "job peers"
};

// The edges above, for docs and tests.
const std::vector<ExplanationEdge>& explanation_edges();

// Applies the same-GPU and job-peer edges (not the hardware fault, which the
// engine applies as it evaluates the peers) and orders every GPU's findings:
// roots first, each followed by its consequences on the same GPU; findings
// explained by another GPU last.
void explain(const HostSignals& host, const Thresholds& th, HostReport& report);

// The GPUs of `host` grouped into jobs (indexes), see above.
std::vector<std::vector<std::string>> jobs_of(const HostSignals& host);

}  // namespace gpulens::diagnose
