// Tests on real profiler traces (tests/data/traces, see SOURCES.md there).
// HTA's numbers below come from running HolisticTraceAnalysis on the same
// files with HTA_DISABLE_NS_ROUNDING=1 (bench/hta_reference.py).
#include <gtest/gtest.h>

#include "analyze/trace/analysis.h"
#include "analyze/trace/files.h"
#include "analyze/trace/reader.h"
#include "analyze/trace/report.h"

namespace gpulens::trace {
namespace {

std::string data(const std::string& name) {
  return std::string(GPULENS_SOURCE_DIR) + "/tests/data/traces/" + name;
}

JobReport analyse(std::vector<std::string> files, bool hta) {
  std::vector<Trace> ts;
  for (const auto& f : files) {
    auto t = read_trace_file(data(f));
    EXPECT_TRUE(t) << t.status().message();
    if (t) ts.push_back(std::move(t).value());
  }
  Options o;
  o.compat_hta = hta;
  return analyse_job(ts, o);
}

void near(double ours, double hta) { EXPECT_NEAR(ours, hta, 0.005 * std::abs(hta) + 0.01); }

TEST(TraceCorpus, NcclTraceMatchesHta) {
  RankReport r = analyse({"nccl_data.json.gz"}, true).ranks.at(0);
  near(r.temporal.idle_us, 336419.7146875525);
  near(r.temporal.compute_us, 76935.82800000906);
  near(r.temporal.non_compute_us, 22232.018992125988);
  near(r.temporal.span_us, 435587.5616796875);
  ASSERT_TRUE(r.comm_comp_overlap_pct);
  near(*r.comm_comp_overlap_pct, 14.76);
  EXPECT_EQ(r.launch_delay.count, 2516u);
  near(r.launch_delay.mean, 27.074990318213437);
  EXPECT_GT(r.filtered_out, 0u);  // the last of its three steps
}

TEST(TraceCorpus, LegacyFormatMatchesHta) {
  RankReport r = analyse({"worker0.1623143089861.pt.trace.json.gz"}, true).ranks.at(0);
  near(r.temporal.idle_us, 327463);
  near(r.temporal.compute_us, 492891);
  near(r.temporal.span_us, 830494);
  EXPECT_EQ(r.launch_delay.count, 7580u);
}

TEST(TraceCorpus, SubMicrosecondEventsKeepPositiveDurations) {
  // 241 sub-microsecond memsets: HTA's default rounding makes some negative.
  RankReport r = analyse({"Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"}, false).ranks.at(0);
  EXPECT_GE(r.temporal.idle_us, 0);
  EXPECT_GE(r.temporal.non_compute_us, 0);
  bool memset = false;
  for (const auto& m : r.memory) {
    if (m.direction == "Memset") {
      memset = true;
      EXPECT_EQ(m.count, 241u);
      EXPECT_GT(m.total_us, 0);
    }
  }
  EXPECT_TRUE(memset);
  RankReport h = analyse({"Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"}, true).ranks.at(0);
  near(h.temporal.span_us, 49652.83195117187);
  near(h.temporal.compute_us, 45432.69799999893);
}

TEST(TraceCorpus, RocmLaunchesAndStreamZero) {
  RankReport fixed = analyse({"resnet_act_checkpoint.json.gz"}, false).ranks.at(0);
  EXPECT_GT(fixed.launch_delay.count, 2000u);  // hipLaunchKernel, hipExtModuleLaunchKernel, ...
  ASSERT_FALSE(fixed.idle_by_stream.empty());
  EXPECT_EQ(fixed.idle_by_stream[0].stream, 0);
  RankReport hta = analyse({"resnet_act_checkpoint.json.gz"}, true).ranks.at(0);
  EXPECT_EQ(hta.launch_delay.count, 0u);  // HTA knows only CUDA launch names
  near(hta.temporal.span_us, 56517.603039062495);
}

TEST(TraceCorpus, CudaSyncEventsStretchHtaSpanOnly) {
  JobReport fixed = analyse({"benchmark_result_2869224_1695835535_trace.json.gz"}, false);
  JobReport hta = analyse({"benchmark_result_2869224_1695835535_trace.json.gz"}, true);
  near(hta.ranks[0].temporal.span_us, 12996011);
  EXPECT_LT(fixed.ranks[0].temporal.span_us, hta.ranks[0].temporal.span_us);
}

TEST(TraceCorpus, TwoRanksOfOneJob) {
  JobReport j = analyse({"dlrm_kineto/worker1_step_12.1694128201556.pt.trace.json",
                         "dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"}, false);
  ASSERT_EQ(j.ranks.size(), 2u);
  EXPECT_EQ(j.ranks[0].rank, 0);
  EXPECT_EQ(j.ranks[1].rank, 1);
  for (const auto& r : j.ranks) {
    ASSERT_TRUE(r.comm_comp_overlap_pct);
    EXPECT_FALSE(r.verdict.bound.empty());
    EXPECT_FALSE(r.verdict.evidence.empty());
  }
}

// Debian's CPU torch 1.13 (no Kineto): a bare array of events without
// categories, "pid": "CPU functions". The numbers below were worked out with
// an independent quadratic nesting in Python (each event's parent: the
// shortest event containing it on its thread).
TEST(TraceCorpus, AutogradProfilerCpuTraceGivesTopCpuOpsAndNoGpuNumbers) {
  auto job = analyse_files({data("torch1.13-cpu-train.json")}, {}, {}, false);
  ASSERT_TRUE(job) << job.status().message();
  const RankReport& r = job->ranks.at(0);
  EXPECT_FALSE(r.gpu_timeline);
  EXPECT_EQ(r.cpu.events, 488u);
  EXPECT_EQ(r.cpu.uncategorised, 488u);
  EXPECT_EQ(r.cpu.threads, 1u);
  EXPECT_EQ(r.skipped.missing_fields, 0u);
  EXPECT_DOUBLE_EQ(r.cpu.span_us, 872839);
  // The union of the events' times: a nesting by "shortest parent" counts 6 us
  // twice (children that outlive their parent by the microsecond rounding).
  EXPECT_DOUBLE_EQ(r.cpu.busy_us, 845166);
  ASSERT_GE(r.top_cpu_ops.size(), 3u);
  EXPECT_EQ(r.top_cpu_ops[0].name, "aten::mm");
  EXPECT_EQ(r.top_cpu_ops[0].count, 16u);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[0].self_us, 800821);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[0].total_us, 800838);
  EXPECT_EQ(r.top_cpu_ops[1].name, "aten::addmm");
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[1].self_us, 26789);
  EXPECT_EQ(r.top_cpu_ops[2].name, "aten::add_");
  EXPECT_EQ(r.verdict.bound, "cpu-only");
  EXPECT_NE(r.verdict.evidence.find("no GPU timeline"), std::string::npos) << r.verdict.evidence;
  EXPECT_NE(r.verdict.evidence.find("aten::mm"), std::string::npos) << r.verdict.evidence;
  // No GPU numbers pretended: no span, no idle share, no top kernels.
  EXPECT_EQ(r.temporal.span_us, 0);
  EXPECT_TRUE(r.top_kernels.empty());
  std::string text = to_text(*job);
  EXPECT_EQ(text.find("GPU span"), std::string::npos) << text;
  EXPECT_EQ(text.find("top kernels"), std::string::npos) << text;
  EXPECT_NE(text.find("no GPU timeline in this trace"), std::string::npos) << text;
  EXPECT_NE(text.find("top CPU ops by self time"), std::string::npos) << text;
  EXPECT_NE(text.find("aten::mm"), std::string::npos) << text;
}

TEST(TraceCorpus, KinetoTracesGetTopCpuOpsBesideTheGpuNumbers) {
  RankReport r = analyse({"nccl_data.json.gz"}, false).ranks.at(0);
  EXPECT_TRUE(r.gpu_timeline);
  EXPECT_EQ(r.cpu.uncategorised, 0u);
  EXPECT_GT(r.cpu.threads, 1u);  // the main thread and autograd's
  ASSERT_FALSE(r.top_cpu_ops.empty());
  EXPECT_NE(r.verdict.bound, "cpu-only");
  EXPECT_LE(r.top_cpu_ops[0].self_us, r.top_cpu_ops[0].total_us);
  EXPECT_LE(r.top_cpu_ops[0].self_us, r.cpu.busy_us);
}

}  // namespace
}  // namespace gpulens::trace
