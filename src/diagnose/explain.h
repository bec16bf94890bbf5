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
//   power_cap,           communication,     degraded GPU, overlapping in time:
//   pcie_link_degraded   small_batch        a synchronous job waits for its
//                                           slowest GPU
//   network_fallback     communication      same GPU
//
// Job peers are the other GPUs of the same training job, on any host
// (docs/jobs.md): GPUs that carry a job id (GpuSignals::job) are grouped by
// it across hosts; the other GPUs of a host form one job per host, except
// that a process driving several GPUs (host_gpu_process_affinity_info) keeps
// its GPUs as a job of their own. One process per GPU (DDP, torchrun) does
// not split the host. A GPU seen only in the kernel log (no utilisation, no
// job information: it fell off the bus before NVML could list it) that failed
// joins the job of its host's other GPUs when they run exactly one. Where the
// condition does not hold the symptom stands alone (a saturated full-speed link is host_transfer, full memory without
// fragmentation is memory_pressure).
//
// Within a job the root is the GPU that failed first (hardware_errors), else
// its straggler: the GPU with the longest firing thermal_throttle, power_cap
// or pcie_link_degraded that the rest of the job does not share. A peer's
// finding it explains says "waiting for GPU 4 of trn-k01 (hardware_errors)",
// carries no advice of its own, and its waste counts under the root.
//
//   explain(host_signals, thresholds, host_report);   // after the rules
//   explain_jobs(set, job_groups(set), report);        // after every host
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
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

// Applies the same-GPU edges of one host.
void explain(const HostSignals& host, const Thresholds& th, HostReport& report);

// The GPUs of `host` without a job id grouped into jobs (indexes), see above.
std::vector<std::vector<std::string>> jobs_of(const HostSignals& host);

// A job: its id, where the id came from, and its GPUs as (index of the host
// in SignalSet::hosts, GPU index). Sorted by id.
struct JobGroup {
  std::string job;
  std::string source;  // slurm, kubernetes, environment, host
  std::vector<std::pair<size_t, std::string>> gpus;
};
std::vector<JobGroup> job_groups(const SignalSet& set);

// The job's first fatal fault (first_fatal_fault_ms over its GPUs): when,
// and which member; found == false when none failed.
struct JobFault {
  bool found = false;
  int64_t ms = INT64_MAX;
  size_t host = 0;
  std::string gpu;
};
JobFault job_fault(const SignalSet& set, const JobGroup& job);

// "waiting for GPU 4 of trn-k01 (hardware_errors)"
std::string waiting_for(std::string_view host, std::string_view gpu, std::string_view cause);

// Applies the job-peer edges across hosts (the hardware fault's consequences
// are already marked by the engine), orders every GPU's findings (roots
// first, each followed by its consequences on the same GPU; findings
// explained by another GPU last) and fills Report::jobs.
// A job of two or more GPUs with no root is checked for a hang: every GPU
// stuck until the end of the data for at least default_for_ms (busy_util or
// more with SM active under 0.1 and no NVLink or InfiniBand traffic, or
// idle_util or less with idle_memory_bytes held); JobReport::hang names it
// and the GPU that got stuck first.
void explain_jobs(const SignalSet& set, const std::vector<JobGroup>& jobs, const Thresholds& th, Report& report);

// When `gpu` became stuck for good (see above); INT64_MAX when it is not
// stuck at the end of its data.
int64_t stuck_since_ms(const HostSignals& host, const GpuSignals& gpu, const Thresholds& th);

}  // namespace gpulens::diagnose
