// The diagnosis engine: rules over windows of canonical signals, per GPU,
// giving ordered findings with evidence, action and the GPU time each cause
// wasted.
//
// For every GPU the engine puts all signals on the GPU's own timeline (the
// points of its utilisation series; a value older than the lookback is
// unknown), evaluates each rule per point, and keeps a cause only where it
// held without a break for the rule's duration (Thresholds::*_for_ms), as a
// Prometheus alert with `for:` does: the points of the run must cover the
// whole duration (each point stands for one step) before it fires; a run
// still holding at the end but shorter is `pending` (reported, never counted
// by has_findings, no waste); a shorter run that ended is dropped. A window
// shorter than the duration therefore gives pending, never firing, and an
// agent just restarted starts pending. Firing findings come first, then by
// severity,
// then by the order of investigation of the design notes: input pipeline →
// host transfer / memory bandwidth → communication → kernel launch →
// topology → batch size, then health causes.
//
// Known false positives it avoids:
//   - low SM occupancy with healthy latency is small_batch at info, never a
//     warning; without a latency signal kernel_launch is "not assessed";
//   - a link that down-shifts its generation while idle is not
//     pcie_link_degraded (only under load);
//   - a throttling GPU is flagged on that GPU only (rules are per GPU);
//   - when a GPU fails (critical hardware_errors), the other GPUs of its job
//     (on any host: explain.h, docs/jobs.md) are assessed on their own only
//     up to that moment; what they show from then on is a consequence
//     explained by the failed GPU, its waste counted under hardware_errors.
//
// Root cause over symptom: after the rules, explain() links findings by the
// explanation graph (explain.h); a consequence follows its root cause. Then
// explain_jobs() names each job's root (a failed GPU, else a straggler) and
// fills Report::jobs.
//
// Waste: each point of a GPU's timeline is charged to the first firing cause
// (in the order above) holding there: (1 - SM active) x the point's duration,
// the lost clock (1 - SM clock / max clock) for throttling, all of it for idle
// and lost GPUs. Summed per cause in GPU-seconds; "worth N GPUs" divides by
// the time the data covers (Report::covered_seconds), not the window asked.
//
//   Report r = diagnose(set, Thresholds{});
//   for (auto& h : r.hosts) for (auto& g : h.gpus) for (auto& f : g.findings) ...
//
// Thread-safety: pure function of its inputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnose/signals.h"
#include "diagnose/thresholds.h"

