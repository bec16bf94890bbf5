// Every simulator scenario yields its expected top cause through the live
// path: the agent samples the simulator into its history (on a virtual
// 15 s clock, so 30 minutes take a moment) and diagnose_live() reads it —
// the same code that serves /api/v1/findings and gpulens_finding.
#include <gtest/gtest.h>

#include "diagnose/live_input.h"
#include "agent/agent.h"
#include "sources/sim/sim_source.h"

namespace gpulens {
namespace {

const std::string kDir = std::string(GPULENS_SOURCE_DIR) + "/scenarios";

class LiveScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(LiveScenario, YieldsExpectedTopCause) {
  auto scenario = sim::load_scenario(GetParam(), kDir);
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  const sim::Scenario s = *scenario;
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(make_sim_source(s, 1, 1.0));
  constexpr int64_t kStep = 15'000, kWindow = 30 * 60'000;
  Agent agent({.listen = "", .interval_ms = kStep, .history_ms = kWindow}, std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  const int64_t start = 1'764'000'000'000;
  int64_t t = start;
  for (; t <= start + kWindow; t += kStep) agent.collect_once(t);
  t -= kStep;

  const diagnose::Report report =
      diagnose::diagnose_live(agent.registry(), agent.history(), t, diagnose::Thresholds{}, kWindow, s.hostname);
  ASSERT_EQ(report.hosts.size(), 1u);
  ASSERT_EQ(report.hosts[0].gpus.size(), static_cast<size_t>(s.gpus));
  for (const auto& g : report.hosts[0].gpus) {
    const int index = std::stoi(g.gpu);
    const bool target = s.expect_gpus.empty() ||
                        std::find(s.expect_gpus.begin(), s.expect_gpus.end(), index) != s.expect_gpus.end();
    const std::string top = g.findings.empty() ? "-" : g.findings[0].cause;
    if (!s.expect_cause.empty() && target) {
      EXPECT_EQ(top, s.expect_cause) << "GPU " << g.gpu;
      if (s.expect_cause != "small_batch" && !g.findings.empty()) {
        EXPECT_NE(g.findings[0].severity, diagnose::Severity::kInfo) << "GPU " << g.gpu;
      }
    } else {
      // Healthy GPUs, and the bystanders of a fault: nothing above info.
      for (const auto& f : g.findings) {
        if (f.state == diagnose::State::kPending) continue;  // not (yet) a finding
        if (!f.explained_by.cause.empty() && f.explained_by.gpu != g.gpu) continue;  // a peer's fault
        EXPECT_EQ(f.severity, diagnose::Severity::kInfo) << "GPU " << g.gpu << ": " << f.cause;
      }
    }
  }
}

// An agent that just (re)started holds two minutes of history: a cause with
// a five-minute duration is pending, never firing, however clear its signals.
TEST(LiveRestart, StartsPending) {
  auto scenario = sim::load_scenario("thermal-throttle-one-gpu", kDir);
  ASSERT_TRUE(scenario.ok()) << scenario.status().message();
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(make_sim_source(*scenario, 1, 1.0));
  constexpr int64_t kStep = 15'000;
  Agent agent({.listen = "", .interval_ms = kStep, .history_ms = 30 * 60'000}, std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  const int64_t start = 1'764'000'000'000;
  int64_t t = start;
  for (; t <= start + 120'000; t += kStep) agent.collect_once(t);
  t -= kStep;
  const diagnose::Report report = diagnose::diagnose_live(agent.registry(), agent.history(), t,
                                                          diagnose::Thresholds{}, 30 * 60'000, scenario->hostname);
  EXPECT_FALSE(report.has_findings(diagnose::Severity::kWarning));
  bool pending = false;
  for (const auto& g : report.hosts.at(0).gpus) {
    for (const auto& f : g.findings) {
      if (f.cause == "thermal_throttle") pending = f.state == diagnose::State::kPending;
    }
  }
  EXPECT_TRUE(pending);
}

std::vector<std::string> scenarios() {
  std::vector<std::string> out;
  for (auto& n : sim::list_scenarios(kDir)) {
    if (n != "demo-tour") out.push_back(n);  // mixes phases by design
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Scenarios, LiveScenario, ::testing::ValuesIn(scenarios()),
                         [](const auto& param_info) {
                           std::string n = param_info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace gpulens
