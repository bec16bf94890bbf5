// UTF-8 well-formedness (RFC 3629): the length of the sequence that starts
// at a position, or 0 where the bytes are not UTF-8 (a stray continuation
// byte, an overlong form, a surrogate, a code point above U+10FFFF, a
// sequence cut short). The JSON and terminal sinks replace what this
// refuses with U+FFFD.
//
//   utf8_sequence("é", 0) == 2;  utf8_sequence("\xC0\xAF", 0) == 0
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpulens {

// The U+FFFD replacement character, encoded.
inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// Length (1..4) of the well-formed sequence at s[i], 0 if none; `cp` gets
// the code point.
inline size_t utf8_sequence(std::string_view s, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  size_t n;
  uint32_t min;
  if (c >= 0xC2 && c <= 0xDF) n = 2, min = 0x80, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF) n = 3, min = 0x800, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4) n = 4, min = 0x10000, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

inline size_t utf8_sequence(std::string_view s, size_t i) {
  uint32_t cp = 0;
  return utf8_sequence(s, i, cp);
}

inline bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_sequence(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

}  // namespace gpulens
