// What `gpulens top` shows, read from the agent's JSON API: the current
// values of every GPU (/api/v1/current), a short history of each layer
// (/api/v1/history) and the findings (/api/v1/findings). The same documents
// come from a remote agent over HTTP or from an agent running inside the
// command; this unit only parses them.
//
//   TopModel m;
//   if (Status s = read_current(current_body, m); !s) ...   // "not JSON", "no \"gpus\""
//   read_history(history_body, m);                          // sparklines; optional
//   read_findings(findings_body, m);                        // optional
//
// Values are in the API's units (ratios 0..1, bytes, °C, W); a field the GPU
// does not give is absent from its `series`, and get() returns NaN for it.
//
// Thread-safety: plain data and pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "diagnose/engine.h"
#include "top/service_lines.h"
#include "util/status.h"

namespace gpulens::top {

// The four sparklines of a GPU, one per layer, oldest value first; NaN where
// the history has no sample.
enum Layer : int { kCompute, kMemory, kIo, kHealth, kLayerCount };

struct TopGpu {
  std::string index, uuid, name;
  std::string job;  // from gpu_job_info: "81234 rank 3", several ", "-joined; "" none
  std::vector<NodeSeries> series;  // its current series, labels as data
  std::vector<double> history[kLayerCount];
  // The label-free series `metric`; NaN when absent.
  double get(std::string_view metric) const {
    for (const NodeSeries& s : series) {
      if (s.name == metric && s.labels.empty() && s.part == HistogramPart::kNone) return s.value;
    }
    return std::nan("");
  }
};

// A process on a GPU: from gpu_process_memory_used_bytes /
// gpu_process_sm_util_ratio (NVML, kubelet labels) and the node's
// host_gpu_process_affinity_info (CPUs it may run on).
struct TopProcess {
  std::string pid, gpu, pod;  // pod: "namespace/pod" when known
  std::string cpus, numa;
  double memory_bytes = std::nan("");
  double sm_ratio = std::nan("");
};

struct TopSource {
  std::string name;
  bool up = true;
  std::string error;
};

struct TopModel {
  int64_t time_s = 0;  // the agent's clock
  bool simulated = false;
  std::vector<TopSource> sources;
  std::vector<TopGpu> gpus;
  std::vector<TopProcess> processes;
  std::vector<NodeSeries> node;  // the node's series, labels as data
  int64_t history_range_ms = 0;  // what history[] spans; 0: none read
  bool have_findings = false;
  std::string findings_note;     // why there are none ("diagnosis is not enabled ...")
  diagnose::Report findings;
};

// The history request for sparklines of `points` values over `range_ms`.
std::string history_query(int64_t range_ms, int points);

// Replaces gpus, sources, processes and the header facts.
Status read_current(std::string_view json, TopModel& m);
// Fills each GPU's history[] from a read_current-ed model's GPUs.
Status read_history(std::string_view json, int64_t range_ms, TopModel& m);
Status read_findings(std::string_view json, TopModel& m);

}  // namespace gpulens::top
