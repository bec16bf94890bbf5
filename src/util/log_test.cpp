// The log: level filter, text and JSON lines, the rate limiter.
#include "util/log.h"

#include <gtest/gtest.h>

#include <vector>

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
