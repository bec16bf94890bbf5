// The terminal rule: no control character, escape sequence or malformed
// UTF-8 from a string reaches the terminal; what is printable stays.
#include "util/terminal_text.h"

#include <gtest/gtest.h>

#include "util/utf8.h"

namespace gpulens {
namespace {

bool has_control(std::string_view s, bool allow_layout) {
  for (size_t i = 0; i < s.size();) {
    uint32_t cp = 0;
    const size_t n = utf8_sequence(s, i, cp);
    if (n == 0) return true;
    if (!(allow_layout && (cp == '\n' || cp == '\t')) && (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F))) return true;
    i += n;
  }
  return false;
}

TEST(TerminalSafe, NeutralisesTitleClipboardAndClear) {
  EXPECT_EQ(terminal_safe("a\x1b]0;owned\x07" "b"), "a^[]0;owned^Gb");                 // OSC 0: window title
  EXPECT_EQ(terminal_safe("\x1b]52;c;aGk=\x1b\\"), "^[]52;c;aGk=^[\\");               // OSC 52: clipboard
  EXPECT_EQ(terminal_safe("\x1b[2J\x1b[H"), "^[[2J^[[H");                              // clear, home
  EXPECT_EQ(terminal_safe("\xC2\x9B" "2J"), "\xEF\xBF\xBD" "2J");                      // C1 CSI
  EXPECT_EQ(terminal_safe("del\x7f"), "del^?");
  EXPECT_EQ(terminal_safe("line\nbreak\ttab"), "line^Jbreak^Itab");
  EXPECT_EQ(terminal_safe("bad\xff"), "bad\xEF\xBF\xBD");
  EXPECT_EQ(terminal_safe("abc\xE2\x80\xAE" "def"), "abc\xEF\xBF\xBD" "def");          // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(terminal_safe("NVIDIA H100 80GB · 62%"), "NVIDIA H100 80GB · 62%");
}

TEST(TerminalSafe, IsIdempotentAndLeavesNoControl) {
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 5) {
      const char s[4] = {static_cast<char>(a), '[', static_cast<char>(b), '\xC2'};
      const std::string once = terminal_safe(std::string_view(s, 4));
      EXPECT_FALSE(has_control(once, false)) << a << " " << b;
      EXPECT_EQ(terminal_safe(once), once);
    }
  }
}

TEST(TerminalSafe, LayoutKeepsLinesTabsAndOwnStylesOnly) {
  EXPECT_EQ(terminal_safe("\033[1mGPU\033[0m\n\tx", kTerminalLayout), "\033[1mGPU\033[0m\n\tx");
  EXPECT_EQ(terminal_safe("\033[31mred\033[0m", kTerminalLayout), "\033[31mred\033[0m");
  // Anything else that starts with ESC is shown, not obeyed.
  EXPECT_EQ(terminal_safe("\033[8mhidden\033]0;t\007\033[2J\033[38;5;1m", kTerminalLayout),
            "^[[8mhidden^[]0;t^G^[[2J^[[38;5;1m");
  EXPECT_EQ(terminal_safe("a\rb", kTerminalLayout), "a^Mb");
}

}  // namespace
}  // namespace gpulens
