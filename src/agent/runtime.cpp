// The agent, its live diagnosis and remote_write, started and stopped
// together; the remote_write writer swapped on SIGHUP.
#include "agent/runtime.h"

#include <utility>

namespace gpulens {

AgentRuntime::AgentRuntime(std::unique_ptr<Agent> agent, const RuntimeSettings& settings)
    : agent_(std::move(agent)),
      diagnosis_(make_live_diagnosis(*agent_, settings.diagnose, settings.profile_on)) {}

AgentRuntime::~AgentRuntime() { stop(); }

Result<std::unique_ptr<AgentRuntime>> AgentRuntime::create(std::unique_ptr<Agent> agent, RuntimeSettings settings) {
  if (!settings.profile_on.causes.empty() && !agent->profiles()) {
    return invalid_argument("diagnose.profile_on needs the push receiver (serve --push, or push: {enabled: true}): "
                            "captures ride on it");
  }
  std::unique_ptr<AgentRuntime> rt(new AgentRuntime(std::move(agent), settings));
  if (Status s = rt->replace_writer(settings.remote_write); !s) return s;
  return rt;
}

Status AgentRuntime::replace_writer(const RemoteWriteOptions& options) {
  std::unique_ptr<RemoteWriter> fresh;
  if (!options.url.empty()) {
    fresh = std::make_unique<RemoteWriter>(options, agent_->registry(), agent_->live());
    if (Status s = fresh->start(); !s) return s;
  }
  std::unique_ptr<RemoteWriter> old;
  {
    std::lock_guard lock(writer_mu_);
    old = std::move(writer_);
    writer_ = std::move(fresh);
  }
  if (old) old->stop();  // outside the lock: scrapes keep reading the new writer's metrics
  return Status::ok();
}

Status AgentRuntime::start() {
  AgentHooks hooks;
  LiveDiagnosis* d = diagnosis_.get();
  hooks.self_metrics.push_back([d](Frame& f) { d->fill_findings(f); });
  hooks.findings_json = [d](int64_t now_ms, int64_t window_ms) { return d->findings_json(now_ms, window_ms); };
  hooks.self_metrics.push_back([this](Frame& f) { fill_remote_write(f); });
  return agent_->start(std::move(hooks));
}

void AgentRuntime::fill_remote_write(Frame& f) {
  std::lock_guard lock(writer_mu_);
  if (writer_) writer_->fill(f);
}

Status AgentRuntime::apply(const diagnose::Thresholds& thresholds, const ProfileTriggerOptions& profile_on,
                           const std::optional<RemoteWriteOptions>& remote_write) {
  if (remote_write) {
    if (Status s = replace_writer(*remote_write); !s) return s;
  }
  diagnosis_->reconfigure(thresholds, profile_on);
  return Status::ok();
}

void AgentRuntime::stop() {
  agent_->stop();
  (void)replace_writer(RemoteWriteOptions{});  // none: the running one flushes and stops
}

}  // namespace gpulens
