// JSON escaping.
#include "util/json.h"

#include <charconv>
#include <cmath>

#include "util/utf8.h"

namespace gpulens {

void append_json_escaped(std::string& out, std::string_view s, bool escape_bidi) {
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
    } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) ||
               (escape_bidi && ((cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069)))) {
      static constexpr char kHexDigits[] = "0123456789abcdef";
      out += "\\u";  // every code point escaped here is below U+10000: four digits
      for (int shift = 12; shift >= 0; shift -= 4) out += kHexDigits[(cp >> shift) & 0xF];
      i += n;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
}

void append_json_string(std::string& out, std::string_view s) {
  out.reserve(out.size() + s.size() + 2);
  out += '"';
  append_json_escaped(out, s);
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
