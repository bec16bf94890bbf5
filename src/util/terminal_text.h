// The one rule for text that reaches a terminal (snapshot, top, the text
// reports of diagnose, trace and nccl): strings that came from outside (a
// pushed label, a scraped page, a kernel name in a trace, a health text)
// must not drive the terminal. Every control character is replaced by a
// visible stand-in, so no escape sequence (a window title, OSC 52 clipboard
// writes, clearing the screen, moving the cursor) survives:
//
//   C0 controls and DEL       -> caret notation, as `cat -v` shows them: ESC -> "^[", BEL -> "^G", DEL -> "^?"
//   C1 controls U+0080..U+009F, bytes that are not UTF-8,
//   bidirectional overrides (U+202A..U+202E, U+2066..U+2069) -> U+FFFD
//
//   terminal_safe("a\x1b]0;owned\x07b")  == "a^[]0;owned^Gb"
//   terminal_safe(text, kTerminalLayout)  keeps "\n" and "\t" and the styles gpulens writes itself
//
// kTerminalLayout is for a whole rendered screen or report: it keeps line
// breaks, tabs and exactly the SGR styles gpulens uses (reset, bold, dim,
// reverse, red, green, yellow, cyan: "\033[0m" .. "\033[36m"), nothing
// else; an outside string can at most change a colour, never the title,
// the clipboard or the screen.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpulens {

enum TerminalKeep : unsigned {
  kTerminalNothing = 0,
  kTerminalLayout = 1,  // "\n", "\t" and gpulens's own SGR styles
};

std::string terminal_safe(std::string_view s, TerminalKeep keep = kTerminalNothing);

}  // namespace gpulens
