// What a field selection leaves out of the rules and the diagnosis.
#include "rules/profile.h"

#include <gtest/gtest.h>

namespace gpulens::rules {
namespace {

bool has_rule(const std::vector<Group>& groups, std::string_view name) {
  for (const auto& g : groups) {
    for (const auto& r : g.rules) {
      if (r.alert == name || r.record == name) return true;
    }
  }
  return false;
}

TEST(RulesProfile, MinimalLeavesOutAlertsWithoutTheirSeries) {
  auto groups = build_rules(RuleOptions::defaults(), Names::kNative);
  const auto left = apply_selection(groups, *profile("minimal"), Names::kNative);
  EXPECT_TRUE(has_rule(groups, "GPULowUtilization"));
  EXPECT_TRUE(has_rule(groups, "GPUTemperatureHigh"));
  EXPECT_TRUE(has_rule(groups, "GPUMemoryFragmentationHigh"));
  EXPECT_TRUE(has_rule(groups, "GPUPCIeBandwidthSaturation"));
  EXPECT_TRUE(has_rule(groups, "GPULost"));  // gpu_up is always collected
  EXPECT_FALSE(has_rule(groups, "GPUXidError"));
  EXPECT_FALSE(has_rule(groups, "GPUPCIeLinkDegraded"));
  EXPECT_FALSE(has_rule(groups, "GPUHealthWatchFailed"));
  bool xid = false, health = false;
  for (const auto& l : left) {
    xid = xid || (l.rule == "GPUXidError" && l.needs == "gpu_xid_errors_total");
    health = health || (l.rule == "GPUHealthWatchFailed" && l.needs == "gpu_health_status");
  }
  EXPECT_TRUE(xid);
  EXPECT_TRUE(health);
  const std::string c = left_out_comment(left, {}, "profile minimal");
  EXPECT_NE(c.find("#   GPUXidError (needs gpu_xid_errors_total)\n"), std::string::npos) << c;
}

TEST(RulesProfile, StandardAndFullKeepEveryRule) {
  for (auto names : {Names::kNative, Names::kDcgm}) {
    for (const char* p : {"standard", "full"}) {
      auto groups = build_rules(RuleOptions::defaults(), names);
      const auto left = apply_selection(groups, *profile(p), names);
      EXPECT_TRUE(left.empty()) << p << ": " << (left.empty() ? "" : left[0].rule + " needs " + left[0].needs);
    }
  }
}

TEST(RulesProfile, DcgmDefaultCountersLeaveOutOccupancyAlert) {
  auto sel = load_collectors(std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/default-counters.csv");
  ASSERT_TRUE(sel);
  auto groups = build_rules(RuleOptions::defaults(), Names::kDcgm);
  apply_selection(groups, *sel, Names::kDcgm);
  EXPECT_FALSE(has_rule(groups, "GPULowSMOccupancy"));  // SM_OCCUPANCY is commented out in that file
  EXPECT_TRUE(has_rule(groups, "GPULowUtilization"));
  EXPECT_FALSE(has_rule(groups, "GPUHealthWatchFailed"));  // so are the DCGM_EXP_* rows
}

// dcgm-exporter's own DCGM_EXP_GPU_HEALTH_STATUS: a counters file that lists
// it keeps the dcgm variant's alert; one that does not says what it needs.
TEST(RulesProfile, DcgmHealthWatchAlertNeedsTheExportersHealthRow) {
  const std::string base = "DCGM_FI_DEV_GPU_UTIL, gauge, util\n";
  auto with = parse_collectors(base + "DCGM_EXP_GPU_HEALTH_STATUS, counter, DCGM reported health status\n", "with.csv");
  auto without = parse_collectors(base, "without.csv");
  ASSERT_TRUE(with && without);
  auto groups = build_rules(RuleOptions::defaults(), Names::kDcgm);
  apply_selection(groups, *with, Names::kDcgm);
  EXPECT_TRUE(has_rule(groups, "GPUHealthWatchFailed"));
  groups = build_rules(RuleOptions::defaults(), Names::kDcgm);
  const auto left = apply_selection(groups, *without, Names::kDcgm);
  EXPECT_FALSE(has_rule(groups, "GPUHealthWatchFailed"));
  bool said = false;
  for (const auto& l : left) said = said || (l.rule == "GPUHealthWatchFailed" && l.needs == "DCGM_EXP_GPU_HEALTH_STATUS");
  EXPECT_TRUE(said);
}

TEST(RulesProfile, CausesTheDiagnosisCannotAssess) {
  auto names = [](const std::vector<Unassessed>& v) {
    std::vector<std::string> out;
    for (const auto& u : v) out.push_back(u.cause);
    return out;
  };
  const auto minimal = names(unassessed_causes(*profile("minimal")));
  auto in = [&](std::string_view c) { return std::find(minimal.begin(), minimal.end(), c) != minimal.end(); };
  EXPECT_TRUE(in("power_cap")) << testing::PrintToString(minimal);
  EXPECT_TRUE(in("pcie_link_degraded"));
  EXPECT_FALSE(in("memory_fragmentation"));
  EXPECT_TRUE(names(unassessed_causes(*profile("standard"))).empty())
      << testing::PrintToString(names(unassessed_causes(*profile("standard"))));
  EXPECT_TRUE(unassessed_causes(*profile("full")).empty());
}

}  // namespace
}  // namespace gpulens::rules
