// The log: level filter, text and JSON lines, the rate limiter.
#include "util/log.h"

#include <gtest/gtest.h>

#include <vector>

#include "util/utf8.h"

namespace gpulens::log {
namespace {

struct Captured {
  std::vector<std::string> lines;
  Captured() {
    set_sink([this](const std::string& l) { lines.push_back(l); });
  }
  ~Captured() {
    set_sink(nullptr);
    configure({});
  }
};

TEST(Log, TextLineWithQuotedFields) {
  Captured c;
  configure({.level = Level::kInfo});
  warn("source_down", {{"source", "nvml"}, {"reason", "GPU is lost \"3\""}});
  debug("hidden");
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_NE(c.lines[0].find("Z warn source_down source=nvml reason=\"GPU is lost \\\"3\\\"\""), std::string::npos)
      << c.lines[0];
}

TEST(Log, JsonLine) {
  Captured c;
  configure({.level = Level::kDebug, .format = Format::kJson});
  debug("config", {{"listen", "127.0.0.1:9400"}});
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_EQ(c.lines[0].rfind("{\"time\":\"", 0), 0u);
  EXPECT_NE(c.lines[0].find("\"level\":\"debug\",\"event\":\"config\",\"listen\":\"127.0.0.1:9400\"}"),
            std::string::npos)
      << c.lines[0];
}

// A value from outside (a pushed label, a scraped page) never reaches the
// log raw: no escape sequence, C1 control, bidi override or invalid UTF-8,
// in either format; printable UTF-8 passes unchanged.
TEST(Log, OutsideTextIsEscapedInBothFormats) {
  const std::string hostile = "a\x1b]0;owned\x07" "b\xc2\x9b" "2J\xe2\x80\xae" "c\x7f\xff\xc0\xaf\xc3\xa9";
  for (Format f : {Format::kText, Format::kJson}) {
    Captured c;
    configure({.level = Level::kInfo, .format = f});
    warn("bad_label", {{"value", hostile}});
    ASSERT_EQ(c.lines.size(), 1u);
    const std::string& line = c.lines[0];
    EXPECT_NE(line.find("a\\u001b]0;owned\\u0007b\\u009b2J\\u202ec\\u007f\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9"),
              std::string::npos)
        << line;
    for (unsigned char ch : line) EXPECT_TRUE(ch >= 0x20 && ch != 0x7f) << line;
    EXPECT_TRUE(valid_utf8(line)) << line;
  }
}

TEST(Log, RateLimitedPerEventAndKeyWithSuppressedCount) {
  Captured c;
  configure({.level = Level::kInfo, .format = Format::kText, .burst = 2, .window_ms = 0});
  // window 0: every call opens a new window, nothing is suppressed.
  for (int i = 0; i < 3; ++i) info("e", {{"k", "a"}});
  EXPECT_EQ(c.lines.size(), 3u);
  c.lines.clear();
  configure({.level = Level::kInfo, .format = Format::kText, .burst = 2, .window_ms = 3'600'000});
  for (int i = 0; i < 5; ++i) info("e", {{"k", "a"}});
  info("e", {{"k", "b"}});  // another key has its own budget
  ASSERT_EQ(c.lines.size(), 3u);
  EXPECT_NE(c.lines[2].find("k=b"), std::string::npos);
  EXPECT_EQ(c.lines[2].find("suppressed"), std::string::npos);
}

TEST(Log, ParsesLevelsAndFormats) {
  Level l{};
  Format f{};
  EXPECT_TRUE(parse_level("warn", l));
  EXPECT_EQ(l, Level::kWarn);
  EXPECT_FALSE(parse_level("loud", l));
  EXPECT_TRUE(parse_format("json", f));
  EXPECT_FALSE(parse_format("xml", f));
}

}  // namespace
}  // namespace gpulens::log
