// XidWatcher: XID errors through the NVML event API, on its own thread.
//
// The watcher registers every GPU for nvmlEventTypeXidCriticalError (only
// where the GPU says it supports it: a register call with one unsupported
// bit registers nothing), then waits on the event set with a short timeout
// so that stop() returns within that timeout. Every event is counted by
// (GPU, XID code); the last code and its time are kept too, so a burst of
// XIDs between two scrapes is never reduced to "last value only".
//
//   XidWatcher w(api, {{0, dev0}, {1, dev1}});
//   w.start();              // false when the event API is missing
//   w.fill(frame);          // gpu_xid_errors_total{xid="79"}, gpu_last_xid, ...
//   w.stop();               // joins within wait_ms
//
// Thread-safety: fill() and the counts may be read from any thread while
// the watcher runs; start/stop from the owner only.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/frame.h"
#include "sources/nvml/loader.h"

namespace gpulens {

class XidWatcher {
 public:
  XidWatcher(const NvmlApi& api, std::vector<std::pair<int, nvmlDevice_t>> gpus, unsigned wait_ms = 200)
      : api_(api), gpus_(std::move(gpus)), wait_ms_(wait_ms) {}
  ~XidWatcher() { stop(); }
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  bool start();
  void stop();
  void fill(Frame& frame) const;
  uint64_t count(int gpu, unsigned long long xid) const;

 private:
  struct PerGpu {
    std::map<unsigned long long, std::pair<std::string, uint64_t>> counts;  // xid -> (extra, n)
    unsigned long long last = 0;
    double last_time = 0;  // unix seconds
    bool any = false;
  };
  void run();

  const NvmlApi& api_;
  std::vector<std::pair<int, nvmlDevice_t>> gpus_;
  unsigned wait_ms_;
  nvmlEventSet_t set_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<int, PerGpu> state_;
};

}  // namespace gpulens
