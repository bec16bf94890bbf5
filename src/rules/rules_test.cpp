// The generated rules: every alert's annotations, thresholds taken from the
// options, valid YAML, and the files shipped under deploy/ equal to the
// default output (set GPULENS_UPDATE_GOLDEN=1 to rewrite them).
#include "rules/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "diagnose/signals.h"

namespace gpulens::rules {
namespace {

using ::testing::HasSubstr;

const Rule* find_alert(const std::vector<Group>& groups, const std::string& name) {
  for (const auto& g : groups) {
    for (const auto& r : g.rules) {
      if (r.alert == name) return &r;
    }
  }
  return nullptr;
}

std::string annotation(const Rule& r, const std::string& key) {
  for (const auto& [k, v] : r.annotations) {
    if (k == key) return v;
  }
  return "";
}

TEST(BuildRules, EveryAlertHasSummaryDescriptionWithValueAndRunbook) {
  for (Names names : {Names::kNative, Names::kDcgm}) {
    int alerts = 0;
    for (const auto& g : build_rules(RuleOptions::defaults(), names)) {
      for (const auto& r : g.rules) {
        if (r.alert.empty()) continue;
        ++alerts;
        EXPECT_FALSE(annotation(r, "summary").empty()) << r.alert;
        EXPECT_THAT(annotation(r, "description"), HasSubstr("$value")) << r.alert;
        std::string anchor = "docs/runbooks.md#runbook-";
        for (char c : r.alert) anchor += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        EXPECT_THAT(annotation(r, "runbook_url"), ::testing::EndsWith(anchor)) << r.alert;
        ASSERT_EQ(r.labels.size(), 1u);
        EXPECT_THAT(r.labels[0].second, ::testing::AnyOf("info", "warning", "critical"));
      }
    }
    EXPECT_EQ(alerts, names == Names::kNative ? 18 : 13);
  }
}

TEST(BuildRules, ThresholdsAndDurationsComeFromOptions) {
  RuleOptions o = RuleOptions::defaults();
  ASSERT_TRUE(o.set("gpu_util_low.threshold", "0.35").is_ok());
  ASSERT_TRUE(o.set("gpu_util_low.for", "20s").is_ok());
  ASSERT_TRUE(o.set("sm_occupancy_low.p99_latency_seconds", "0.5").is_ok());
  ASSERT_TRUE(o.set("job", "gpu-agent").is_ok());
  const auto native = build_rules(o, Names::kNative);
  const Rule* util = find_alert(native, "GPULowUtilization");
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(util->expr, "gpu_utilization_ratio < 0.35");
  EXPECT_EQ(util->for_ms, 20000);
  EXPECT_THAT(annotation(*util, "summary"), HasSubstr("35 %"));
  EXPECT_THAT(find_alert(native, "GPULowSMOccupancy")->expr, HasSubstr("> 0.5"));
  EXPECT_EQ(find_alert(native, "GpulensAgentDown")->expr, "up{job=\"gpu-agent\"} == 0");
  // dcgm-exporter reports utilisation in percent.
  EXPECT_EQ(find_alert(build_rules(o, Names::kDcgm), "GPULowUtilization")->expr, "DCGM_FI_DEV_GPU_UTIL < 35");
}

TEST(BuildRules, ThrottleAlertCoversOnlyReasonsThatCutClocks) {
  const std::string expr = find_alert(build_rules(RuleOptions::defaults(), Names::kNative), "GPUClockThrottled")->expr;
  EXPECT_THAT(expr, HasSubstr("sw_thermal"));
  EXPECT_THAT(expr, HasSubstr("sw_power_cap"));
  EXPECT_THAT(expr, ::testing::Not(HasSubstr("gpu_idle")));
  EXPECT_THAT(expr, ::testing::Not(HasSubstr("sync_boost")));
}

// The alert fires where the diagnosis rule hardware_errors judges a health
// watch a critical fault: at DCGM's FAIL (20), not at WARN (10), at once.
TEST(BuildRules, HealthWatchAlertAgreesWithTheDiagnosis) {
  const auto native_rules = build_rules(RuleOptions::defaults(), Names::kNative);
  const auto dcgm_rules = build_rules(RuleOptions::defaults(), Names::kDcgm);
  const Rule* native = find_alert(native_rules, "GPUHealthWatchFailed");
  ASSERT_NE(native, nullptr);
  EXPECT_EQ(diagnose::kHealthFail, 20);
  EXPECT_EQ(native->expr, "gpu_health_status >= 20");
  EXPECT_EQ(native->for_ms, 0);
  EXPECT_EQ(native->labels[0].second, "critical");
  EXPECT_THAT(annotation(*native, "description"), HasSubstr("{{ $labels.watch }} with {{ $labels.error }}"));
  const Rule* dcgm = find_alert(dcgm_rules, "GPUHealthWatchFailed");
  ASSERT_NE(dcgm, nullptr);
  EXPECT_EQ(dcgm->expr, "DCGM_EXP_GPU_HEALTH_STATUS >= 20");
  EXPECT_THAT(annotation(*dcgm, "summary"), HasSubstr("{{ $labels.health_watch }} failed ({{ $labels.health_error_code }})"));
}

TEST(BuildRules, DcgmPciePeakIsNominalUnlessMeasuredGiven) {
  RuleOptions o = RuleOptions::defaults();
  EXPECT_THAT(find_alert(build_rules(o, Names::kDcgm), "GPUPCIeBandwidthSaturation")->expr,
              HasSubstr("DCGM_FI_DEV_PCIE_LINK_WIDTH"));
  ASSERT_TRUE(o.set("pcie_saturation.peak_bytes_per_second", "26e9").is_ok());
  EXPECT_THAT(find_alert(build_rules(o, Names::kDcgm), "GPUPCIeBandwidthSaturation")->expr,
              HasSubstr("DCGM_FI_PROF_PCIE_TX_BYTES / 26000000000 > 0.8"));
}

TEST(PromqlNumber, ShortestFriendlyForm) {
  EXPECT_EQ(promql_number(0.2), "0.2");
  EXPECT_EQ(promql_number(0.2 * 100), "20");
  EXPECT_EQ(promql_number(80), "80");
  EXPECT_EQ(promql_number(0.35 * 100), "35");
}

TEST(Render, RoundTripsThroughYaml) {
  RuleOptions o = RuleOptions::defaults();
  ASSERT_TRUE(o.set("evaluation_interval", "15s").is_ok());
  for (Names names : {Names::kNative, Names::kDcgm}) {
    const auto groups = build_rules(o, names);
    const YAML::Node file = YAML::Load(render(groups, Format::kRuleFile, names));
    ASSERT_EQ(file["groups"].size(), groups.size());
    for (size_t g = 0; g < groups.size(); ++g) {
      const YAML::Node yg = file["groups"][g];
      EXPECT_EQ(yg["name"].as<std::string>(), groups[g].name);
      EXPECT_EQ(yg["interval"].as<std::string>(), "15s");
      ASSERT_EQ(yg["rules"].size(), groups[g].rules.size());
      for (size_t i = 0; i < groups[g].rules.size(); ++i) {
        const Rule& r = groups[g].rules[i];
        const YAML::Node yr = yg["rules"][i];
        EXPECT_EQ(yr["expr"].as<std::string>(), r.expr);
        if (!r.alert.empty()) {
          EXPECT_EQ(yr["alert"].as<std::string>(), r.alert);
          EXPECT_EQ(yr["annotations"]["description"].as<std::string>(), annotation(r, "description"));
        }
      }
    }
    const YAML::Node object = YAML::Load(render(groups, Format::kPrometheusRule, names));
    EXPECT_EQ(object["kind"].as<std::string>(), "PrometheusRule");
    EXPECT_EQ(object["spec"]["groups"].size(), groups.size());
  }
}

// The shipped files are `gpulens rules` output with default options.
TEST(Golden, ShippedRuleFilesMatchDefaultOutput) {
  struct Case {
    const char* path;
    Names names;
    Format format;
  };
  const Case cases[] = {
      {"deploy/prometheus/gpulens-rules.yml", Names::kNative, Format::kRuleFile},
      {"deploy/prometheus/gpulens-rules-dcgm.yml", Names::kDcgm, Format::kRuleFile},
      {"deploy/kubernetes/base/prometheusrule.yaml", Names::kNative, Format::kPrometheusRule},
      {"deploy/kubernetes/overlays/dcgm-names/prometheusrule.yaml", Names::kDcgm, Format::kPrometheusRule},
  };
  const bool update = std::getenv("GPULENS_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : cases) {
    const std::string path = std::string(GPULENS_SOURCE_DIR) + "/" + c.path;
    const std::string want = render(build_rules(RuleOptions::defaults(), c.names), c.format, c.names);
    if (update) {
      std::ofstream(path) << want;
      continue;
    }
    std::ifstream in(path);
    std::stringstream have;
    have << in.rdbuf();
    EXPECT_EQ(have.str(), want) << c.path << " differs from `gpulens rules` output; regenerate with "
                                << "GPULENS_UPDATE_GOLDEN=1 ctest -R Golden";
  }
}

}  // namespace
}  // namespace gpulens::rules
