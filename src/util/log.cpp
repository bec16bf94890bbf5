// Log line formatting, the level filter and the per-event rate limiter.
#include "util/log.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>

#include "util/duration.h"
#include "util/json.h"

namespace gpulens::log {
namespace {

struct State {
  std::mutex mu;
  Options options;
  std::function<void(const std::string&)> sink;
  struct Window {
    int64_t start_ms = 0;
    int written = 0;
    uint64_t suppressed = 0;
  };
  std::map<std::string, Window> windows;
};

State& state() {
  static State s;
  return s;
}

const char* level_name(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

bool plain(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

// Escapes a value for a quoted logfmt or JSON string. Values come from
// outside (a pushed label, a scrape target's page, a trace), so nothing that
// drives a terminal or breaks a log pipeline passes: C0 controls (\n, \r,
// \t as such), DEL, C1 controls and the bidirectional overrides become
// escapes; bytes that are not UTF-8 become U+FFFD. The JSON writer's rules.
void escape(std::string& out, std::string_view v) { append_json_escaped(out, v, /*escape_bidi=*/true); }

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void configure(const Options& options) {
  std::lock_guard lock(state().mu);
  state().options = options;
  state().windows.clear();
}

bool parse_level(std::string_view t, Level& out) {
  for (Level l : {Level::kDebug, Level::kInfo, Level::kWarn, Level::kError}) {
    if (t == level_name(l)) return out = l, true;
  }
  return false;
}

bool parse_format(std::string_view t, Format& out) {
  if (t == "text") return out = Format::kText, true;
  if (t == "json") return out = Format::kJson, true;
  return false;
}

void set_sink(std::function<void(const std::string&)> sink) {
  std::lock_guard lock(state().mu);
  state().sink = std::move(sink);
}

void write(Level level, std::string_view event, std::initializer_list<Field> fields) {
  State& s = state();
  std::unique_lock lock(s.mu);
  if (level < s.options.level) return;
  const int64_t now = now_ms();
  std::string key(event);
  if (fields.size() > 0) key += "\x1f" + fields.begin()->second;
  State::Window& w = s.windows[key];
  if (now - w.start_ms >= s.options.window_ms) {
    w.start_ms = now;
    w.written = 0;
  }
  if (w.written >= s.options.burst) {
    ++w.suppressed;
    return;
  }
  ++w.written;
  const uint64_t suppressed = w.suppressed;
  w.suppressed = 0;

  std::string line;
  const std::string time = format_rfc3339(now);
  if (s.options.format == Format::kJson) {
    line = "{\"time\":\"" + time + "\",\"level\":\"" + level_name(level) + "\",\"event\":\"";
    escape(line, event);
    line += '"';
    for (const auto& [k, v] : fields) {
      line += ",\"";
      escape(line, k);
      line += "\":\"";
      escape(line, v);
      line += '"';
    }
    if (suppressed > 0) line += ",\"suppressed\":\"" + std::to_string(suppressed) + "\"";
    line += "}";
  } else {
    line = time + " " + level_name(level) + " " + std::string(event);
    for (const auto& [k, v] : fields) {
      line += " ";
      line += k;
      line += '=';
      if (plain(v)) {
        line += v;
      } else {
        line += '"';
        escape(line, v);
        line += '"';
      }
    }
    if (suppressed > 0) line += " suppressed=" + std::to_string(suppressed);
  }
  if (s.sink) {
    s.sink(line);
    return;
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace gpulens::log
