// Tests for the one definition of a degraded PCIe link (pcie_link.h), and
// that the diagnosis rule follows it over a window. The generated alert is
// checked against the same states by the pcie_link_definition integration
// test (promtool).
#include "diagnose/pcie_link.h"

#include <gtest/gtest.h>

namespace gpulens::diagnose {
namespace {

const Thresholds kTh;

TEST(PcieLink, BelowMaximumOrCalibratedInEitherDimension) {
  EXPECT_TRUE(pcie_link_below_baseline({.gen = 3, .gen_max = 4}));
  EXPECT_TRUE(pcie_link_below_baseline({.width = 8, .width_max = 16}));
  EXPECT_FALSE(pcie_link_below_baseline({.gen = 4, .gen_max = 4, .width = 16, .width_max = 16}));
  // Calibrated on the degraded link and still on it: below its maximum.
  EXPECT_TRUE(pcie_link_below_baseline({.gen = 4, .gen_max = 5, .gen_calibrated = 4}));
  // Below the calibrated link.
  EXPECT_TRUE(pcie_link_below_baseline({.gen = 4, .gen_max = 5, .gen_calibrated = 5}));
  // Only a calibrated width to compare with.
  EXPECT_TRUE(pcie_link_below_baseline({.width = 8, .width_calibrated = 16}));
  EXPECT_TRUE(pcie_link_assessable({.width = 8, .width_calibrated = 16}));
  // Nothing to compare: not assessable, not below.
  EXPECT_FALSE(pcie_link_assessable({.gen = 3, .width = 8}));
  EXPECT_FALSE(pcie_link_below_baseline({.gen = 3, .width = 8, .util = 1}));
}

TEST(PcieLink, InUseByUtilisationOrByTraffic) {
  const PcieLinkState low{.gen = 3, .gen_max = 4, .util = 0.2, .pcie = 0.02};
  EXPECT_FALSE(pcie_link_degraded(low, kTh));  // an idle link down-shifts by design
  PcieLinkState s = low;
  s.util = kTh.link_busy_util;  // at the threshold counts
  EXPECT_TRUE(pcie_link_degraded(s, kTh));
  s = low;
  s.pcie = 0.3;  // copies on the degraded link with the GPU waiting
  EXPECT_TRUE(pcie_link_degraded(s, kTh));
  s = low;
  s.util = NAN;
  s.pcie = NAN;
  EXPECT_FALSE(pcie_link_degraded(s, kTh));
}

}  // namespace
}  // namespace gpulens::diagnose
