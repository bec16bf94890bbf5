// Tests for the analyses on a hand-made trace whose answers are worked out
// in the comments, in both the fixed and the HTA definitions.
#include "analyze/trace/analysis.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include "analyze/trace/classify.h"
#include "analyze/trace/reader.h"
#include "analyze/trace/report.h"

namespace gpulens::trace {
namespace {

// stream 7: A [0,10) B [12,20) C [25,30) D [100,110), launched at -5, 11, 5, 6
// (each launch call lasts 2 us). stream 9: an RCCL kernel [5,15) launched by
// hipLaunchKernel at 0 (1 us), and a custom all-reduce [40,50) with no launch.
const char* kJob = R"({"traceEvents": [
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":-5,"dur":2,"args":{"correlation":1}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":11,"dur":2,"args":{"correlation":2}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":5,"dur":2,"args":{"correlation":3}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":6,"dur":2,"args":{"correlation":4}},
 {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","ts":0,"dur":1,"args":{"correlation":5}},
 {"ph":"X","cat":"kernel","name":"A","ts":0,"dur":10,"args":{"stream":7,"correlation":1}},
 {"ph":"X","cat":"kernel","name":"B","ts":12,"dur":8,"args":{"stream":7,"correlation":2}},
 {"ph":"X","cat":"kernel","name":"C","ts":25,"dur":5,"args":{"stream":7,"correlation":3}},
 {"ph":"X","cat":"kernel","name":"A","ts":100,"dur":10,"args":{"stream":7,"correlation":4}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_Generic","ts":5,"dur":10,"args":{"stream":9,"correlation":5}},
 {"ph":"X","cat":"kernel","name":"cross_device_reduce_2stage<float>","ts":40,"dur":10,"args":{"stream":9,"correlation":6}}
]})";

Trace load(std::string json) {
  json.append(simdjson::SIMDJSON_PADDING, ' ');
  auto t = parse_trace(std::string_view(json.data(), json.size() - simdjson::SIMDJSON_PADDING), "job.json");
  EXPECT_TRUE(t) << t.status().message();
  return std::move(t).value();
}

RankReport run(bool hta) {
  Options o;
  o.compat_hta = hta;
  std::vector<Trace> ts;
  ts.push_back(load(kJob));
  return analyse_job(ts, o).ranks.at(0);
}

TEST(TraceAnalysis, TemporalBreakdown) {
  RankReport r = run(false);
  // busy: [0,20) [25,30) [40,50) [100,110) = 45 of a 110 us span.
  EXPECT_DOUBLE_EQ(r.temporal.span_us, 110);
  EXPECT_DOUBLE_EQ(r.temporal.idle_us, 65);
  EXPECT_DOUBLE_EQ(r.temporal.compute_us, 33);       // A, B, C, A
  EXPECT_DOUBLE_EQ(r.temporal.non_compute_us, 12);   // RCCL outside compute 2, all-reduce 10
}

TEST(TraceAnalysis, CustomAllReduceIsCommunicationUnlessHta) {
  EXPECT_DOUBLE_EQ(run(true).temporal.compute_us, 43);  // HTA counts it as compute
  EXPECT_EQ(classify_kernel(EventKind::kKernel, "multimem_all_reduce_kernel", Rules::kFixed),
            KernelType::kCommunication);
  EXPECT_EQ(classify_kernel(EventKind::kKernel, "multimem_all_reduce_kernel", Rules::kHta),
            KernelType::kComputation);
  // HTA's "^hip" rule makes a HIP memcpy communication.
  EXPECT_EQ(classify_kernel(EventKind::kMemcpy, "hipMemcpyDtoD", Rules::kHta), KernelType::kCommunication);
  EXPECT_EQ(classify_kernel(EventKind::kMemcpy, "hipMemcpyDtoD", Rules::kFixed), KernelType::kMemory);
}

TEST(TraceAnalysis, IdleTimePerStream) {
  RankReport r = run(false);
  ASSERT_EQ(r.idle_by_stream.size(), 2u);
  const StreamIdle& s7 = r.idle_by_stream[0];
  EXPECT_EQ(s7.stream, 7);
  EXPECT_DOUBLE_EQ(s7.host_wait_us, 2);     // B launched at 11, after A ended at 10
  EXPECT_DOUBLE_EQ(s7.kernel_wait_us, 5);   // C queued early, 5 us gap < 30
  EXPECT_DOUBLE_EQ(s7.other_us, 70);        // D queued early, 70 us gap
  const StreamIdle& s9 = r.idle_by_stream[1];
  EXPECT_DOUBLE_EQ(s9.kernel_wait_us, 25);  // no launch known, gap 25 < 30
}

