// XID event thread; see xid.h.
#include "sources/nvml/xid.h"

#include <chrono>

namespace gpulens {

bool XidWatcher::start() {
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
    int gpu = -1;
    for (const auto& [index, dev] : gpus_) {
      if (dev == ev.device) gpu = index;
    }
    if (gpu < 0) continue;
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::lock_guard lock(mu_);
    PerGpu& s = state_[gpu];
    auto [it, fresh] = s.counts.try_emplace(ev.eventData);
    if (fresh) it->second.first = "xid=\"" + std::to_string(ev.eventData) + "\"";
    ++it->second.second;
    s.last = ev.eventData;
    s.last_time = now;
    s.any = true;
  }
}

void XidWatcher::fill(Frame& frame) const {
  std::lock_guard lock(mu_);
  for (const auto& [gpu, s] : state_) {
    for (const auto& [xid, c] : s.counts) frame.set(FieldId::kGpuXidErrors, gpu, c.first, static_cast<double>(c.second));
    if (s.any) {
      frame.set(FieldId::kGpuLastXid, gpu, static_cast<double>(s.last));
      frame.set(FieldId::kGpuLastXidTime, gpu, s.last_time);
    }
  }
}

uint64_t XidWatcher::count(int gpu, unsigned long long xid) const {
  std::lock_guard lock(mu_);
  auto g = state_.find(gpu);
  if (g == state_.end()) return 0;
  auto c = g->second.counts.find(xid);
  return c == g->second.counts.end() ? 0 : c->second.second;
}

}  // namespace gpulens
