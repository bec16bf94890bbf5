// Test support: the series the mapping and replay tests feed the signal
// builder, a constant and a counter growing at a rate, one point per `step`
// milliseconds from 0. Header-only.
#pragma once

#include <cstdint>

#include "diagnose/signals.h"

namespace gpulens::diagnose::testing {

inline Series flat(double v, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, v});
  return s;
}

// Cumulative counts growing at `rate` per second.
inline Series ramp(double rate, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, rate * static_cast<double>(i * step) / 1000.0});
  return s;
}

}  // namespace gpulens::diagnose::testing
