// ASCII-only text helpers for protocol tokens (HTTP header names and values,
// YAML enumerations): no locale, no allocation.
//
//   ascii_iequals("Content-Length", "content-length") == true
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

namespace gpulens {

// Equal ignoring the case of A-Z only (what HTTP means by case-insensitive).
inline bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace gpulens
