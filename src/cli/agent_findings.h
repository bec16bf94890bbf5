// A running agent's diagnosis, for the commands that show it: `gpulens
// diagnose --agent URL` (the full report) and `gpulens snapshot` (a short
// list under the table).
//
//   std::string body;
//   Result<diagnose::Report> r = fetch_agent_findings("http://127.0.0.1:9400", "/api/v1/findings", body);
//   print_findings_brief(*r, colour, std::cout);
//
// Thread-safety: free functions; no shared state.
#pragma once

#include <ostream>
#include <string>

#include "diagnose/engine.h"
#include "agent/agent.h"
#include "util/status.h"

namespace gpulens::cli {

// What users paste as an agent's address (host:port, a trailing slash, the
// /metrics or /api/v1/current URL) as its base URL: http:// added where no
// scheme is given, those tails removed ("127.0.0.1:9400/metrics/" ->
// "http://127.0.0.1:9400"). Used by snapshot, record, top and diagnose --agent.
std::string agent_base_url(std::string url);

// GETs base + path (/api/v1/findings[?range=D]) and reads the report; `body`
// receives the JSON as the agent sent it. An HTTP 400 (a bad range) is
// invalid_argument, anything else that fails is unavailable/io.
Result<diagnose::Report> fetch_agent_findings(const std::string& base, const std::string& path, std::string& body);

// Findings in a few lines: one per cause and host, identical GPUs joined
// ("GPUs 0–7  WARNING  power_cap ..."), consequences named after their root,
// pending ones marked; "none" when there is nothing.
void print_findings_brief(const diagnose::Report& report, bool colour, std::ostream& out);

// The section under `gpulens snapshot`'s table: the agent's findings at
// `url`, or, without one, the local agent's over the samples it just took
// (where durations of minutes are pending by nature, so it says so).
void print_snapshot_findings(const std::string& url, Agent* local, int64_t now_ms, const diagnose::Thresholds& th,
                             bool colour, std::ostream& out);

}  // namespace gpulens::cli
