// One line per serving engine (docs/serving.md, "The service line"), from
// the node's series as the agent's JSON API gives them ("name{labels}" ->
// value): what `gpulens snapshot` and `gpulens top` show under the GPUs.
//
//   service_lines(fields, 8)
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

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gpulens::top {

std::vector<std::string> service_lines(const std::map<std::string, double, std::less<>>& node_fields,
                                       size_t gpu_count);

}  // namespace gpulens::top
