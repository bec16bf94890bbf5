// The analysis of a `stacks` capture (gpulens_client's sampled Python
// stacks): the hottest frames per thread and whether the main thread waits
// on the DataLoader or on a device sync (docs/profiling.md).
//
//   auto a = analyse_stacks(body);          // the client's JSON upload
//   if (!a) error(a.status().message());
//   std::cout << stacks_text(*a);           // or stacks_json(*a, "{...capture...}")
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace gpulens {

struct StackFrame {
  std::string function, file;
  int64_t line = 0;
  double self = 0, total = 0;  // shares of the thread's samples
};

struct StackThread {
  std::string name;
  bool main = false;
  int64_t samples = 0;
  std::vector<StackFrame> frames;  // by total share, as the client sent them
};

struct StacksAnalysis {
  double duration_s = 0, hz = 0;
  int64_t rounds = 0;
  std::vector<StackThread> threads;
  // Of the main thread's samples: a frame of torch/utils/data/dataloader.py
  // on the stack; torch.cuda's synchronize on the stack.
  double dataloader_wait = 0, device_sync = 0;
  std::string verdict;  // "dataloader", "device_sync" or "" (neither holds 20 % of the samples)
  std::string raw;      // the client's JSON, as it came
};

Result<StacksAnalysis> analyse_stacks(std::string_view json);
std::string stacks_text(const StacksAnalysis& a, size_t top = 10);
// {"capture": {...}, "analysis": {...}, "stacks": <the client's JSON>}
std::string stacks_json(const StacksAnalysis& a, std::string_view capture_json);

}  // namespace gpulens
