// Captures triggered by the diagnosis (diagnose.profile_on, docs/profiling.md):
// when a finding of a listed cause holds on a GPU whose process runs
// gpulens_client, the agent asks that process for one capture, analyses the
// result with the code of `gpulens profile` / `gpulens trace`, and attaches a
// summary to the finding (Finding::profile): the top three ops or kernels and
// their shares for compute causes, the hottest frames and the DataLoader wait
// for input_pipeline.
//
//   ProfileTrigger trigger(options, table, [&](int gpu) { return store.pids_on_gpu(gpu); });
//   diagnose::Report r = diagnose_live(...);
//   trigger.step(r, now_ms);   // requests, collects, attaches
//
// Which finding: firing, holding now (ongoing), of a cause in `causes`, on a
// whole GPU (not a MIG instance). Which process: the GPU's processes whose
// client polled for captures (ProfileTable::clients), the lowest pid first
// that the rate limit allows. Rate limits: one capture per process per
// `per_process_ms` (a failed one counts), at most `max_per_hour` captures in
// any hour over the whole agent. A finding whose process was captured with the
// same kind within the period carries that capture's summary instead of a new
// one; one whose process is rate-limited otherwise says so (state "skipped").
// A request the table refuses (a user's capture runs in that process, the
// table is full) is asked again 15 s later.
// A summary stays attached while its finding is in the report.
//
// Thread-safety: not thread-safe; serve calls it under its diagnosis lock.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analyze/trace/analysis.h"
#include "agent/profile_stacks.h"
#include "diagnose/engine.h"
#include "push/profile_table.h"
#include "util/status.h"

namespace gpulens {

struct ProfileTriggerOptions {
  std::vector<std::string> causes;            // diagnose.profile_on; empty: off
  int64_t per_process_ms = 3'600'000;         // diagnose.profile_every
  int64_t max_per_hour = 4;                   // diagnose.profile_max_per_hour
  int64_t window_ms = 10'000;                 // diagnose.profile_window
  int64_t max_bytes = 16 << 20;               // diagnose.profile_max_bytes
};

// The causes profile_on accepts (those a capture inside the program can
// explain) and the kind each gets: stacks for input_pipeline and idle,
// torch for the rest.
const std::vector<std::string_view>& profile_causes();
std::string_view profile_kind(std::string_view cause);
// Ok, or why `cause` cannot be in profile_on (unknown, or a cause of the
// GPU or the node that no capture in the program explains).
Status check_profile_cause(std::string_view cause);

// The summary of an analysed capture (shares of `of`, at most three items).
diagnose::ProfileSummary summarise_trace(const trace::JobReport& job);
diagnose::ProfileSummary summarise_stacks(const StacksAnalysis& a);
// A gzip (or plain) trace upload analysed by gpulens trace's analyse_files(),
// through a private temporary file (or `keep_path` when not empty, left in place).
Result<trace::JobReport> analyse_trace_upload(std::string_view bytes, const std::string& keep_path = "");

class ProfileTrigger {
 public:
  using PidsOnGpu = std::function<std::vector<int64_t>(int gpu)>;
  ProfileTrigger(ProfileTriggerOptions options, push::ProfileTable* table, PidsOnGpu pids_on_gpu)
      : options_(std::move(options)), table_(table), pids_on_gpu_(std::move(pids_on_gpu)) {}

  void set_options(ProfileTriggerOptions options) { options_ = std::move(options); }
  // Collects finished captures, requests new ones for the findings of `r`
  // that qualify, and attaches every known summary to its finding.
  void step(diagnose::Report& r, int64_t now_ms);
  // Attaches the known summaries only (a report over another window).
  void attach(diagnose::Report& r) const;
  // Captures requested so far (for tests and the log).
  uint64_t requested() const { return requested_; }

 private:
  using Key = std::pair<std::string, std::string>;  // (gpu, cause)
  struct Capture {
    std::string kind;
    int64_t pid = 0;
    diagnose::ProfileSummary summary;  // state requested until collected
  };
  void collect(int64_t now_ms);
  void request(const std::string& gpu, const std::string& cause, int64_t now_ms);

  ProfileTriggerOptions options_;
  push::ProfileTable* table_;
  PidsOnGpu pids_on_gpu_;
  std::map<std::string, Capture> captures_;        // by capture id
  std::map<Key, diagnose::ProfileSummary> skipped_;  // findings refused by the rate limit
  std::map<Key, std::string> attached_;            // finding -> capture id
  std::map<Key, int64_t> retry_at_;                // finding -> when to ask again after a refusal, ms
  std::map<int64_t, int64_t> last_by_pid_;         // pid -> its last request, ms
  std::deque<int64_t> recent_;                     // requests of the last hour, ms
  uint64_t requested_ = 0;
};

}  // namespace gpulens
