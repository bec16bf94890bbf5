// Frame: the values one source produced in one collection.
//
// A source fills a frame with set(); anything it does not set is absent in
// the exported data ("unsupported is absent, not zero"). Histograms are
// filled bucket by bucket with extra labels le="<bound>" in increasing order
// and the two pseudo-extras "sum" and "count". Fields left out by the
// registry's field selection are not set.
//
//   frame.clear(now_ms);
//   frame.set(FieldId::kGpuPower, 0, 412.5);
//   frame.set(FieldId::kGpuNvlinkTxBytes, 0, "link=\"3\"", 1.2e12);
//
// Thread-safety: one frame belongs to one collecting thread.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "model/series.h"

namespace gpulens {

class Frame {
 public:
  struct Value {
    uint32_t slot;
    double value;
  };

  explicit Frame(SeriesRegistry& registry) : registry_(&registry) {}

  void clear(int64_t time_ms) {
    values_.clear();
    time_ms_ = time_ms;
  }
  // A field the registry does not collect (field selection) is dropped
  // here, before it has a series.
  void set(FieldId f, int gpu, double v) {
    if (registry_->collects(f)) values_.push_back({registry_->slot(f, gpu), v});
  }
  void set(FieldId f, int gpu, std::string_view extra, double v) {
    if (registry_->collects(f)) values_.push_back({registry_->slot(f, gpu, extra), v});
  }
  // A value for a slot taken from an earlier frame (a cached reading).
  void set_slot(uint32_t slot, double v) { values_.push_back({slot, v}); }
  void set_node(FieldId f, double v) { set(f, kNodeEntity, v); }
  void set_node(FieldId f, std::string_view extra, double v) { set(f, kNodeEntity, extra, v); }

  int64_t time_ms() const { return time_ms_; }
  std::span<const Value> values() const { return values_; }
  SeriesRegistry& registry() const { return *registry_; }

 private:
  SeriesRegistry* registry_;
  std::vector<Value> values_;
  int64_t time_ms_ = 0;
};

}  // namespace gpulens
