// Control characters out of terminal text.
#include "util/terminal_text.h"

#include <array>

#include "util/utf8.h"

namespace gpulens {
namespace {

// The styles gpulens writes itself (top, snapshot, reports).
constexpr std::array<std::string_view, 8> kOwnStyles = {"\033[0m",  "\033[1m",  "\033[2m",  "\033[7m",
                                                       "\033[31m", "\033[32m", "\033[33m", "\033[36m"};

bool bidi_override(uint32_t cp) { return (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069); }

// The stand-in for code point `cp` when it must not reach a terminal; false
// when it may.
bool stand_in(uint32_t cp, std::string& out) {
  if (cp < 0x20) {
    out += '^';
    out += static_cast<char>(cp + 0x40);
    return true;
  }
  if (cp == 0x7F) {
    out += "^?";
    return true;
  }
  if ((cp >= 0x80 && cp <= 0x9F) || bidi_override(cp)) {
    out += kReplacementChar;
    return true;
  }
  return false;
}

void append_safe(std::string& out, std::string_view s, TerminalKeep keep) {
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (keep & kTerminalLayout) {
      if (c == '\n' || c == '\t') {
        out += c;
        ++i;
        continue;
      }
      if (c == '\033') {
        bool own = false;
        for (std::string_view style : kOwnStyles) {
          if (s.substr(i).starts_with(style)) {
            out += style;
            i += style.size();
            own = true;
            break;
          }
        }
        if (own) continue;
      }
    }
    uint32_t cp = 0;
    const size_t n = utf8_sequence(s, i, cp);
    if (n == 0) {
      out += kReplacementChar;
      ++i;
      continue;
    }
    if (!stand_in(cp, out)) out.append(s.substr(i, n));
    i += n;
  }
}

}  // namespace

std::string terminal_safe(std::string_view s, TerminalKeep keep) {
  std::string out;
  out.reserve(s.size());
  append_safe(out, s, keep);
  return out;
}

}  // namespace gpulens
