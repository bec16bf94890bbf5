// Output of `gpulens nccl`: a plain-text report for people and a stable JSON
// document for tools (shape documented in docs/nccl.md).
//
//   std::cout << render_text(report, /*color=*/isatty(1));
//   std::cout << render_json(report);
#pragma once

#include <string>
#include <string_view>

#include "analyze/nccl/report.h"

namespace gpulens::nccl {

std::string render_text(const Report& r, bool color);
std::string render_json(const Report& r);

}  // namespace gpulens::nccl
