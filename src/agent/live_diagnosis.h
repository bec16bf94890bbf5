// The agent's live diagnosis: a report over the last 30 min of history,
// recomputed at most every 15 s (and at once after new thresholds), served
// as /api/v1/findings and as the gpulens_finding / gpulens_waste_gpu_seconds
// self metrics; one log line when a finding starts and one when it ends;
// captures asked for by findings (diagnose.profile_on).
//
//   auto d = make_live_diagnosis(agent, thresholds, profile_on);
//   hooks.self_metrics.push_back([&d](Frame& f) { d->fill_findings(f); });
//   hooks.findings_json = [&d](int64_t now, int64_t window) { return d->findings_json(now, window); };
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "agent/agent.h"
#include "agent/profile_trigger.h"
#include "diagnose/thresholds.h"

namespace gpulens {

class LiveDiagnosis {
 public:
  virtual ~LiveDiagnosis() = default;
  // The JSON of /api/v1/findings over `window_ms`: the periodic report
  // (re-run when older than the period) for kFindingsWindowMs, else a
  // diagnosis of that window, not cached.
  virtual std::string findings_json(int64_t now_ms, int64_t window_ms) = 0;
  // The firing findings and the GPU-seconds lost to each, as self metrics.
  virtual void fill_findings(Frame& f) = 0;
  // SIGHUP: new thresholds and profile_on; the next report uses them.
  virtual void reconfigure(const diagnose::Thresholds& thresholds, const ProfileTriggerOptions& profile_on) = 0;
};

std::unique_ptr<LiveDiagnosis> make_live_diagnosis(Agent& agent, diagnose::Thresholds thresholds,
                                                   ProfileTriggerOptions profile_on);

// The agent's host name: the registry's (NODE_NAME, a source's), else this
// machine's. The diagnosis's host and remote_write's instance label.
std::string agent_host(Agent& agent);

}  // namespace gpulens
