// What `gpulens snapshot` draws, read once: the host, the sources, and each
// GPU's and the node's current series, their labels as data, in the
// agent's order (as /api/v1/current's "series" lists them). A local snapshot reads
// them from its agent's stores in process; `snapshot --url` from the JSON
// of /api/v1/current. Absent values (NaN, unsupported) are not listed,
// as the JSON writes them null.
//
//   SnapshotValues v = snapshot_values(agent);            // local
//   Result<SnapshotValues> r = parse_snapshot_values(body);  // --url
//
// Thread-safety: free functions; snapshot_values takes the agent's locks.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/agent.h"
#include "top/service_lines.h"
#include "util/status.h"

namespace gpulens::cli {

using SnapshotSeries = std::vector<top::NodeSeries>;  // in the agent's order

struct SnapshotGpu {
  std::string index, uuid, name;
  SnapshotSeries series;
};

struct SnapshotValues {
  std::string time;  // seconds since the epoch, as the API writes it; "" unknown
  std::string host, driver, cuda;
  bool simulated = false;
  std::vector<std::string> sources;  // the sources' names
  bool has_gpus = true;              // false: the document had no "gpus" array
  std::vector<SnapshotGpu> gpus;
  SnapshotSeries node;
};

// The agent's current values, as its /api/v1/current would answer them.
SnapshotValues snapshot_values(Agent& agent);
// An /api/v1/current document; invalid_argument when it is not JSON.
Result<SnapshotValues> parse_snapshot_values(std::string_view json);

}  // namespace gpulens::cli
