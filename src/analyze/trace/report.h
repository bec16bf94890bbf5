// Rendering a JobReport: JSON (stable, documented in docs/trace.md) or text.
//
//   std::cout << to_json(job);      // {"compat": "none", "ranks": [...], ...}
//   std::cout << to_text(job);      // a few lines per rank for people
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "analyze/trace/analysis.h"

namespace gpulens::trace {

std::string to_json(const JobReport& job);
std::string to_text(const JobReport& job);

}  // namespace gpulens::trace
