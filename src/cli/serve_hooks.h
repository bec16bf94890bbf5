// What `serve` hosts beside the agent core: the live diagnosis (findings as
// metrics and JSON) and remote_write. Kept out of the agent library so the
// core does not depend on them.
#pragma once

#include <memory>
#include <string>

#include "cli/config.h"
#include "server/agent.h"
#include "util/status.h"

namespace gpulens::cli {

class ServeExtras {
 public:
  virtual ~ServeExtras() = default;
  // SIGHUP: takes the diagnosis thresholds of `next`, and when its
  // remote_write section differs from the running one, starts a writer with
  // the new settings and stops the old one (which flushes for up to its
  // flush_timeout). An error leaves everything as it was.
  virtual Status apply(const AgentConfig& next) = 0;
  // Stops remote_write within its flush_timeout.
  virtual void stop() = 0;
};

// Adds diagnosis (always) and remote_write (when configured) to `hooks`.
// `diagnose_config`: file holding a `diagnose:` section, "" for defaults.
Result<std::unique_ptr<ServeExtras>> add_serve_extras(Agent& agent, const AgentConfig& config, AgentHooks& hooks);

}  // namespace gpulens::cli
