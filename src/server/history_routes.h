// The agent's history routes: what the web page plots and what
// `gpulens record --url` exports.
//
//   GET /api/v1/history?series=NAME[,NAME...][&gpu=N|node][&range=30m][&step=10s]
//       JSON, the named catalog series on a common time grid:
//       {"start":ms,"step":ms,"end":ms,"interval":ms,
//        "series":[{"name":"gpu_sm_active_ratio","gpu":"0","labels":{},"values":[0.87,null,...]}]}
//       Each value is the mean of the samples in its step (counters: their
//       per-second rate), null where there were none. `range` defaults to
//       30m and is capped by the history the agent keeps; `step` defaults to
//       range/600 (at least the sampling interval). Bounded: at most 3600
//       values per series and 500,000 in all, else 400 naming the limit.
//   GET /api/v1/export?from=MS&to=MS
//       OpenMetrics with a timestamp on every sample, ending in "# EOF": the
//       records with from <= t <= to, at most 60 of them per answer (page on
//       with from = the newest timestamp + 1). Counters are rebuilt from the
//       per-second rates the history keeps, ending at their live value.
//
// Unknown parameters, unknown series and malformed values are 400 with the
// reason. Costs: one history read per series; no allocation per sample
// beyond the answer.
#pragma once

#include <cstdint>

#include "model/series.h"
#include "server/http_server.h"
#include "store/history.h"
#include "store/live.h"

namespace gpulens {

// What the routes read: the agent's series, live values and history, and
// its sampling interval (the agent hands its own; agent/agent.h).
class HistoryView {
 public:
  HistoryView(SeriesRegistry& registry, LiveStore& live, History& history, int64_t interval_ms)
      : registry_(registry), live_(live), history_(history), interval_ms_(interval_ms) {}
  SeriesRegistry& registry() const { return registry_; }
  LiveStore& live() const { return live_; }
  History& history() const { return history_; }
  int64_t interval_ms() const { return interval_ms_; }

 private:
  SeriesRegistry& registry_;
  LiveStore& live_;
  History& history_;
  int64_t interval_ms_;
};

// Answers the routes above; false when `req.path` is not one of them.
bool handle_history_routes(const HistoryView& agent, const ServerRequest& req, ServerResponse& res);

}  // namespace gpulens
