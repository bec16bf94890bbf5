// Captures triggered by the diagnosis: which findings capture, in which
// process, the rate limits, and the summaries attached.
#include "agent/profile_trigger.h"

#include <gtest/gtest.h>

#include <map>

namespace gpulens::cli {
namespace {

using diagnose::Finding;
using diagnose::Report;

constexpr int64_t kMin = 60'000;

Finding finding(std::string cause, diagnose::State state = diagnose::State::kFiring, bool ongoing = true) {
  Finding f;
  f.cause = std::move(cause);
  f.state = state;
  f.ongoing = ongoing;
  return f;
}

// One host; per GPU index its findings.
Report report(const std::map<std::string, std::vector<Finding>>& gpus) {
  Report r;
  r.hosts.emplace_back();
  r.hosts[0].host = "n1";
  for (const auto& [gpu, findings] : gpus) {
    diagnose::GpuReport g;
    g.gpu = gpu;
    g.findings = findings;
    r.hosts[0].gpus.push_back(std::move(g));
  }
  return r;
}

const Finding& at(const Report& r, size_t gpu, size_t i = 0) { return r.hosts[0].gpus[gpu].findings[i]; }

// A stacks upload whose main thread waits in the DataLoader 90 % of the time.
const char* kLoaderStacks = R"({"kind":"stacks","hz":100,"duration_s":1,"rounds":100,"threads":[
  {"name":"MainThread","main":true,"samples":100,"frames":[
    {"function":"__getitem__","file":"/job/slow_loader.py","line":17,"self":0.9,"total":0.9},
    {"function":"__next__","file":"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py","line":628,"self":0,"total":0.92},
    {"function":"train_step","file":"/job/train.py","line":40,"self":0.08,"total":0.08}]}]})";

struct Fixture : ::testing::Test {
  push::ProfileTable table;
  std::map<int, std::vector<int64_t>> on_gpu;
  ProfileTriggerOptions options() {
    ProfileTriggerOptions o;
    o.causes = {"kernel_launch", "input_pipeline"};
    return o;
  }
  ProfileTrigger make(ProfileTriggerOptions o) {
    return ProfileTrigger(std::move(o), &table, [this](int gpu) { return on_gpu[gpu]; });
  }
  void client(int64_t pid, int64_t now) { table.take(pid, now); }  // a poll: the pid runs a client
};

TEST(ProfileCauses, OnlyCausesACaptureCanExplain) {
  EXPECT_TRUE(check_profile_cause("kernel_launch"));
  EXPECT_TRUE(check_profile_cause("input_pipeline"));
  Status unknown = check_profile_cause("kernel_lunch");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.message().find("unknown cause \"kernel_lunch\""), std::string::npos) << unknown.message();
  EXPECT_NE(unknown.message().find("input_pipeline"), std::string::npos);
  Status gpu_cause = check_profile_cause("thermal_throttle");
  ASSERT_FALSE(gpu_cause);
  EXPECT_NE(gpu_cause.message().find("a cause of the GPU or the node"), std::string::npos) << gpu_cause.message();
  EXPECT_EQ(profile_kind("input_pipeline"), "stacks");
  EXPECT_EQ(profile_kind("kernel_launch"), "torch");
  EXPECT_EQ(profile_kind("memory_bandwidth"), "torch");
}

TEST_F(Fixture, FiringFindingOnAClientsGpuRequestsOneCapture) {
  on_gpu[0] = {42, 77};  // 77 runs no client
  client(42, 0);
  ProfileTrigger t = make(options());
  Report r = report({{"0", {finding("kernel_launch")}}});
  t.step(r, 1000);
  EXPECT_EQ(t.requested(), 1u);
  EXPECT_EQ(at(r, 0).profile.state, "requested");
  EXPECT_EQ(at(r, 0).profile.pid, 42);
  EXPECT_EQ(at(r, 0).profile.kind, "torch");
  auto job = table.take(42, 1100);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->kind, "torch");
  EXPECT_EQ(job->duration_s, 10);
  EXPECT_EQ(job->id, at(r, 0).profile.capture);
  // The next diagnosis does not ask again while the finding holds.
  Report again = report({{"0", {finding("kernel_launch")}}});
  t.step(again, 16'000);
  EXPECT_EQ(t.requested(), 1u);
  EXPECT_EQ(at(again, 0).profile.state, "requested");
}

