// The one definition of a degraded PCIe link, shared by the diagnosis rule
// `pcie_link_degraded` (diagnose/rules.cpp) and the alert GPUPCIeLinkDegraded
// that `gpulens rules` generates (rules/rules.cpp builds its PromQL from the
// same thresholds; a test feeds the same link states to both).
//
// A link is degraded at a point when it is below its baseline AND in use:
//   below   the current generation is below the maximum generation, or the
//           current width below the maximum width, or either is below the
//           link `gpulens calibrate` measured the peak on (the *_calibrated
//           series); a dimension with a value missing on either side is not
//           compared;
//   in use  GPU utilisation >= link_busy_util (default 0.5), or PCIe TX or RX
//           >= link_busy_pcie (default 0.1) of the link's peak (an idle link
//           down-shifts by design, a link carrying copies does not);
// and a finding (an alert) once that held for link_degraded_for (default
// 5 minutes) of data.
//
//   PcieLinkState s{.gen = 3, .gen_max = 4, .width = 16, .width_max = 16, .util = 0.9};
//   pcie_link_degraded(s, Thresholds{});   // true
//
// Thread-safety: pure functions. Units: generations and lane counts as
// numbers, utilisations as ratios 0..1; NaN is unknown.
#pragma once

#include <cmath>

#include "diagnose/thresholds.h"

namespace gpulens::diagnose {

struct PcieLinkState {
  double gen = NAN, gen_max = NAN, gen_calibrated = NAN;
  double width = NAN, width_max = NAN, width_calibrated = NAN;
  double util = NAN;  // GPU utilisation
  double pcie = NAN;  // PCIe TX or RX, the higher, over the link's peak
};

// True when both values are known and the current one is below the baseline.
inline bool pcie_below(double current, double baseline) {
  return !std::isnan(current) && !std::isnan(baseline) && current < baseline;
}

// Whether anything can be said: some current value with a baseline to compare.
inline bool pcie_link_assessable(const PcieLinkState& s) {
  auto pair = [](double a, double b) { return !std::isnan(a) && !std::isnan(b); };
  return pair(s.gen, s.gen_max) || pair(s.width, s.width_max) || pair(s.gen, s.gen_calibrated) ||
         pair(s.width, s.width_calibrated);
}

inline bool pcie_link_below_baseline(const PcieLinkState& s) {
  return pcie_below(s.gen, s.gen_max) || pcie_below(s.width, s.width_max) || pcie_below(s.gen, s.gen_calibrated) ||
         pcie_below(s.width, s.width_calibrated);
}

inline bool pcie_link_in_use(const PcieLinkState& s, const Thresholds& th) {
  return (!std::isnan(s.util) && s.util >= th.link_busy_util) || (!std::isnan(s.pcie) && s.pcie >= th.link_busy_pcie);
}

inline bool pcie_link_degraded(const PcieLinkState& s, const Thresholds& th) {
  return pcie_link_below_baseline(s) && pcie_link_in_use(s, th);
}

}  // namespace gpulens::diagnose
