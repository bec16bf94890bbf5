// What a GPU event is for: the kernel-type rules, ours and HTA's.
//
//   classify_kernel(EventKind::kKernel, "ncclDevKernel_Generic", Rules::kFixed)
//       == KernelType::kCommunication
//
// Rules::kHta reproduces HolisticTraceAnalysis' name patterns exactly,
// including their faults: every name starting with "hip" counts as
// communication, custom all-reduce kernels (multimem_all_reduce_kernel,
// cross_device_reduce_*) count as computation, and sync events drawn on the
// GPU are typed by name. Rules::kFixed types memcpy/memset by category,
// recognises NCCL/RCCL/HCCL and custom collective kernels by name, and never
// types a sync event as work.
#pragma once

#include <string_view>

#include "analyze/trace/trace.h"

namespace gpulens::trace {

enum class KernelType : uint8_t { kComputation, kCommunication, kMemory, kOther };
enum class Rules : uint8_t { kFixed, kHta };

std::string_view to_string(KernelType t);

KernelType classify_kernel(EventKind kind, std::string_view name, Rules rules);

// True for CPU calls that enqueue work on a stream (kernel launches, async
// copies and sets) under the given rules; HTA's list lacks the HIP and
// driver-API launches for its launch-delay statistics.
bool is_launch_call(std::string_view name, Rules rules);

// HTA's list of runtime calls that feed the queue-length counter.
bool is_queue_launch_call(std::string_view name);

// "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memset", ... from a memory
// event's name (HTA's convention: the first 11 characters of a memcpy name).
std::string_view memory_direction(std::string_view name);

// A ProfilerStep#N annotation.
bool is_profiler_step(std::string_view name);

}  // namespace gpulens::trace
