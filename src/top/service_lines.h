// One line per serving engine (docs/serving.md, "The service line"), from
// the node's series as the agent's JSON API gives them (/api/v1/current's
// node "series": name, labels as data, value): what `gpulens snapshot` and
// `gpulens top` show under the GPUs.
//
//   service_lines(entity_series(doc["node"]), 8)
//   == {"vllm at http://127.0.0.1:8001/metrics (meta-llama/Llama-3.1-8B-Instruct) on GPUs 4,5,6,7: KV cache "
//       "99%, 31 waiting, 40 running, p99 21.4 s, TTFT p99 16.3 s"}
//
// Where the engine says them, the prefix-cache hit ratio follows the KV
// cache ("KV cache 99%, prefix cache hits 12%"), the requests waiting for
// capacity the waiting ("31 waiting (30 for capacity)") and the tokens of
// TGI's batch the running ("40 running, batch 15000 tokens").
//
// An engine is the series of one `endpoint` label, its model the label of
// its serving_engine_info (none shown when absent); its GPUs are those where
// its pid runs (host_gpu_process_affinity_info), else all `gpu_count` when
// it is the only engine, else "GPUs not known"; its quantiles come from its
// histograms' counts so far ("-" before any request ended).
//
// Thread-safety: pure function.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/labels.h"
#include "model/series.h"

namespace gpulens::top {

// One series of the node.
struct NodeSeries {
  std::string name;  // catalog name
  Labels labels;
  HistogramPart part = HistogramPart::kNone;
  double value = 0;
};

// The series of a /api/v1/current document's "node" (or of one of its
// "gpus"): its "series"; from an agent of the previous release, which writes
// only "fields", those keys read back as text (model/series.h key_from_text).
std::vector<NodeSeries> entity_series(simdjson::dom::element node);
// The same from "fields" keys ("name{labels}" -> value).
std::vector<NodeSeries> series_from_fields(const std::map<std::string, double, std::less<>>& fields);

std::vector<std::string> service_lines(const std::vector<NodeSeries>& node, size_t gpu_count);

}  // namespace gpulens::top
