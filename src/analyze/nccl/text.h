// Small string_view helpers for the NCCL log analyser's hot path.
//
// The analyser reads gigabytes of text; these helpers never allocate and never
// use regular expressions. Numbers are parsed with overflow checks so that a
// damaged line ("rank 99999999999999999999") yields "no number", not a wrapped
// value.
//
//   std::string_view s = "rank 3 nranks 8";
//   auto n = after_number(s, "nranks ");   // 8
#pragma once

#include <cstring>

#include <cstdint>
#include <optional>
#include <string_view>

namespace gpulens::nccl {

// Position of needle in hay (npos if absent); faster than
// std::string_view::find and than glibc's memmem for the short needles and
// lines used here (measured: docs/PERFORMANCE.md, NCCL log analyser).
inline size_t find_in(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return 0;
  if (hay.size() < needle.size()) return std::string_view::npos;  // also: no null data to memchr
  // memchr for the first byte, then compare: on log lines (short haystacks,
  // short needles) this beats memmem's per-call set-up; the needles are
  // constants of a few bytes, so a haystack full of first bytes costs at most
  // needle-length times more.
  const char* p = hay.data();
  const char* const last = hay.data() + (hay.size() - needle.size());
  while (p <= last) {
    p = static_cast<const char*>(std::memchr(p, needle[0], static_cast<size_t>(last - p) + 1));
    if (p == nullptr) return std::string_view::npos;
    if (std::memcmp(p + 1, needle.data() + 1, needle.size() - 1) == 0) return static_cast<size_t>(p - hay.data());
    ++p;
  }
  return std::string_view::npos;
}

inline bool contains(std::string_view hay, std::string_view needle) {
  return find_in(hay, needle) != std::string_view::npos;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

inline std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

// Parses the decimal digits at the start of s (after optional spaces); the
// value must fit in 0..limit. Advances s past the digits on success. Inline:
// it runs several times on most lines (device, pid, ranks, channels).
inline std::optional<std::int64_t> take_number(std::string_view& s, std::int64_t limit = INT32_MAX) {
  const char* p = s.data();
  const char* const end = p + s.size();
  while (p != end && is_space(*p)) ++p;
  const char* const first = p;
  std::int64_t v = 0;
  while (p != end && is_digit(*p)) {
    v = v * 10 + (*p - '0');
    if (v > limit) return std::nullopt;
    ++p;
  }
  if (p == first) return std::nullopt;
  s = std::string_view(p, static_cast<size_t>(end - p));
  return v;
}

// The number right after the first occurrence of key in s, if any.
std::optional<std::int64_t> after_number(std::string_view s, std::string_view key,
                                         std::int64_t limit = INT32_MAX);

// The token after key up to the next space (or end), empty when key is absent.
std::string_view after_token(std::string_view s, std::string_view key);

// True when s is non-empty and only digits.
bool all_digits(std::string_view s);

}  // namespace gpulens::nccl
