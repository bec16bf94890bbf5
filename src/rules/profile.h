// The alert and recording rules a field selection leaves without data.
//
// A rule reads the catalog and DCGM names in its expression; under a
// `--profile` or `--collectors` selection that does not collect one of them,
// the rule could never fire (or record), so `gpulens rules --profile NAME`
// leaves it out and says so. Names the catalog does not know (up, a serving
// engine's histogram) are never a reason to leave a rule out.
//
//   auto left = apply_selection(groups, *profile("minimal"), Names::kNative);
//   // left[0] == {"GPUXidError", "gpu_xid_errors_total"}
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "model/selection.h"
#include "rules/rules.h"

namespace gpulens::rules {

struct LeftOut {
  std::string rule;    // alert or record name
  std::string needs;   // the first metric it reads that the selection does not collect
};

// Removes the rules that read a metric `selection` does not export (empty
// groups too) and returns them in their order.
std::vector<LeftOut> apply_selection(std::vector<Group>& groups, const FieldSelection& selection, Names names);

// The diagnosis causes a selection leaves unassessed, with the engine's
// reason: the engine runs once on every catalog field and once on the
// fields the selection collects, as the live diagnosis reads its history
// (flat synthetic series, one GPU, ten minutes),
// and a cause assessed in the first but not the second is listed. Causes
// that need data no profile controls (host, serving) never appear.
struct Unassessed {
  std::string cause;
  std::string reason;
};
std::vector<Unassessed> unassessed_causes(const FieldSelection& selection);

// The comment block placed above a rendered rule file ("" when nothing was
// left out): the rules left out and the diagnosis causes not assessed.
std::string left_out_comment(const std::vector<LeftOut>& left, const std::vector<Unassessed>& causes,
                             const std::string& selection_name);

}  // namespace gpulens::rules