TEST(TraceAnalysis, OverlapAndKernelTypes) {
  RankReport r = run(false);
  ASSERT_TRUE(r.comm_comp_overlap_pct);
  // Communication: [5,15) and [40,50) = 20 us; computation covers 8 of them.
  EXPECT_DOUBLE_EQ(*r.comm_comp_overlap_pct, 40);
  double both = 0, comm = 0;
  for (const auto& k : r.kernel_types) {
    if (k.type == "computation overlapping communication") both = k.us;
    if (k.type == "communication") comm = k.us;
  }
  EXPECT_DOUBLE_EQ(both, 8);
  EXPECT_DOUBLE_EQ(comm, 12);
}

TEST(TraceAnalysis, LaunchDelayKnowsHipOnlyWhenFixed) {
  RankReport fixed = run(false);
  // ends of launch calls: -3, 13, 7, 8 and hip 1; GPU starts 0, 12, 25, 100, 5.
  EXPECT_EQ(fixed.launch_delay.count, 5u);
  EXPECT_DOUBLE_EQ(fixed.launch_delay.max, 92);
  EXPECT_DOUBLE_EQ(fixed.launch_delay.p50, 4);  // 0 3 4 18 92
  EXPECT_EQ(run(true).launch_delay.count, 4u);  // HTA ignores hipLaunchKernel
}

TEST(TraceAnalysis, TopKernelsGroupByName) {
  RankReport r = run(false);
  ASSERT_FALSE(r.top_kernels.empty());
  EXPECT_EQ(r.top_kernels[0].name, "A");
  EXPECT_EQ(r.top_kernels[0].count, 2u);
  EXPECT_DOUBLE_EQ(r.top_kernels[0].total_us, 20);
}

TEST(TraceAnalysis, SyncEventsAreNotGpuWorkUnlessHta) {
  std::string j = R"({"traceEvents": [
   {"ph":"X","cat":"kernel","name":"k","ts":0,"dur":10,"args":{"stream":7,"correlation":1}},
   {"ph":"X","cat":"cuda_sync","name":"Context Sync","ts":1000,"dur":10,"args":{"stream":4294967295,"correlation":2}}]})";
  std::vector<Trace> ts;
  ts.push_back(load(j));
  EXPECT_DOUBLE_EQ(analyse_job(ts, {}).ranks[0].temporal.span_us, 10);
  Options hta;
  hta.compat_hta = true;
  EXPECT_DOUBLE_EQ(analyse_job(ts, hta).ranks[0].temporal.span_us, 1010);
}

TEST(TraceAnalysis, LastProfilerStepFilterOnlyInHtaMode) {
  std::string j = R"({"traceEvents": [
   {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":50},
   {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","ts":50,"dur":50},
   {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":1,"dur":1,"args":{"correlation":1}},
   {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":60,"dur":1,"args":{"correlation":2}},
   {"ph":"X","cat":"kernel","name":"k","ts":5,"dur":10,"args":{"stream":7,"correlation":1}},
   {"ph":"X","cat":"kernel","name":"k","ts":65,"dur":10,"args":{"stream":7,"correlation":2}}]})";
  std::vector<Trace> ts;
  ts.push_back(load(j));
  EXPECT_EQ(analyse_job(ts, {}).ranks[0].top_kernels[0].count, 2u);
  Options hta;
  hta.compat_hta = true;
  RankReport r = analyse_job(ts, hta).ranks[0];
  EXPECT_EQ(r.top_kernels[0].count, 1u);
  EXPECT_EQ(r.filtered_out, 3u);  // step 2, its launch and its kernel
}

TEST(TraceAnalysis, VerdictNamesHostBoundWithEvidence) {
  RankReport r;
  r.temporal = {80, 15, 5, 100};
  r.idle_by_stream = {{7, 60, 10, 10}};
  Verdict v = judge(r);
  EXPECT_EQ(v.bound, "host-bound");
  EXPECT_NE(v.evidence.find("80.0 %"), std::string::npos) << v.evidence;
  r.temporal = {5, 20, 75, 100};
  r.kernel_types = {{"communication", 60}, {"computation", 20}};
  EXPECT_EQ(judge(r).bound, "communication-bound");
  r.kernel_types = {{"computation", 90}};
  r.temporal = {5, 90, 5, 100};
  EXPECT_EQ(judge(r).bound, "compute-bound");
  r.kernel_types = {{"memory", 50}, {"computation", 40}};
  EXPECT_EQ(judge(r).bound, "memory-bound");
}

TEST(TraceAnalysis, StragglerComputesLongest) {
  std::vector<RankReport> ranks(4);
  for (int i = 0; i < 4; ++i) {
    ranks[i].rank = i;
    ranks[i].temporal.compute_us = i == 2 ? 150 : 100;
    ranks[i].kernel_types = {{"communication", i == 2 ? 10.0 : 60.0}};
  }
  auto s = find_stragglers(ranks);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].rank, 2);
}

