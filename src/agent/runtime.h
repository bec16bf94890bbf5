// What `gpulens serve` runs: the agent with its live diagnosis
// (live_diagnosis.h) and remote_write, started and stopped together, and
// what a SIGHUP changes in them. The command builds the pieces from its
// configuration; this holds no configuration logic.
//
//   auto rt = AgentRuntime::create(std::move(agent), settings);   // starts remote_write
//   rt->start();                   // sampling, recording, HTTP
//   rt->apply(thresholds, profile_on, std::nullopt);   // SIGHUP
//   rt->stop();                    // agent, then remote_write (flushes)
//
// Thread-safety: apply() and stop() from one thread (the signal loop); the
// agent's threads call into the diagnosis and the writer on their own.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "agent/agent.h"
#include "agent/live_diagnosis.h"
#include "export/remote_write/remote_write.h"
#include "util/status.h"

namespace gpulens {

struct RuntimeSettings {
  diagnose::Thresholds diagnose;
  ProfileTriggerOptions profile_on;
  // url empty: remote_write off.
  RemoteWriteOptions remote_write;
};

class AgentRuntime {
 public:
  // Checks the settings against the agent (profile_on needs the push
  // receiver) and starts remote_write; the errors are the settings'.
  static Result<std::unique_ptr<AgentRuntime>> create(std::unique_ptr<Agent> agent, RuntimeSettings settings);
  ~AgentRuntime();

  // Starts sampling, recording and the HTTP server, with the diagnosis and
  // remote_write hosted (agent.h's AgentHooks).
  Status start();
  // SIGHUP: takes the thresholds and profile_on; `remote_write` (nullopt:
  // unchanged) starts a writer with the new options (url empty: none) and
  // stops the old one, which flushes for up to its flush_timeout. An error
  // leaves everything as it was.
  Status apply(const diagnose::Thresholds& thresholds, const ProfileTriggerOptions& profile_on,
               const std::optional<RemoteWriteOptions>& remote_write);
  // Stops the agent (listener and sources at once), then remote_write
  // within its flush_timeout.
  void stop();

  Agent& agent() { return *agent_; }
  // The host name the diagnosis and remote_write's instance label use.
  std::string host() { return agent_host(*agent_); }

 private:
  explicit AgentRuntime(std::unique_ptr<Agent> agent, const RuntimeSettings& settings);
  // Starts a writer with `options` (url empty: none), then swaps it in and
  // stops the one it replaces; on error the running one is left as it was.
  Status replace_writer(const RemoteWriteOptions& options);
  void fill_remote_write(Frame& f);

  std::unique_ptr<Agent> agent_;
  std::unique_ptr<LiveDiagnosis> diagnosis_;
  std::mutex writer_mu_;                  // guards writer_ (replaced on SIGHUP)
  std::unique_ptr<RemoteWriter> writer_;  // null: remote_write off
};

}  // namespace gpulens
