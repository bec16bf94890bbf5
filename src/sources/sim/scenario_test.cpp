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

TEST(Scenario, JobAndLinks) {
  auto s = parse_scenario("name: x\nnode: {gpus: 8, gpu_links: pcie}\n"
                          "job: {gpus: [4, 5], numa_nodes: [0], processes: one}\nphases: [{duration: 1m}]\n", "j");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->gpu_links, "pcie");
  EXPECT_EQ(s->job.gpus, (std::vector<int>{4, 5}));
  EXPECT_EQ(s->job.numa_nodes, std::vector<int>{0});
  EXPECT_TRUE(s->job.one_process);
  EXPECT_EQ(s->numa_node_of(3), 0);
  EXPECT_EQ(s->numa_node_of(4), 1);

  s = parse_scenario("name: x\nphases: [{duration: 1m}]\n", "d");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->gpu_links, "nvlink");  // an H100 SXM has NVLink
  EXPECT_TRUE(s->job.gpus.empty());
  s = parse_scenario("name: x\nnode: {gpu_model: l40s}\nphases: [{duration: 1m}]\n", "l");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->gpu_links, "pcie");

  s = parse_scenario("name: x\nnode: {gpu_model: l40s, gpu_links: nvlink}\nphases: [{duration: 1m}]\n", "l.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("l.yaml:2:"), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("no NVLink"), std::string::npos);
  s = parse_scenario("name: x\nnode: {gpus: 4}\njob: {gpus: [4]}\nphases: [{duration: 1m}]\n", "g.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("beyond"), std::string::npos) << s.status().message();
  s = parse_scenario("name: x\njob: {gpus: [0], numa_nodes: [2]}\nphases: [{duration: 1m}]\n", "n.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("job.numa_nodes"), std::string::npos) << s.status().message();
  s = parse_scenario("name: x\njob: {gpus: [0], processes: some}\nphases: [{duration: 1m}]\n", "p.yaml");
  ASSERT_FALSE(s.ok());
  s = parse_scenario("name: x\njob: {numa_nodes: [0]}\nphases: [{duration: 1m}]\n", "e.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("needs gpus"), std::string::npos) << s.status().message();
  s = parse_scenario("name: x\njob: {gpus: [0], id: \"81234\", first_rank: 8, world_size: 16}\nphases: [{duration: 1m}]\n",
                     "i.yaml");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->job.id, "81234");
  EXPECT_EQ(s->job.source, "slurm");  // the default
  EXPECT_EQ(s->job.first_rank, 8);
  EXPECT_EQ(s->job.world_size, 16);
  s = parse_scenario("name: x\njob: {gpus: [0], id: a, source: kubernetes}\nphases: [{duration: 1m}]\n", "k.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("job.source"), std::string::npos) << s.status().message();
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

TEST(Scenario, EnginesTakeThePhaseWorkloadWithTheirOwnChanges) {
  auto s = load_scenario("two-engines", kDir);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->engines.size(), 2u);
  EXPECT_EQ(s->engines[0].gpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(s->engines[1].port, 8001);
  ASSERT_EQ(s->engines[1].by_phase.size(), 2u);
  EXPECT_DOUBLE_EQ(s->engines[1].by_phase[0].kv_usage, 0.55);  // the phase's
  EXPECT_DOUBLE_EQ(s->engines[1].by_phase[1].kv_usage, 0.99);  // its own change
  EXPECT_DOUBLE_EQ(s->engines[1].by_phase[1].duty, 0.93);      // the rest the phase's
  EXPECT_EQ(s->phase_index(7 * 60'000), 1u);

  const std::string base = "name: x\nphases: [{name: a, duration: 1m}]\n";
  auto bad = parse_scenario(base + "engines: [{port: 8000, phases: {b: {kv_usage: 0.9}}}]\n", "e.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("engines[0].phases.b: no phase of that name"), std::string::npos)
      << bad.status().message();
  bad = parse_scenario(base + "engines: [{gpus: [0]}, {gpus: [0], port: 8001}]\n", "e.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("shares a GPU with another engine"), std::string::npos);
  bad = parse_scenario(base + "engines: [{kind: tgi}]\n", "e.yaml");
  ASSERT_FALSE(bad.ok());
  bad = parse_scenario(base + "engines: [{gpus: [9]}]\n", "e.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("beyond the node's 8"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace gpulens::sim
