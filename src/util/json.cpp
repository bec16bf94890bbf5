// JSON escaping.
#include "util/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/utf8.h"

namespace gpulens {

void append_json_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; ++i; continue;
      case '\\': out += "\\\\"; ++i; continue;
      case '\n': out += "\\n"; ++i; continue;
      case '\r': out += "\\r"; ++i; continue;
      case '\t': out += "\\t"; ++i; continue;
      default: break;
    }
    uint32_t cp = 0;
    const size_t n = utf8_sequence(s, i, cp);
    if (n == 0) {  // not UTF-8: one U+FFFD per bad byte
      out += kReplacementChar;
      ++i;
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out += '"';
}

std::string json_string(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

void append_json_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  if (v == 0) v = 0;  // no "-0"
  char buf[32];
  auto p = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out.append(buf, p);
}

}  // namespace gpulens
