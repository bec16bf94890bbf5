// Wrapping output to a width: never over it, cut only between words, the
// words and their order kept, the width taken from COLUMNS.
#include "util/text_fit.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

namespace gpulens {
namespace {

std::vector<std::string> split(const std::string& s, char by) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string w; std::getline(in, w, by);) {
    if (!w.empty() || by == '\n') out.push_back(w);
  }
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& line : split(s, '\n')) {
    for (auto& w : split(line, ' ')) out.push_back(w);
  }
  return out;
}

TEST(TextFit, ShortLinesStayAsTheyAre) {
  const std::string text = "GPU 0  90%\n\n  indented line\n";
  EXPECT_EQ(fit_lines(text, 40), text);
  EXPECT_EQ(fit_lines(text, 0), text);  // 0: no limit
}

TEST(TextFit, LongLinesWrapBetweenWordsUnderThemselves) {
  const std::string line = "  GPU 5 WARNING thermal_throttle since 05:48:20 (19m) temperature 90.55 vs 80.00 0.09 GPU-h lost";
  for (int width : {20, 40, 80}) {
    const std::string out = fit_lines(line, width);
    for (const auto& l : split(out, '\n')) {
      EXPECT_LE(display_width(l), width) << width << ": " << l;
      EXPECT_NE(l.back(), ' ') << l;
    }
    EXPECT_EQ(words(out), words(line)) << out;  // nothing lost, no word cut
  }
  EXPECT_EQ(fit_lines(line, 40),
            "  GPU 5 WARNING thermal_throttle since\n"
            "    05:48:20 (19m) temperature 90.55 vs\n"
            "    80.00 0.09 GPU-h lost");
}

TEST(TextFit, EscapesAndUtf8TakeTheirDisplayWidth) {
  EXPECT_EQ(display_width("65°C"), 4);
  EXPECT_EQ(display_width("\033[31mhot\033[0m"), 3);
  const std::string line = "\033[2mutil: a kernel ran; SM: SMs busy; occ: warps resident\033[0m";
  for (const auto& l : split(fit_lines(line, 30), '\n')) EXPECT_LE(display_width(l), 30) << l;
}

TEST(TextFit, OnlyAWordWiderThanTheWidthIsCut) {
  const std::string out = fit_lines("see http://a-very-long-host-name.example:9400/api/v1/findings now", 20);
  for (const auto& l : split(out, '\n')) EXPECT_LE(display_width(l), 20) << l;
  EXPECT_EQ(out.substr(0, 4), "see\n");
  EXPECT_EQ(out.substr(out.size() - 3), "now");
}

TEST(TextFit, WidthComesFromColumns) {
  const char* before = std::getenv("COLUMNS");
  const std::string saved = before ? before : "";
  setenv("COLUMNS", "77", 1);
  EXPECT_EQ(output_width(-1), 77);
  setenv("COLUMNS", "7", 1);  // too narrow to mean anything: not a terminal, no limit
  EXPECT_EQ(output_width(-1), 0);
  setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(output_width(-1), 0);
  unsetenv("COLUMNS");
  EXPECT_EQ(output_width(-1), 0);
  if (before) setenv("COLUMNS", saved.c_str(), 1);
}

}  // namespace
}  // namespace gpulens
