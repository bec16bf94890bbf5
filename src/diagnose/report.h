// Rendering a diagnosis Report: words for people, JSON for tools.
//
// The text report groups findings by host and GPU, most important first, with
// evidence (signal, observed value, threshold), the action, the GPU time each
// cause wasted ("fixing the input pipeline is worth 2.4 GPUs") and what could
// not be assessed and why. Colour only when asked (a TTY).
//
// The JSON shape is stable (docs/diagnose.md):
//   {"hosts":[{"host":"n1","gpus":[{"gpu":"0","uuid":"GPU-…","findings":[
//     {"cause":"input_pipeline","layer":"host","severity":"warning",
//      "since":"2025-11-29T10:00:00Z","evidence":[{"signal":"sm_active",
//      "value":0.21,"threshold":0.5}],"action":"…"}]}]}], ...extra keys}
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "diagnose/engine.h"

namespace gpulens::diagnose {

// The fleet view: per root cause (a consequence counts under its root),
// the GPU time it wasted over all hosts, what that is worth in GPUs over the
// covered time, and the hosts and GPUs where it fires (info findings
// excluded). Most waste first.
struct FleetCause {
  std::string cause;
  double waste_gpu_seconds = 0;
  double gpus_equivalent = 0;       // "fixing it is worth N GPUs fleet-wide"
  std::vector<std::string> hosts;   // sorted
  size_t gpus = 0;                  // GPUs where it fires
};
std::vector<FleetCause> fleet_summary(const Report& report);

std::string report_json(const Report& report);
std::string report_text(const Report& report, bool colour);

// The line every rendering of a report with simulated data opens with
// (empty when no host is simulated): "SIMULATED DATA: host n1 (scenario
// thermal-throttle-one-gpu) served gpulens_simulated 1: its values come from a
// scenario, not from a GPU". At most 8 hosts are named, then "and N more".
std::string simulated_banner(const Report& report);

// "input pipeline" for "input_pipeline".
std::string cause_words(std::string_view cause);

}  // namespace gpulens::diagnose
