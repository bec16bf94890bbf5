// A series' labels as a JSON object, for the JSON API:
// {"reason":"sw_thermal"}, {} when it has none. Names are label names (no
// escaping needed, but escaped all the same); values are escaped as JSON
// strings, never as exposition text.
#pragma once

#include <string>

#include "model/labels.h"
#include "model/series.h"
#include "util/json.h"

namespace gpulens {

inline void append_labels_json(std::string& out, const Labels& labels) {
  out += '{';
  bool first = true;
  for (const Label& l : labels) {
    if (!first) out += ',';
    first = false;
    append_json_string(out, l.name);
    out += ':';
    append_json_string(out, l.value);
  }
  out += '}';
}

// A histogram part as the JSON API names it; "" for a series that is not one.
inline std::string_view histogram_part_json(HistogramPart part) {
  switch (part) {
    case HistogramPart::kBucket: return "bucket";
    case HistogramPart::kSum: return "sum";
    case HistogramPart::kCount: return "count";
    case HistogramPart::kNone: break;
  }
  return {};
}

}  // namespace gpulens
