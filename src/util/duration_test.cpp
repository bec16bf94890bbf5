// Durations and times in the spellings users type.
#include "util/duration.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

TEST(Duration, Parses) {
  EXPECT_EQ(*parse_duration_ms("100ms"), 100);
  EXPECT_EQ(*parse_duration_ms("15s"), 15000);
  EXPECT_EQ(*parse_duration_ms("1h30m"), 5400000);
  EXPECT_EQ(*parse_duration_ms("1.5s"), 1500);
  EXPECT_FALSE(parse_duration_ms("10").ok());
  EXPECT_FALSE(parse_duration_ms("").ok());
  EXPECT_FALSE(parse_duration_ms("-1s").ok());
  EXPECT_FALSE(parse_duration_ms("1x").ok());
  EXPECT_NE(parse_duration_ms("abc").status().message().find("abc"), std::string::npos);
}

TEST(Duration, Formats) {
  EXPECT_EQ(format_duration(3600000), "1h");
  EXPECT_EQ(format_duration(90000), "90s");
  EXPECT_EQ(format_duration(100), "100ms");
}

TEST(Time, ParsesRfc3339AndUnix) {
  EXPECT_EQ(*parse_time_ms("1970-01-01T00:00:10Z"), 10000);
  EXPECT_EQ(*parse_time_ms("1970-01-01T01:00:10+01:00"), 10000);
  EXPECT_EQ(*parse_time_ms("1970-01-01T00:00:10.250Z"), 10250);
  EXPECT_EQ(*parse_time_ms("1764410400"), 1764410400000);
  EXPECT_FALSE(parse_time_ms("yesterday").ok());
  EXPECT_FALSE(parse_time_ms("2026-11-29T10:00:00").ok());
  EXPECT_EQ(format_rfc3339(10000), "1970-01-01T00:00:10Z");
}

}  // namespace
}  // namespace gpulens
