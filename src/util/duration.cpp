// Duration and time text formats.
#include "util/duration.h"

#include <charconv>
#include <cmath>
#include <ctime>

namespace gpulens {

Result<int64_t> parse_duration_ms(std::string_view text) {
  const std::string original(text);
  if (text.empty()) return invalid_argument("empty duration");
  double total = 0;
  while (!text.empty()) {
    double n = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || n < 0) {
      return invalid_argument("invalid duration \"" + original + "\" (expected e.g. 100ms, 15s, 10m, 1h)");
    }
    text.remove_prefix(p - text.data());
    double unit = 0;
    if (text.starts_with("ms")) {
      unit = 1, text.remove_prefix(2);
    } else if (text.starts_with("s")) {
      unit = 1e3, text.remove_prefix(1);
    } else if (text.starts_with("m")) {
      unit = 60e3, text.remove_prefix(1);
    } else if (text.starts_with("h")) {
      unit = 3600e3, text.remove_prefix(1);
    } else if (text.starts_with("d")) {
      unit = 86400e3, text.remove_prefix(1);
    } else {
      return invalid_argument("invalid duration \"" + original + "\": missing unit (ms, s, m, h, d)");
    }
    total += n * unit;
  }
  if (total > 1e15) return invalid_argument("duration \"" + original + "\" is too long");
  return static_cast<int64_t>(std::llround(total));
}

std::string format_duration(int64_t ms) {
  if (ms % 3600000 == 0 && ms >= 3600000) return std::to_string(ms / 3600000) + "h";
  if (ms % 60000 == 0 && ms >= 60000) return std::to_string(ms / 60000) + "m";
  if (ms % 1000 == 0 && ms >= 1000) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

Result<int64_t> parse_time_ms(std::string_view text) {
  const std::string s(text);
  // Unix seconds, possibly fractional.
  double unix_s = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), unix_s);
  if (ec == std::errc() && p == s.data() + s.size()) {
    // Year 9999 at most, so that milliseconds never overflow.
    if (!(unix_s >= -253'402'300'799.0 && unix_s <= 253'402'300'799.0)) {
      return invalid_argument("time \"" + s + "\" out of range (Unix seconds up to year 9999)");
    }
    return static_cast<int64_t>(std::llround(unix_s * 1000));
  }

  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6) {
    return invalid_argument("invalid time \"" + s + "\" (expected RFC 3339 like 2026-11-29T10:00:00Z or Unix seconds)");
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  std::string_view rest(s.c_str() + consumed);
  double frac = 0;
  if (rest.starts_with('.')) {
    size_t i = 1;
    while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
    std::from_chars(rest.data(), rest.data() + i, frac);  // ".123" parses as 0.123
    rest.remove_prefix(i);
  }
  int64_t offset_s = 0;
  if (rest == "Z" || rest == "z") {
  } else if (rest.size() == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':') {
    int hh = 0, mm = 0;
    std::from_chars(rest.data() + 1, rest.data() + 3, hh);
    std::from_chars(rest.data() + 4, rest.data() + 6, mm);
    offset_s = (rest[0] == '+' ? 1 : -1) * (hh * 3600 + mm * 60);
  } else {
    return invalid_argument("invalid time \"" + s + "\": missing time zone (Z or +hh:mm)");
  }
  const int64_t epoch = timegm(&tm) - offset_s;
  return epoch * 1000 + static_cast<int64_t>(std::llround(frac * 1000));
}

std::string format_rfc3339(int64_t ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gpulens
