// Parsing and printing of durations ("100ms", "15s", "10m", "1h30m") and of
// times ("2026-11-29T10:00:00Z" or Unix seconds) as users write them in flags
// and YAML.
//
//   Result<int64_t> ms = parse_duration_ms("1m30s");   // 90000
//   std::string s = format_rfc3339(1764410400000);      // "2025-11-29T10:00:00Z"
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gpulens {

Result<int64_t> parse_duration_ms(std::string_view text);
std::string format_duration(int64_t ms);
// RFC 3339 (Z or ±hh:mm offset, optional fraction) or Unix seconds.
Result<int64_t> parse_time_ms(std::string_view text);
std::string format_rfc3339(int64_t ms);

}  // namespace gpulens
