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

#include "diagnose/engine.h"

namespace gpulens::diagnose {

std::string report_json(const Report& report);
std::string report_text(const Report& report, bool colour);

// "input pipeline" for "input_pipeline".
std::string cause_words(std::string_view cause);

}  // namespace gpulens::diagnose
