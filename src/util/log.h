// The agent's log: one line per event that matters, on stderr (journald and
// Kubernetes collect it), as text or JSON, rate-limited per event and key.
//
//   log::configure({.level = log::Level::kInfo, .format = log::Format::kJson});
//   log::warn("source_down", {{"source", "nvml"}, {"reason", status.message()}});
//   // text: 2026-12-01T10:24:50Z warn source_down source=nvml reason="NVML_ERROR_GPU_IS_LOST"
//   // json: {"time":"2026-12-01T10:24:50Z","level":"warn","event":"source_down","source":"nvml",...}
//
// Events are snake_case names (source_down, remote_write_retrying, ...);
// fields are key/value text. Rate limit: an event with the same first field
// value is written at most `burst` times per `window_ms`; the lines it
// suppresses are counted and reported as `suppressed=N` on the next one
// written. Lines below the configured level cost one comparison.
//
// Thread-safety: every function may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace gpulens::log {

enum class Level : uint8_t { kDebug, kInfo, kWarn, kError };
enum class Format : uint8_t { kText, kJson };

struct Options {
  Level level = Level::kInfo;
  Format format = Format::kText;
  int burst = 5;               // lines per event+key per window
  int64_t window_ms = 60'000;
};

using Field = std::pair<std::string_view, std::string>;

void configure(const Options& options);
// "debug", "info", "warn", "error" / "text", "json"; false when unknown.
bool parse_level(std::string_view text, Level& out);
bool parse_format(std::string_view text, Format& out);
// Where lines go (default: stderr); for tests. nullptr restores stderr.
void set_sink(std::function<void(const std::string& line)> sink);

void write(Level level, std::string_view event, std::initializer_list<Field> fields);
inline void debug(std::string_view e, std::initializer_list<Field> f = {}) { write(Level::kDebug, e, f); }
inline void info(std::string_view e, std::initializer_list<Field> f = {}) { write(Level::kInfo, e, f); }
inline void warn(std::string_view e, std::initializer_list<Field> f = {}) { write(Level::kWarn, e, f); }
inline void error(std::string_view e, std::initializer_list<Field> f = {}) { write(Level::kError, e, f); }

}  // namespace gpulens::log