namespace gpulens::diagnose {

enum class Severity : uint8_t { kInfo, kWarning, kCritical };
std::string_view severity_name(Severity s);

// firing: held for the rule's whole duration; pending: holds at the end of
// the data but not yet for that long.
enum class State : uint8_t { kFiring, kPending };
std::string_view state_name(State s);

struct Evidence {
  std::string signal;
  double value = 0;      // mean over the time the cause held
  double threshold = 0;
  std::string detail;    // facts that are not numbers ("pid 4104 may run on NUMA node(s) 0"); may be empty
  // The signal over the window, bounded (evidence_series.h); empty: not
  // attached, or a fact with no series.
  Series series;
};

// Why a finding is a consequence, not a cause (explain.h); empty cause: a root.
struct Explanation {
  std::string cause;  // the root cause
  std::string gpu;    // the GPU it holds on (this one, or a job peer)
  std::string why;
  std::string host;   // the root GPU's host (set when the root is another GPU)
};

// What a capture inside the GPU's process found, attached to the finding
// that asked for it (serve's diagnose.profile_on; docs/profiling.md). Not
// made by diagnose(): the agent attaches it after each diagnosis.
struct ProfileItem {
  std::string name;  // an op or kernel name, or "function file:line"
  double share = 0;  // 0..1 of what `of` measures
};
struct ProfileSummary {
  std::string state;      // requested (in progress), done, failed, skipped (rate limit)
  std::string capture;    // the capture's id at the agent (GET /api/v1/profile/ID); empty when skipped
  int64_t pid = 0;
  std::string kind;       // torch | stacks
  int64_t at_ms = 0;      // requested (requested, skipped) or finished (done, failed)
  // done: what the shares are of: "kernels" (GPU kernel time of a trace with a
  // GPU timeline), "cpu_ops" (CPU op self time of a CPU-only trace), "frames"
  // (the main thread's stack samples).
  std::string of;
  std::vector<ProfileItem> top;  // done: at most three, largest share first
  double dataloader_wait = -1;   // stacks: main thread's share inside the DataLoader; -1: not a stacks capture
  double device_sync = -1;       // stacks: inside torch.cuda synchronize
  std::string verdict;           // torch: the trace's verdict (cpu-only, host-bound, ...); stacks: dataloader, device_sync or ""
  std::string summary;           // one sentence for people (done, failed, skipped)
};

struct Finding {
  std::string cause;     // fixed vocabulary (docs/diagnose.md)
  std::string layer;     // compute, memory, io, health, host, serving
  Severity severity = Severity::kWarning;
  State state = State::kFiring;
  int64_t since_ms = 0;  // start of the first period the cause held (pending: of the run so far)
  int64_t held_ms = 0;   // total time it held in the window (pending: so far)
  int64_t for_ms = 0;    // the rule's duration
  bool ongoing = false;  // its latest run reaches the last point (firing or pending): it holds now
  std::vector<Evidence> evidence;
  std::string action;
  double waste_gpu_seconds = 0;
  Explanation explained_by;  // set: a consequence of that root cause
  // When it held: [from, to) per run (firing runs; the pending run when pending).
  std::vector<std::pair<int64_t, int64_t>> periods;
  // A capture the agent took for this finding (diagnose.profile_on); state empty: none.
  ProfileSummary profile;
};

struct NotAssessed {
  std::string cause;
  std::string reason;    // "no profiling fields (DCGM_FI_PROF_SM_OCCUPANCY)"
};

struct GpuReport {
  std::string gpu;       // index label ("0/gi7" for a MIG instance)
  std::string uuid;
  std::string model;
  MigInstance mig;       // set on a MIG instance; its findings' first evidence names it
  std::vector<Finding> findings;        // most important first
  std::vector<NotAssessed> not_assessed;
  std::vector<std::string> notes;       // e.g. "stalled since GPU 3 failed"
  double waste_gpu_seconds = 0;
  int64_t covered_ms = 0;               // time the GPU's data covers (its points x their steps)
};

struct HostReport {
  std::string host;
  std::vector<GpuReport> gpus;
  bool simulated = false;  // its data carried gpulens_simulated 1 (HostSignals::simulated)
  std::string scenario;
};

// A training job: the GPUs that run it, across hosts, and the one root
// cause that explains the rest (engine.h "Jobs"). GPUs without job
// information count as one job per host (source "host").
struct JobRoot {
  std::string host, gpu, cause;
  int64_t since_ms = 0;
};
struct JobReport {
  std::string job;
  std::string source;             // slurm, kubernetes, environment, host
  std::vector<std::string> gpus;  // "<host>/<gpu>"
  size_t hosts = 0;
  bool has_root = false;
  JobRoot root;
  // No root, and every GPU stuck (explain.h): a hang of the job since
  // hang.since_ms; hang.host/gpu: the GPU stuck first (cause "hang").
  bool hung = false;
  JobRoot hang;
  double waste_gpu_seconds = 0;   // all waste of its GPUs (a GPU two jobs claim counts in both)
  // e.g. a GPU another job claims at the same time (docs/jobs.md)
  std::vector<std::string> notes;
};

struct Report {
  int64_t from_ms = 0;
  int64_t to_ms = 0;
  std::vector<HostReport> hosts;
  std::vector<JobReport> jobs;                   // by job id
  std::map<std::string, double> waste_by_cause;  // GPU-seconds, all GPUs; a consequence's under its root
  size_t gpu_count = 0;
  double covered_gpu_seconds = 0;                // sum over GPUs of the time their data covers
  std::vector<std::string> input_warnings;       // from the input (truncation ...)
  // Judged from one point in time (SignalSet::point_in_time): only the causes
  // that need no duration have findings; every cause with a duration is
  // listed per GPU under not_assessed with the duration it needs; no waste.
  bool point_in_time = false;
  // Some host's data is simulated: every rendering says so first.
  bool simulated() const;
  // A firing finding at `at_least` or above (pending ones do not count).
  bool has_findings(Severity at_least) const;
  // Mean time a GPU's data covers: what "worth N GPUs" divides by.
  double covered_seconds() const;
};

Report diagnose(const SignalSet& set, const Thresholds& thresholds);

// The duration a cause must hold before it fires (Thresholds::*_for_ms; 0
// for hardware_errors, which fires at once): what each rule gives its
// findings as for_ms (point_in_time_test checks every finding of the test
// recordings against it).
int64_t cause_duration_ms(std::string_view cause, const Thresholds& thresholds);

// Appends the hosts of `part` (a diagnosis of other hosts over the same
// window, e.g. the next batch of a fleet) to `into` and adds up its totals;
// the window is the union of both.
void merge_report(Report& into, Report part);

// The causes in order of investigation (also the order of findings of equal
// severity); tests and docs iterate it.
const std::vector<std::string_view>& cause_order();

// Nominal peaks by GPU model name ("NVIDIA H100 80GB HBM3"), bytes/s per
// direction; 0 when the model is not known.
double pcie_model_bytes_per_second(std::string_view model);
double nvlink_model_bytes_per_second(std::string_view model);

}  // namespace gpulens::diagnose
