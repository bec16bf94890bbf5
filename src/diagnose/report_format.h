// Number and duration words shared by the report renderers (internal).
//
//   human(150'000) == "150s"; human(5'400'000) == "90m"; num(0.4567) == "0.46"
//   gpu_list({"0","1","2","3","5"}) == "0–3, 5"
//
// Thread-safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gpulens::diagnose {

inline std::string num(double v) {
  char b[32];
  if (std::fabs(v) < 0.005) v = 0;  // no "-0.00"
  if (std::fabs(v) >= 1e9) std::snprintf(b, sizeof b, "%.3g", v);
  else if (std::fabs(v) >= 100) std::snprintf(b, sizeof b, "%.0f", v);
  else std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

inline double hours(double seconds) { return seconds / 3600.0; }

// "6h", "25m", "2h30m", "45s": durations as people read them.
inline std::string human(int64_t ms) {
  const int64_t s = (ms + 500) / 1000;
  if (s < 120) return std::to_string(s) + "s";
  const int64_t m = (s + 30) / 60;
  if (m < 120) return std::to_string(m) + "m";
  const int64_t h = m / 60, rest = m % 60;
  return std::to_string(h) + "h" + (rest ? std::to_string(rest) + "m" : "");
}

// GPU indexes as ranges: consecutive numeric indexes joined with an en dash.
inline std::string gpu_list(const std::vector<std::string>& gpus) {
  std::string out;
  size_t i = 0;
  auto numeric = [](const std::string& s, long& v) {
    char* end = nullptr;
    v = std::strtol(s.c_str(), &end, 10);
    return !s.empty() && end != nullptr && *end == '\0';
  };
  while (i < gpus.size()) {
    long a = 0, b = 0;
    size_t j = i;
    if (numeric(gpus[i], a)) {
      while (j + 1 < gpus.size() && numeric(gpus[j + 1], b) && b == a + static_cast<long>(j + 1 - i)) ++j;
    }
    if (!out.empty()) out += ", ";
    out += gpus[i];
    if (j >= i + 2) out += "\u2013" + gpus[j];
    else if (j == i + 1) out += ", " + gpus[j];
    i = j + 1;
  }
  return out;
}

}  // namespace gpulens::diagnose
