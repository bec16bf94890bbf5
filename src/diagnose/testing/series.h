// Test support: the series the diagnosis tests feed the signal builder and
// the rules, a constant, a step from one value to another and a counter
// growing at a rate, `n` points one per `step` milliseconds from 0.
// Header-only. A test with its own length wraps them once:
//
//   Series flat(double v) { return testing::flat(v, kPoints, kStep); }
#pragma once

#include <cstdint>

#include "diagnose/signals.h"

namespace gpulens::diagnose::testing {

inline Series flat(double v, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, v});
  return s;
}

// `before` until point `at`, `after` from there on.
inline Series steps(double before, double after, int at, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, i < at ? before : after});
  return s;
}

// Cumulative counts growing at `rate` per second.
inline Series ramp(double rate, int n = 3, int64_t step = 15000) {
  Series s;
  for (int i = 0; i < n; ++i) s.push_back({i * step, rate * static_cast<double>(i * step) / 1000.0});
  return s;
}

}  // namespace gpulens::diagnose::testing
