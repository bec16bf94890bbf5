// XID event thread; see xid.h.
#include "sources/nvml/xid.h"

#include <chrono>

namespace gpulens {

bool XidWatcher::start() {
  // Claimed even when the event API is missing: fill() still writes the
  // XIDs the kernel log records for these GPUs.
  for (const std::string& bus : buses_) ledger_->claim(bus);
  if (!api_.event_set_create || !api_.register_events || !api_.event_set_wait || !api_.event_set_free) return false;
  if (api_.event_set_create(&set_) != NVML_SUCCESS) return false;
  int registered = 0;
  for (const auto& [index, dev] : gpus_) {
    unsigned long long supported = nvmlEventTypeXidCriticalError;
    if (api_.get_supported_events != nullptr && api_.get_supported_events(dev, &supported) != NVML_SUCCESS) continue;
    if ((supported & nvmlEventTypeXidCriticalError) == 0) continue;
    if (api_.register_events(dev, nvmlEventTypeXidCriticalError, set_) == NVML_SUCCESS) ++registered;
  }
  if (registered == 0) {
    api_.event_set_free(set_);
    set_ = nullptr;
    return false;
  }
  stop_ = false;
  thread_ = std::thread([this] { run(); });
  return true;
}

void XidWatcher::stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (set_ != nullptr) {
    api_.event_set_free(set_);
    set_ = nullptr;
  }
}

void XidWatcher::run() {
  while (!stop_) {
    nvmlEventData_t ev{};
    nvmlReturn_t rc = api_.event_set_wait(set_, &ev, wait_ms_);
    if (rc == NVML_ERROR_TIMEOUT) continue;
    if (rc != NVML_SUCCESS) {
      // GPU_IS_LOST or another failure: do not spin; the next wait may work.
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms_));
      continue;
    }
    if ((ev.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    int k = -1;
    for (size_t i = 0; i < gpus_.size(); ++i) {
      if (gpus_[i].second == ev.device) k = static_cast<int>(i);
    }
    if (k < 0) continue;
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    ledger_->record(buses_[static_cast<size_t>(k)], static_cast<long long>(ev.eventData), now, XidPath::kNvml);
  }
}

void XidWatcher::fill(Frame& frame) const {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (auto g = ledger_->get(buses_[i])) XidLedger::fill(frame, gpus_[i].first, *g);
  }
}

uint64_t XidWatcher::count(int gpu, unsigned long long xid) const {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    if (gpus_[i].first != gpu) continue;
    auto g = ledger_->get(buses_[i]);
    if (!g) return 0;
    auto c = g->counts.find(static_cast<long long>(xid));
    return c == g->counts.end() ? 0 : c->second;
  }
  return 0;
}

}  // namespace gpulens
