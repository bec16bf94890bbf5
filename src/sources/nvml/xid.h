// XidWatcher: XID errors through the NVML event API, on its own thread.
//
// The watcher registers every GPU for nvmlEventTypeXidCriticalError (only
// where the GPU says it supports it: a register call with one unsupported
// bit registers nothing), then waits on the event set with a short timeout
// so that stop() returns within that timeout. Every event is recorded in
// the agent's XidLedger (model/xid_ledger.h) under the GPU's PCI bus id,
// where the kernel-log source records the same XIDs: the ledger counts by
// (GPU, XID code), pairs an XID both paths saw into one, and keeps the last
// code and its time, so a burst of XIDs between two scrapes is never
// reduced to "last value only". fill() writes the ledger's counts of the
// watched GPUs, kernel-log-only XIDs (79) included.
//
//   XidWatcher w(api, {{0, dev0}, {1, dev1}}, {"00000000:18:00.0", "00000000:3B:00.0"}, ledger);
//   w.start();              // false when the event API is missing
//   w.fill(frame);          // gpu_xid_errors_total{xid="79"}, gpu_last_xid, ...
//   w.stop();               // joins within wait_ms
//
// Thread-safety: fill() and the counts may be read from any thread while
// the watcher runs; start/stop from the owner only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/frame.h"
#include "model/xid_ledger.h"
#include "sources/nvml/loader.h"

namespace gpulens {

class XidWatcher {
 public:
  // `buses[i]` is the PCI bus id of `gpus[i]`; the GPUs are claimed in the
  // ledger (the kernel-log source leaves their XID series to this watcher).
  XidWatcher(const NvmlApi& api, std::vector<std::pair<int, nvmlDevice_t>> gpus, std::vector<std::string> buses,
             std::shared_ptr<XidLedger> ledger, unsigned wait_ms = 200)
      : api_(api), gpus_(std::move(gpus)), buses_(std::move(buses)), ledger_(std::move(ledger)), wait_ms_(wait_ms) {
    // A GPU without a bus id keys by its index.
    buses_.resize(gpus_.size());
    for (size_t i = 0; i < gpus_.size(); ++i) {
      if (buses_[i].empty()) buses_[i] = "nvml-gpu-" + std::to_string(gpus_[i].first);
    }
  }
  ~XidWatcher() { stop(); }
  XidWatcher(const XidWatcher&) = delete;
  XidWatcher& operator=(const XidWatcher&) = delete;

  // False when the event API is missing or no GPU supports XID events;
  // fill() works either way (from the ledger).
  bool start();
  void stop();
  void fill(Frame& frame) const;
  uint64_t count(int gpu, unsigned long long xid) const;

 private:
  void run();

  const NvmlApi& api_;
  std::vector<std::pair<int, nvmlDevice_t>> gpus_;
  std::vector<std::string> buses_;
  std::shared_ptr<XidLedger> ledger_;
  unsigned wait_ms_;
  nvmlEventSet_t set_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
};

}  // namespace gpulens