TEST_F(Fixture, OnlyFiringOngoingListedCausesOnGpusWithAClient) {
  on_gpu[0] = {42};
  on_gpu[1] = {43};  // no client
  client(42, 0);
  ProfileTrigger t = make(options());
  Report r = report({{"0",
                      {finding("kernel_launch", diagnose::State::kPending), finding("kernel_launch", diagnose::State::kFiring, false),
                       finding("memory_bandwidth")}},
                     {"1", {finding("kernel_launch")}}});
  t.step(r, 1000);
  EXPECT_EQ(t.requested(), 0u);
  for (const auto& g : r.hosts[0].gpus) {
    for (const auto& f : g.findings) EXPECT_TRUE(f.profile.state.empty());
  }
  // Off: no causes listed.
  ProfileTrigger off = make({});
  Report r2 = report({{"0", {finding("kernel_launch")}}});
  off.step(r2, 1000);
  EXPECT_EQ(off.requested(), 0u);
}

TEST_F(Fixture, StacksResultSummarisedAndAttached) {
  on_gpu[3] = {42};
  client(42, 0);
  ProfileTrigger t = make(options());
  Report r = report({{"3", {finding("input_pipeline")}}});
  t.step(r, 1000);
  auto job = table.take(42, 2000);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->kind, "stacks");
  ASSERT_FALSE(table.finish(job->id, true, kLoaderStacks, "application/json", 12'000));
  Report later = report({{"3", {finding("input_pipeline")}}});
  t.step(later, 15'000);
  const auto& p = at(later, 0).profile;
  EXPECT_EQ(p.state, "done");
  EXPECT_EQ(p.of, "frames");
  EXPECT_EQ(p.capture, job->id);
  EXPECT_NEAR(p.dataloader_wait, 0.92, 1e-9);
  EXPECT_EQ(p.verdict, "dataloader");
  ASSERT_EQ(p.top.size(), 2u);
  EXPECT_EQ(p.top[0].name, "__getitem__ (slow_loader.py:17)");
  EXPECT_NEAR(p.top[0].share, 0.9, 1e-9);
  EXPECT_NE(p.summary.find("waits on the DataLoader in 92.0% of its samples"), std::string::npos) << p.summary;
  EXPECT_EQ(p.at_ms, 12'000);
}

TEST_F(Fixture, FailedCaptureSaysWhy) {
  on_gpu[0] = {42};
  client(42, 0);
  ProfileTrigger t = make(options());
  Report r = report({{"0", {finding("kernel_launch")}}});
  t.step(r, 1000);
  auto job = table.take(42, 2000);
  ASSERT_TRUE(job);
  ASSERT_FALSE(table.finish(job->id, false, "torch is not imported", "", 3000));
  Report later = report({{"0", {finding("kernel_launch")}}});
  t.step(later, 4000);
  EXPECT_EQ(at(later, 0).profile.state, "failed");
  EXPECT_NE(at(later, 0).profile.summary.find("torch is not imported"), std::string::npos);
}

TEST_F(Fixture, OneCapturePerProcessPerPeriod) {
  on_gpu[0] = {42};
  on_gpu[1] = {42};  // the same process on two GPUs
  client(42, 0);
  ProfileTriggerOptions o = options();
  o.causes.push_back("memory_bandwidth");
  ProfileTrigger t = make(o);
  Report r = report({{"0", {finding("kernel_launch")}}});
  t.step(r, 1000);
  ASSERT_EQ(t.requested(), 1u);
  const std::string first = at(r, 0).profile.capture;
  // A finding on the other GPU, same process and kind: the same capture, not a new one.
  Report both = report({{"0", {finding("kernel_launch")}}, {"1", {finding("memory_bandwidth")}}});
  client(42, 5 * kMin);
  t.step(both, 5 * kMin);
  EXPECT_EQ(t.requested(), 1u);
  EXPECT_EQ(at(both, 1).profile.capture, first);
  // Another kind (stacks for input_pipeline) in that process within the hour: skipped, saying why.
  Report loader = report({{"0", {finding("kernel_launch")}}, {"1", {finding("input_pipeline")}}});
  client(42, 10 * kMin);
  t.step(loader, 10 * kMin);
  EXPECT_EQ(t.requested(), 1u);
  EXPECT_EQ(at(loader, 1).profile.state, "skipped");
  EXPECT_TRUE(at(loader, 1).profile.capture.empty());
  EXPECT_NE(at(loader, 1).profile.summary.find("one capture per process per 1h (diagnose.profile_every)"),
            std::string::npos)
      << at(loader, 1).profile.summary;
  // After the period the process is captured again.
  client(42, 61 * kMin);
  Report hour = report({{"0", {finding("kernel_launch")}}, {"1", {finding("input_pipeline")}}});
  t.step(hour, 62 * kMin);
  EXPECT_EQ(t.requested(), 2u);
  EXPECT_EQ(at(hour, 1).profile.state, "requested");
  EXPECT_EQ(at(hour, 1).profile.kind, "stacks");
}

TEST_F(Fixture, RefusedRequestAskedAgainLater) {
  on_gpu[0] = {42};
  client(42, 0);
  std::string users;
  push::ProfileRequest mine;
  mine.pid = 42;
  ASSERT_FALSE(table.request(mine, 0, users));  // a user's capture in that process
  ProfileTrigger t = make(options());
  Report r = report({{"0", {finding("kernel_launch")}}});
  t.step(r, 1000);
  EXPECT_EQ(t.requested(), 0u);
  EXPECT_TRUE(at(r, 0).profile.state.empty());
  auto taken = table.take(42, 2000);
  ASSERT_TRUE(taken);
  ASSERT_FALSE(table.finish(users, true, "{}", "application/json", 3000));
  Report soon = report({{"0", {finding("kernel_launch")}}});
  t.step(soon, 5000);  // within 15 s of the refusal: not asked yet
  EXPECT_EQ(t.requested(), 0u);
  Report later = report({{"0", {finding("kernel_launch")}}});
  t.step(later, 17'000);
  EXPECT_EQ(t.requested(), 1u);
  EXPECT_EQ(at(later, 0).profile.state, "requested");
}

TEST_F(Fixture, GlobalCapPerHour) {
  for (int g = 0; g < 4; ++g) {
    on_gpu[g] = {100 + g};
    client(100 + g, 0);
  }
  ProfileTriggerOptions o = options();
  o.max_per_hour = 2;
  ProfileTrigger t = make(o);
  Report r = report({{"0", {finding("kernel_launch")}}, {"1", {finding("kernel_launch")}},
                     {"2", {finding("kernel_launch")}}, {"3", {finding("kernel_launch")}}});
  t.step(r, 1000);
  EXPECT_EQ(t.requested(), 2u);
  EXPECT_EQ(at(r, 2).profile.state, "skipped");
  EXPECT_NE(at(r, 2).profile.summary.find("diagnose.profile_max_per_hour"), std::string::npos);
}

TEST_F(Fixture, SummaryLeavesWithItsFinding) {
  on_gpu[0] = {42};
  client(42, 0);
  ProfileTrigger t = make(options());
  Report r = report({{"0", {finding("kernel_launch")}}});
  t.step(r, 1000);
  Report gone = report({{"0", {}}});
  t.step(gone, 20'000);
  Report back = report({{"0", {finding("kernel_launch")}}});
  client(42, 30'000);
  t.step(back, 40'000);
  // Back within the hour: the process's earlier capture of that kind serves it, no second request.
  EXPECT_EQ(t.requested(), 1u);
  EXPECT_FALSE(at(back, 0).profile.state.empty());
}

TEST(ProfileSummaries, CpuOnlyTraceNamesTopCpuOps) {
  trace::JobReport job;
  job.ranks.emplace_back();
  auto& r = job.ranks[0];
  r.cpu.busy_us = 1000;
  r.top_cpu_ops = {{"aten::mm", 10, 600, 650}, {"aten::add", 5, 100, 120}, {"aten::relu", 5, 50, 50}, {"x", 1, 1, 1}};
  r.verdict.bound = "cpu-only";
  auto s = summarise_trace(job);
  EXPECT_EQ(s.of, "cpu_ops");
  ASSERT_EQ(s.top.size(), 3u);
  EXPECT_EQ(s.top[0].name, "aten::mm");
  EXPECT_NEAR(s.top[0].share, 0.6, 1e-9);
  EXPECT_EQ(s.verdict, "cpu-only");
  EXPECT_NE(s.summary.find("top CPU ops by self time: aten::mm 60.0%, aten::add 10.0%, aten::relu 5.0%"),
            std::string::npos)
      << s.summary;
}

TEST(ProfileSummaries, GpuTraceNamesTopKernels) {
  trace::JobReport job;
  job.ranks.emplace_back();
  auto& r = job.ranks[0];
  r.gpu_timeline = true;
  r.temporal.compute_us = 800;
  r.temporal.non_compute_us = 200;
  r.top_kernels = {{"void tiny_add<float>()", "computation", 5000, 400}, {"gemm", "computation", 10, 300}};
  r.top_cpu_ops = {{"aten::add", 5000, 900, 900}};
  r.verdict.bound = "host-bound";
  auto s = summarise_trace(job);
  EXPECT_EQ(s.of, "kernels");
  ASSERT_EQ(s.top.size(), 2u);
  EXPECT_EQ(s.top[0].name, "void tiny_add<float>()");
  EXPECT_NEAR(s.top[0].share, 0.4, 1e-9);
  EXPECT_NE(s.summary.find("verdict host-bound"), std::string::npos);
}

}  // namespace
}  // namespace gpulens::cli
