// The per-rank analyses of a profiler trace, after HolisticTraceAnalysis:
// temporal breakdown, idle time per stream, kernel types (overlap-aware),
// communication/computation overlap, top kernels, launch delay, memory copy
// time by direction and launch-queue length; the top CPU operators by self
// time (the whole analysis of a trace without a GPU timeline); plus a
// verdict per rank and the stragglers of a job.
//
//   std::vector<Trace> ranks = ...;            // one per file
//   JobReport r = analyse_job(ranks, {});      // Options{.compat_hta = true}
//   r.ranks[0].temporal.idle_us
//
// Two sets of definitions:
//  * default (fixed): every event of the trace; GPU busy time counts
//    kernels, copies and sets only; collectives recognised by name (NCCL,
//    RCCL, custom all-reduce); CUDA, driver and HIP launch calls; idle gaps
//    never negative.
//  * compat_hta: HTA's definitions on exact float timestamps (HTA with
//    HTA_DISABLE_NS_ROUNDING=1): its last-profiler-step filter, its name
//    patterns, everything with a stream arg counted as GPU work, and its
//    integer truncation of kernel-type segments.
// All times are microseconds. Thread-safety: pure functions of their inputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/trace/trace.h"

namespace gpulens::trace {

struct Options {
  bool compat_hta = false;
  double kernel_wait_us = 30;  // gaps below this between kernels are launch overhead
  size_t top_n = 10;
};

struct Temporal {
  double idle_us = 0, compute_us = 0, non_compute_us = 0, span_us = 0;
};

struct StreamIdle {
  int stream = 0;
  double host_wait_us = 0, kernel_wait_us = 0, other_us = 0;
};

// Time in each combination of kernel types, e.g. "computation" alone or
// "computation overlapping communication".
struct KernelTypeTime {
  std::string type;
  double us = 0;
};

struct TopKernel {
  std::string name;
  std::string type;  // computation, communication, memory
  uint64_t count = 0;
  double total_us = 0;
};

struct Distribution {
  uint64_t count = 0;
  double mean = 0, p50 = 0, p95 = 0, max = 0;
};

struct MemoryTime {
  std::string direction;  // "Memcpy HtoD", "Memset", ...
  uint64_t count = 0;
  double total_us = 0;
  int64_t bytes = 0;      // sum of args.bytes where present
};

struct QueueLength {
  int stream = 0;
  double max = 0, mean = 0;  // over the points where the length changes (HTA's summary)
};

// One CPU-side name (operator, annotation, runtime call) over the trace:
// "self" is its time minus that of the events nested in it on its thread.
struct CpuOp {
  std::string name;   // ProfilerStep#N annotations are summed as "ProfilerStep#*"
  uint64_t count = 0;
  double self_us = 0, total_us = 0;
};

// The CPU side of a trace: operators, annotations and runtime calls (events
// without a stream). A trace from torch.profiler with CPU activities only,
// or from the autograd profiler's own export, has only this side.
struct CpuSummary {
  uint64_t events = 0;
  uint64_t threads = 0;        // threads with CPU events
  uint64_t uncategorised = 0;  // of them without a category (autograd profiler export)
  double busy_us = 0;          // sum of self times: time inside some event, summed over threads
  double span_us = 0;          // first CPU event start to last end
};

struct Verdict {
  std::string bound;     // host-bound, communication-bound, memory-bound, compute-bound, idle,
                         // cpu-only (no GPU timeline in the trace)
  std::string evidence;  // one sentence with the numbers
};

struct RankReport {
  int rank = 0;
  std::string path;
  uint64_t events = 0;           // events analysed (after any filter)
  SkipCounts skipped;
  uint64_t filtered_out = 0;     // events dropped by the last-profiler-step filter
  Temporal temporal;
  std::vector<StreamIdle> idle_by_stream;
  std::vector<KernelTypeTime> kernel_types;
  std::optional<double> comm_comp_overlap_pct;  // absent without communication kernels
  std::vector<TopKernel> top_kernels;
  Distribution launch_delay;     // us from the end of the launch call to the start on the GPU
  std::vector<MemoryTime> memory;
  std::vector<QueueLength> queue_length;
  bool gpu_timeline = false;     // the trace has GPU events (kernels, copies, anything on a stream)
  CpuSummary cpu;
  std::vector<CpuOp> top_cpu_ops;  // by self time, Options::top_n of them
  Verdict verdict;
};

struct Straggler {
  int rank = 0;
  std::string reason;
};

struct JobReport {
  std::vector<RankReport> ranks;
  std::vector<Straggler> stragglers;
  bool compat_hta = false;
};

RankReport analyse_rank(const Trace& t, const Options& opts, bool apply_step_filter);
JobReport analyse_job(const std::vector<Trace>& traces, const Options& opts);

// The verdict rules, on a finished report (see verdict.cpp).
Verdict judge(const RankReport& r);
std::vector<Straggler> find_stragglers(const std::vector<RankReport>& ranks);

}  // namespace gpulens::trace
