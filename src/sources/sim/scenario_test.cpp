// Scenario files: every shipped one loads; mistakes name file, line, problem.
#include "sources/sim/scenario.h"

#include <gtest/gtest.h>

namespace gpulens::sim {
namespace {

const std::string kDir = std::string(GPULENS_SOURCE_DIR) + "/scenarios";

TEST(Scenario, EveryShippedScenarioLoads) {
  auto names = list_scenarios(kDir);
  ASSERT_GE(names.size(), 15u);
  for (const auto& n : names) {
    auto s = load_scenario(n, kDir);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->name, n) << "file name and name: differ";
    EXPECT_FALSE(s->description.empty()) << n;
  }
}

TEST(Scenario, ErrorsNameFileLineAndProblem) {
  auto s = parse_scenario("name: x\nphases:\n  - duration: 10q\n", "bad.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad.yaml:3:"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("duration"), std::string::npos);

  s = parse_scenario("name: x\nphases:\n  - duration: 1m\n    workload: {dutty: 0.5}\n", "typo.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown key \"dutty\""), std::string::npos) << s.status().message();

  s = parse_scenario("name: x\nphases:\n  - duration: 1m\n    workload: {duty: 1.5}\n", "range.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("out of range"), std::string::npos);

  s = parse_scenario("name: [unclosed\n", "syntax.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("syntax.yaml:"), std::string::npos);

  s = parse_scenario("name: x\nnode: {gpu_model: b9000}\nphases: [{duration: 1m}]\n", "m.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("unknown model"), std::string::npos);

  EXPECT_FALSE(load_scenario("no-such-scenario", kDir).ok());
  EXPECT_FALSE(parse_scenario("", "empty.yaml").ok());
}

TEST(Scenario, PhaseTimeline) {
  auto s = parse_scenario("name: x\nphases:\n  - {name: a, duration: 1m}\n  - {name: b, duration: 2m}\n", "t");
  ASSERT_TRUE(s.ok()) << s.status().message();
  int64_t into = 0;
  EXPECT_EQ(s->phase_at(30'000, &into).name, "a");
  EXPECT_EQ(s->phase_at(90'000, &into).name, "b");
  EXPECT_EQ(into, 30'000);
  EXPECT_EQ(s->phase_at(10 * 60'000, &into).name, "b");  // holds the last phase
  s->repeat = true;
  EXPECT_EQ(s->phase_at(3 * 60'000 + 10'000, &into).name, "a");
}

}  // namespace
}  // namespace gpulens::sim