// Two threads: on tid 1, step [0,100) holds op [10,60) which holds a launch
// [20,30) and an op [50,70) that outlives it by 10; a second step [200,210)
// with nothing inside. On tid 2 one op [15,45), overlapping tid 1's in time
// but nested in nothing. Self times: steps 40 + 10, op 50 - 10 - 10 = 30,
// launch 10, the overhanging op 20, tid 2's op 30.
const char* kCpu = R"([
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":0,"dur":100,"pid":7,"tid":1},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","ts":10,"dur":50,"pid":7,"tid":1},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","ts":20,"dur":10,"pid":7,"tid":1},
 {"ph":"X","cat":"cpu_op","name":"aten::add","ts":50,"dur":20,"pid":7,"tid":1},
 {"ph":"X","cat":"cpu_op","name":"aten::mm","ts":15,"dur":30,"pid":7,"tid":2},
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","ts":200,"dur":10,"pid":7,"tid":1}
])";

TEST(TraceAnalysis, CpuOpsSelfTimePerThread) {
  std::vector<Trace> ts;
  ts.push_back(load(kCpu));
  RankReport r = analyse_job(ts, {}).ranks.at(0);
  EXPECT_FALSE(r.gpu_timeline);
  EXPECT_EQ(r.cpu.events, 6u);
  EXPECT_EQ(r.cpu.threads, 2u);
  EXPECT_DOUBLE_EQ(r.cpu.span_us, 210);
  EXPECT_DOUBLE_EQ(r.cpu.busy_us, 140);  // 40 + 30 + 10 + 20 + 30 + 10
  ASSERT_EQ(r.top_cpu_ops.size(), 4u);
  EXPECT_EQ(r.top_cpu_ops[0].name, "aten::mm");
  EXPECT_EQ(r.top_cpu_ops[0].count, 2u);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[0].self_us, 60);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[0].total_us, 80);
  EXPECT_EQ(r.top_cpu_ops[1].name, "ProfilerStep#*");  // both steps in one row
  EXPECT_EQ(r.top_cpu_ops[1].count, 2u);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[1].self_us, 50);
  EXPECT_EQ(r.top_cpu_ops[2].name, "aten::add");
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[2].self_us, 20);
  EXPECT_EQ(r.top_cpu_ops[3].name, "cudaLaunchKernel");
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[3].self_us, 10);
  EXPECT_EQ(r.verdict.bound, "cpu-only");
  Options o;
  o.top_n = 1;
  EXPECT_EQ(analyse_job(ts, o).ranks.at(0).top_cpu_ops.size(), 1u);
}

TEST(TraceAnalysis, GpuTraceKeepsItsVerdictAndGetsCpuOps) {
  RankReport r = run(false);
  EXPECT_TRUE(r.gpu_timeline);
  EXPECT_EQ(r.verdict.bound, "compute-bound");  // the GPU verdict, as before CPU ops were read
  ASSERT_EQ(r.top_cpu_ops.size(), 2u);
  // 4 calls of 2 us on one thread (no pid/tid), [5,7) and [6,8) overlapping:
  // 7 us inside them, not 8.
  EXPECT_EQ(r.top_cpu_ops[0].name, "cudaLaunchKernel");
  EXPECT_EQ(r.top_cpu_ops[0].count, 4u);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[0].self_us, 7);
  EXPECT_DOUBLE_EQ(r.top_cpu_ops[0].total_us, 8);
  EXPECT_EQ(r.top_cpu_ops[1].name, "hipLaunchKernel");
}

TEST(TraceAnalysis, OnlySyncsOnTheGpuIsIdleNotCpuOnly) {
  std::vector<Trace> ts;
  ts.push_back(load(R"([{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":0,"dur":5},
    {"ph":"X","cat":"cuda_sync","name":"Context Sync","ts":1,"dur":2,"args":{"stream":4294967295}}])"));
  RankReport r = analyse_job(ts, {}).ranks.at(0);
  EXPECT_TRUE(r.gpu_timeline);
  EXPECT_EQ(r.verdict.bound, "idle");
}

TEST(TraceAnalysis, JsonHasTheDocumentedShape) {
  std::vector<Trace> ts;
  ts.push_back(load(kJob));
  std::string j = to_json(analyse_job(ts, {}));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  ASSERT_EQ(p.parse(j).get(doc), simdjson::SUCCESS) << j;
  simdjson::dom::element rank = doc["ranks"].at(0);
  for (const char* k : {"temporal", "idle_by_stream", "comm_comp_overlap_pct", "kernel_types",
                        "top_kernels", "launch_delay", "verdict", "memory", "queue_length",
                        "gpu_timeline", "cpu", "top_cpu_ops"}) {
    EXPECT_EQ(rank[k].error(), simdjson::SUCCESS) << k;
  }
  double idle = 0;
  ASSERT_EQ(rank["temporal"]["idle_us"].get(idle), simdjson::SUCCESS);
  EXPECT_DOUBLE_EQ(idle, 65);
  std::string_view bound;
  ASSERT_EQ(rank["verdict"]["bound"].get(bound), simdjson::SUCCESS);
  EXPECT_FALSE(bound.empty());
}

}  // namespace
}  // namespace gpulens::trace
