// Frame: the values one source produced in one collection.
//
// A source fills a frame with set(); anything it does not set is absent in
// the exported data ("unsupported is absent, not zero"). Labels are data
// (model/labels.h); a source builds each label set once and passes the same
// one every collection, so a set() is one hash lookup and no allocation.
// Histograms are filled bucket by bucket with a label le="<bound>" in
// increasing order, then their HistogramPart::kSum and kCount. Fields left
// out by the registry's field selection are not set.
//
//   frame.clear(now_ms);
//   frame.set(FieldId::kGpuPower, 0, 412.5);
//   static const Labels kLink3{{"link", "3"}};
//   frame.set(FieldId::kGpuNvlinkTxBytes, 0, kLink3, 1.2e12);
//   frame.set_node(FieldId::kServingLatency, HistogramPart::kSum, {}, 12.5);
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
  void set(FieldId f, int gpu, const Labels& extra, double v) {
    if (registry_->collects(f)) values_.push_back({registry_->slot(f, gpu, extra), v});
  }
  void set(FieldId f, int gpu, HistogramPart part, const Labels& extra, double v) {
    if (registry_->collects(f)) values_.push_back({registry_->slot(f, gpu, extra, part), v});
  }
  // A value for a slot taken from an earlier frame (a cached reading).
  void set_slot(uint32_t slot, double v) { values_.push_back({slot, v}); }
  void set_node(FieldId f, double v) { set(f, kNodeEntity, v); }
  void set_node(FieldId f, const Labels& extra, double v) { set(f, kNodeEntity, extra, v); }
  void set_node(FieldId f, HistogramPart part, const Labels& extra, double v) { set(f, kNodeEntity, part, extra, v); }

  int64_t time_ms() const { return time_ms_; }
  std::span<const Value> values() const { return values_; }
  SeriesRegistry& registry() const { return *registry_; }

 private:
  SeriesRegistry* registry_;
  std::vector<Value> values_;
  int64_t time_ms_ = 0;
};

}  // namespace gpulens
