// Test helper: label sets written the way a test reads best, as exposition
// text (`engine="vllm",le="0.1"`, a histogram part as a leading bare word
// `sum,engine="vllm"`), turned into the Labels and HistogramPart the
// registry takes. Tests only: the agent itself never parses label text.
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

inline TextKey key_from_text(std::string_view text) {
  TextKey out;
  size_t i = 0;
  while (i < text.size()) {
    const size_t stop = text.find_first_of("=,", i);
    if (stop == std::string_view::npos || text[stop] == ',') {  // a bare word: the histogram part
      const std::string_view word = text.substr(i, stop == std::string_view::npos ? text.size() - i : stop - i);
      if (word == "sum") out.part = HistogramPart::kSum;
      if (word == "count") out.part = HistogramPart::kCount;
      i = stop == std::string_view::npos ? text.size() : stop + 1;
      continue;
    }
    const std::string_view name = text.substr(i, stop - i);
    std::string value;
    size_t j = stop + 2;  // past ="
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value += text[j] == 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    out.labels.set(name, value);
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return out;
}

inline Labels labels_from_text(std::string_view text) { return key_from_text(text).labels; }

// frame.set() with the series written as text.
inline void set_text(Frame& f, FieldId field, int gpu, std::string_view text, double v) {
  const TextKey k = key_from_text(text);
  f.set(field, gpu, k.part, k.labels, v);
}

}  // namespace gpulens::testing
