// LiveStore: replace a source's values atomically with each frame.
#include "store/live.h"

namespace gpulens {

int LiveStore::add_source(std::string name, bool simulated, bool fills_gaps) {
  std::lock_guard lock(mu_);
  sources_.push_back({std::move(name), false, simulated, "not collected yet", 0, 0});
  owned_.emplace_back();
  fills_gaps_.push_back(fills_gaps ? 1 : 0);
  return static_cast<int>(sources_.size() - 1);
}

void LiveStore::grow(size_t n) {
  if (n <= value_.size()) return;
  value_.resize(n, 0.0);
  time_ms_.resize(n, 0);
  present_.resize(n, 0);
  owner_.resize(n, -1);
}

void LiveStore::publish(int source, const Frame& frame) {
  std::lock_guard lock(mu_);
  auto& owned = owned_[source];
  for (uint32_t s : owned) {
    if (owner_[s] != source) continue;  // taken over by another source
    present_count_ -= present_[s];
    present_[s] = 0;
    owner_[s] = -1;
  }
  owned.clear();
  const bool gaps_only = fills_gaps_[source] != 0;
  for (const auto& v : frame.values()) {
    grow(v.slot + 1);
    if (gaps_only && present_[v.slot] && owner_[v.slot] != source) continue;
    owner_[v.slot] = source;
    present_count_ += !present_[v.slot];
    value_[v.slot] = v.value;
    time_ms_[v.slot] = frame.time_ms();
    present_[v.slot] = 1;
    owned.push_back(v.slot);
  }
  ++generation_;
}

void LiveStore::set_status(int source, bool up, std::string error, double duration_seconds,
                           int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto& s = sources_[source];
  s.up = up;
  s.last_error = std::move(error);
  s.duration_seconds = duration_seconds;
  if (up) s.last_success_ms = now_ms;
  ++generation_;
}

}  // namespace gpulens
