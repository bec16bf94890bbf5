// What a SIGHUP applies and what it keeps until a restart.
#include "cli/reload.h"

#include <gtest/gtest.h>

namespace gpulens::cli {
namespace {

AgentConfig parse(const std::string& yaml) {
  auto c = parse_config(yaml, "t.yaml");
  EXPECT_TRUE(c.ok()) << c.status().message();
  return c ? *c : AgentConfig{};
}

TEST(Reload, LiveKeysApplyAndTheRestWaitsForARestart) {
  const AgentConfig running = parse("listen: 127.0.0.1:9400\ninterval: 1s\ndiagnose: {pcie_util: 0.8}\n");
  const AgentConfig fresh = parse(
      "listen: 0.0.0.0:9500\ninterval: 1s\ndiagnose: {pcie_util: 0.6}\n"
      "remote_write: {url: \"http://127.0.0.1:8428/api/v1/write\", job: node}\nlog: {level: debug}\n");
  const ReloadPlan p = plan_reload(running, fresh);
  EXPECT_EQ(join_keys(p.applied), "log.level, remote_write.url, remote_write.job, diagnose.pcie_util");
  EXPECT_EQ(join_keys(p.needs_restart), "listen");
  EXPECT_EQ(p.next.listen, "127.0.0.1:9400");  // kept
  EXPECT_DOUBLE_EQ(p.next.diagnose.pcie_util, 0.6);
  EXPECT_EQ(p.next.remote_write.url, "http://127.0.0.1:8428/api/v1/write");
  EXPECT_EQ(p.next.remote_write.job, "node");
  EXPECT_EQ(p.next.log.level, "debug");
}

TEST(Reload, ProfileOnIsLive) {
  const AgentConfig running = parse("push: {enabled: true}\n");
  const AgentConfig fresh =
      parse("push: {enabled: true}\ndiagnose: {profile_on: [kernel_launch, input_pipeline], profile_every: 2h}\n");
  const ReloadPlan p = plan_reload(running, fresh);
  EXPECT_EQ(join_keys(p.applied), "diagnose.profile_on, diagnose.profile_every");
  EXPECT_EQ(join_keys(p.needs_restart), "none");
  EXPECT_EQ(p.next.profile_on.causes, (std::vector<std::string>{"kernel_launch", "input_pipeline"}));
  EXPECT_EQ(p.next.profile_on.per_process_ms, 7'200'000);
}

TEST(Reload, AnUnchangedFileChangesNothing) {
  const AgentConfig c = parse("sources: [sim]\ndiagnose: {pcie_util: 0.7}\n");
  const ReloadPlan p = plan_reload(c, c);
  EXPECT_TRUE(p.applied.empty());
  EXPECT_TRUE(p.needs_restart.empty());
  EXPECT_EQ(join_keys(p.applied), "none");
}

TEST(Reload, ScrapeTargetsAreReRead) {
  const AgentConfig running =
      parse("sources: [host, scrape]\nsource: {scrape: {targets: [\"http://127.0.0.1:9100/metrics\"]}}\n");
  const AgentConfig fresh = parse(
      "sources: [host, scrape]\nsource: {scrape: {targets: [\"http://127.0.0.1:9100/metrics\", "
      "\"http://127.0.0.1:8000/metrics\"]}}\n");
  const ReloadPlan p = plan_reload(running, fresh);
  EXPECT_EQ(join_keys(p.applied), "source.scrape.targets");
  EXPECT_EQ(join_keys(p.needs_restart), "none");
  EXPECT_EQ(p.next.source.scrape.targets.size(), 2u);
}

TEST(Reload, OnlyDiagnoseRulesRemoteWriteLogAndScrapeTargetsAreLive) {
  for (const char* k : {"diagnose.pcie_util", "rules.gpu_util_low.threshold", "remote_write.url", "log.level",
                        "source.scrape.targets", "source.scrape.timeout"}) {
    EXPECT_TRUE(live_reload_key(k)) << k;
  }
  for (const char* k : {"listen", "interval", "history", "sources", "source.nvml.library", "push.enabled",
                        "dcgm_names"}) {
    EXPECT_FALSE(live_reload_key(k)) << k;
  }
}

}  // namespace
}  // namespace gpulens::cli
