// Kernel-type rules. HTA's are regular expressions; they are written out here
// as the prefix/substring tests they amount to, which is faster and keeps
// <regex> out of the per-event loop.
#include "analyze/trace/classify.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace gpulens::trace {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

bool has_nocase(std::string_view s, std::string_view p) {
  auto it = std::search(s.begin(), s.end(), p.begin(), p.end(), [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  });
  return it != s.end();
}

// HTA: (^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)
bool hta_comm(std::string_view n) {
  return starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || has(n, "ncclKernel");
}
// HTA: (^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)
bool hta_memory(std::string_view n) {
  return starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") ||
         starts(n, "hipMemset") || starts(n, "dma");
}
// HTA's compute pattern is the negation of a list of non-compute names.
bool hta_compute(std::string_view n) {
  static constexpr std::array<std::string_view, 10> kPrefixes = {
      "nccl", "Stream Wait Event", "runFunction", "hip", "job_exe", "packet", "pe_exe",
      "cpum_exe_subgraph", "hccl", "collective_subgraph_execution"};
  for (auto p : kPrefixes)
    if (starts(n, p)) return false;
  if (has(n, "Memcpy") || has(n, "Memset") || has(n, "dma") || has(n, "Sync")) return false;
  if (starts(n, "cuda") && has(n.substr(4), "LaunchKernel")) return false;
  return true;
}

// Collective kernels: NCCL/RCCL/HCCL and the custom all-reduce kernels of
// vLLM, SGLang and TensorRT-LLM (lower-case substrings).
bool fixed_comm(std::string_view n) {
  static constexpr std::array<std::string_view, 13> kMarks = {
      "nccl", "rccl", "hccl", "all_reduce", "allreduce", "all_gather", "allgather",
      "reduce_scatter", "reducescatter", "alltoall", "all_to_all", "cross_device_reduce",
      "multimem"};
  for (auto m : kMarks)
    if (has_nocase(n, m)) return true;
  return false;
}

}  // namespace

std::string_view to_string(KernelType t) {
  switch (t) {
    case KernelType::kComputation: return "computation";
    case KernelType::kCommunication: return "communication";
    case KernelType::kMemory: return "memory";
    case KernelType::kOther: return "other";
  }
  return "other";
}

KernelType classify_kernel(EventKind kind, std::string_view name, Rules rules) {
  if (rules == Rules::kHta) {
    if (hta_comm(name)) return KernelType::kCommunication;
    if (hta_memory(name)) return KernelType::kMemory;
    if (hta_compute(name)) return KernelType::kComputation;
    return KernelType::kOther;
  }
  switch (kind) {
    case EventKind::kMemcpy:
    case EventKind::kMemset: return KernelType::kMemory;
    case EventKind::kKernel:
      return fixed_comm(name) ? KernelType::kCommunication : KernelType::kComputation;
    default: return KernelType::kOther;
  }
}

bool is_launch_call(std::string_view n, Rules rules) {
  if (rules == Rules::kHta) {
    return n == "cudaLaunchKernel" || n == "cudaLaunchKernelExC" || n == "cudaMemcpyAsync" ||
           n == "cudaMemsetAsync";
  }
  static constexpr std::array<std::string_view, 18> kCalls = {
      "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel",
      "cuLaunchKernel", "cuLaunchKernelEx", "cudaMemcpyAsync", "cudaMemsetAsync",
      "cudaMemcpy2DAsync", "cudaMemcpyPeerAsync", "hipLaunchKernel", "hipExtLaunchKernel",
      "hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipLaunchCooperativeKernel",
      "hipMemcpyAsync", "hipMemsetAsync", "hipMemcpyWithStream", "hipMemcpy2DAsync"};
  return std::find(kCalls.begin(), kCalls.end(), n) != kCalls.end();
}

bool is_queue_launch_call(std::string_view n) {
  static constexpr std::array<std::string_view, 11> kCalls = {
      "cudaMemsetAsync", "cudaMemcpyAsync", "cudaLaunchKernel", "cudaLaunchKernelExC",
      "cuLaunchKernel", "cuLaunchKernelEx", "hipLaunchKernel", "hipExtModuleLaunchKernel",
      "hipMemcpyAsync", "hipMemsetAsync", "hipMemcpyWithStream"};
  return std::find(kCalls.begin(), kCalls.end(), n) != kCalls.end();
}

std::string_view memory_direction(std::string_view name) {
  if (starts(name, "Memset")) return "Memset";
  if (!starts(name, "Memcpy")) return "Memcpy Unknown";
  return name.substr(0, 11);
}

bool is_profiler_step(std::string_view name) {
  if (!starts(name, "ProfilerStep#") || name.size() == 13) return false;
  return std::isdigit(static_cast<unsigned char>(name[13])) != 0;
}

}  // namespace gpulens::trace
