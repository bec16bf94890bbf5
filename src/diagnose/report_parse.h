// The JSON report read back: what `gpulens diagnose --agent` and `gpulens
// snapshot --url` get from a running agent's /api/v1/findings, turned into
// a Report so that the same text renderer prints it.
//
//   Result<Report> r = report_from_json(body, "agent http://127.0.0.1:9400");
//   std::cout << report_text(*r, false);
//
// Only the keys report_json() writes are read; unknown keys are ignored (the
// shape is additive). A body that is not such a report is an error naming
// `what`.
//
// Thread-safety: pure function.
#pragma once

#include <string_view>

#include "diagnose/engine.h"
#include "util/status.h"

namespace gpulens::diagnose {

Result<Report> report_from_json(std::string_view json, std::string_view what);

}  // namespace gpulens::diagnose
