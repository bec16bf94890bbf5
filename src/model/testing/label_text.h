// Test helper: label sets written the way a test reads best, as exposition
// text (`engine="vllm",le="0.1"`, a histogram part as a leading bare word
// `sum,engine="vllm"`), turned into the Labels and HistogramPart the
// registry takes, through the reader of the JSON API's keys (series.h).
//
//   const TextKey k = key_from_text("sum,engine=\"vllm\"");
//   reg.slot(FieldId::kServingLatency, kNodeEntity, k.labels, k.part);
#pragma once

#include <string>
#include <string_view>

#include "model/frame.h"
#include "model/labels.h"
#include "model/series.h"

namespace gpulens::testing {

struct TextKey {
  Labels labels;
  HistogramPart part = HistogramPart::kNone;
};

// The text read as model/series.h's key_from_text() reads the JSON API's
// keys; a bucket's part is left kNone (the registry makes it kBucket).
inline TextKey key_from_text(std::string_view text) {
  KeyText k = gpulens::key_from_text("x{" + std::string(text) + "}");
  return {std::move(k.labels), k.part == HistogramPart::kBucket ? HistogramPart::kNone : k.part};
}

inline Labels labels_from_text(std::string_view text) { return key_from_text(text).labels; }

// frame.set() with the series written as text.
inline void set_text(Frame& f, FieldId field, int gpu, std::string_view text, double v) {
  const TextKey k = key_from_text(text);
  f.set(field, gpu, k.part, k.labels, v);
}

}  // namespace gpulens::testing
