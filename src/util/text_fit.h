// Fitting text output to the terminal's width (`gpulens snapshot`): the
// width to fit, and lines wrapped between words, so that a number or a name
// is never cut in the middle ("0.09 GPU-h lost" never becomes "0").
//
//   output_width(fd)        COLUMNS when set (a whole number >= 20), else the
//                           terminal's width when `fd` is one, else 0 (no limit)
//   display_width("65°C")   4: code points, SGR escapes ("\033[31m") take none
//   fit_lines(text, 40)     every line at most 40 columns: a longer line goes
//                           on under itself, indented two more than it, cut
//                           only at spaces; a single word wider than the room
//                           is the one thing cut (it cannot fit whole)
//
// Thread-safety: pure functions (output_width reads the environment).
#pragma once

#include <string>
#include <string_view>

namespace gpulens {

int output_width(int fd);
int display_width(std::string_view text);
std::string fit_lines(std::string_view text, int width);

}  // namespace gpulens
