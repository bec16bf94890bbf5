// Rule options: --set parsing, range checks, and the YAML rules: section.
#include "rules/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "diagnose/thresholds.h"

namespace gpulens::rules {
namespace {

using ::testing::HasSubstr;

TEST(RuleOptions, DefaultsAreTheArticleAndTutorialThresholds) {
  const RuleOptions o = RuleOptions::defaults();
  EXPECT_DOUBLE_EQ(o.number("gpu_util_low.threshold"), 0.20);
  EXPECT_EQ(o.duration_ms("gpu_util_low.for"), 600000);
  EXPECT_DOUBLE_EQ(o.number("temperature_high.threshold"), 80);
  EXPECT_EQ(o.duration_ms("temperature_high.for"), 300000);
  EXPECT_DOUBLE_EQ(o.number("memory_fragmentation.threshold"), 0.5);
  EXPECT_EQ(o.duration_ms("pcie_saturation.for"), 180000);
  EXPECT_DOUBLE_EQ(o.number("sm_occupancy_low.threshold"), 0.3);
  EXPECT_EQ(o.duration_ms("sm_occupancy_low.for"), 600000);
}

TEST(RuleOptions, SetParsesNumbersDurationsAndNames) {
  RuleOptions o = RuleOptions::defaults();
  ASSERT_TRUE(o.set("gpu_util_low.threshold", "0.35").is_ok());
  ASSERT_TRUE(o.set("gpu_util_low.for", "90s").is_ok());
  ASSERT_TRUE(o.set("job", "gpu-agent").is_ok());
  ASSERT_TRUE(o.set("evaluation_interval", "5s").is_ok());
  EXPECT_DOUBLE_EQ(o.number("gpu_util_low.threshold"), 0.35);
  EXPECT_EQ(o.duration_ms("gpu_util_low.for"), 90000);
  EXPECT_EQ(o.job, "gpu-agent");
  EXPECT_EQ(o.evaluation_interval_ms, 5000);
}

TEST(RuleOptions, SetRejectsBadValuesNamingTheKey) {
  RuleOptions o = RuleOptions::defaults();
  EXPECT_THAT(o.set("gpu_util_low.threshold", "20").message(), HasSubstr("not a ratio in 0..1"));
  EXPECT_THAT(o.set("gpu_util_low.threshold", "abc").message(), HasSubstr("gpu_util_low.threshold"));
  EXPECT_THAT(o.set("temperature_high.threshold", "-1").message(), HasSubstr("negative"));
  EXPECT_THAT(o.set("gpu_util_low.for", "10").message(), HasSubstr("missing unit"));
  EXPECT_THAT(o.set("gpu_util_low.treshold", "1").message(), HasSubstr("unknown rules key \"gpu_util_low.treshold\""));
  EXPECT_THAT(o.set("job", "").message(), HasSubstr("must not be empty"));
  EXPECT_DOUBLE_EQ(o.number("gpu_util_low.threshold"), 0.20);  // unchanged by the failures
}

TEST(RuleOptions, JoinLabelsSplitOnCommas) {
  RuleOptions o = RuleOptions::defaults();
  ASSERT_TRUE(o.set("latency_join", "namespace, pod").is_ok());
  EXPECT_THAT(o.join_labels(), ::testing::ElementsAre("namespace", "pod"));
}

TEST(LoadRuleOptions, ReadsTheRulesSectionAndIgnoresOthers) {
  RuleOptions o = RuleOptions::defaults();
  const std::string yaml =
      "listen: 0.0.0.0:9835\n"
      "rules:\n"
      "  job: gpu\n"
      "  temperature_high: {threshold: 85, for: 2m}\n"
      "  gpu_util_low:\n"
      "    for: 30m\n";
  ASSERT_TRUE(load_rule_options(yaml, "cfg.yaml", o).is_ok());
  EXPECT_EQ(o.job, "gpu");
  EXPECT_DOUBLE_EQ(o.number("temperature_high.threshold"), 85);
  EXPECT_EQ(o.duration_ms("temperature_high.for"), 120000);
  EXPECT_EQ(o.duration_ms("gpu_util_low.for"), 1800000);
}

TEST(LoadRuleOptions, ErrorsNameFileLineAndKey) {
  RuleOptions o = RuleOptions::defaults();
  Status s = load_rule_options("rules:\n  gpu_util_low:\n    threshold: 0.2\n    fro: 5m\n", "cfg.yaml", o);
  EXPECT_THAT(s.message(), HasSubstr("cfg.yaml:4:"));
  EXPECT_THAT(s.message(), HasSubstr("gpu_util_low.fro"));
  s = load_rule_options("rules: [1, 2]\n", "cfg.yaml", o);
  EXPECT_THAT(s.message(), HasSubstr("must be a mapping"));
  s = load_rule_options("rules:\n  gpu_util_low: {threshold: [1]}\n", "cfg.yaml", o);
  EXPECT_THAT(s.message(), HasSubstr("must be a value"));
  s = load_rule_options("rules: {a: 1\n", "cfg.yaml", o);
  EXPECT_THAT(s.message(), HasSubstr("invalid YAML"));
  EXPECT_TRUE(load_rule_options("", "empty.yaml", o).is_ok());
}

TEST(RuleOptions, PcieLinkDegradedDefaultsAreTheDiagnosisThresholds) {
  // One definition of a degraded link (diagnose/pcie_link.h): the alert
  // starts from the diagnosis rule's numbers.
  const diagnose::Thresholds th;
  const RuleOptions o = RuleOptions::defaults();
  EXPECT_EQ(o.number("pcie_link_degraded.busy_threshold"), th.link_busy_util);
  EXPECT_EQ(o.number("pcie_link_degraded.busy_pcie_threshold"), th.link_busy_pcie);
  EXPECT_EQ(o.duration_ms("pcie_link_degraded.for"), th.link_degraded_for_ms);
}

}  // namespace
}  // namespace gpulens::rules
