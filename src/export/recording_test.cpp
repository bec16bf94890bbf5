// RecordingWriter: families and series come out in one piece each, in time
// order, histograms one metric point per timestamp, with a spool on disk or
// in memory; the result parses back.
#include "export/recording.h"
#include "util/testing/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

namespace gpulens {
namespace {

std::string write_interleaved(const std::string& spool_dir) {
  RecordingWriter w;
  if (!spool_dir.empty()) {
    EXPECT_TRUE(w.open(spool_dir).is_ok());
  }
  const uint32_t a = w.family("a_ratio", "gauge", "A.");
  const uint32_t h = w.family("lat_seconds", "histogram", "Latency.");
  const uint32_t a0 = w.series(a, "a_ratio{gpu=\"0\"}");
  const uint32_t a1 = w.series(a, "a_ratio{gpu=\"1\"}");
  const uint32_t b1 = w.series(h, "lat_seconds_bucket{le=\"0.1\"}");
  const uint32_t binf = w.series(h, "lat_seconds_bucket{le=\"+Inf\"}");
  const uint32_t sum = w.series(h, "lat_seconds_sum");
  const uint32_t count = w.series(h, "lat_seconds_count");
  for (int64_t t = 1000; t <= 3000; t += 1000) {  // samples arrive one timestamp at a time
    EXPECT_TRUE(w.add(count, t, t / 100).is_ok());
    EXPECT_TRUE(w.add(a1, t, 0.5).is_ok());
    EXPECT_TRUE(w.add(b1, t, t / 1000).is_ok());
    EXPECT_TRUE(w.add(a0, t, 0.25).is_ok());
    EXPECT_TRUE(w.add(binf, t, t / 100).is_ok());
    EXPECT_TRUE(w.add(sum, t, 1.5).is_ok());
  }
  EXPECT_EQ(w.samples(), 18u);
  std::ostringstream out;
  EXPECT_TRUE(w.finish(out).is_ok());
  return out.str();
}

const char* kExpected =
    "# TYPE a_ratio gauge\n# HELP a_ratio A.\n"
    "a_ratio{gpu=\"0\"} 0.25 1.000\na_ratio{gpu=\"0\"} 0.25 2.000\na_ratio{gpu=\"0\"} 0.25 3.000\n"
    "a_ratio{gpu=\"1\"} 0.5 1.000\na_ratio{gpu=\"1\"} 0.5 2.000\na_ratio{gpu=\"1\"} 0.5 3.000\n"
    "# TYPE lat_seconds histogram\n# HELP lat_seconds Latency.\n"
    "lat_seconds_bucket{le=\"0.1\"} 1 1.000\nlat_seconds_bucket{le=\"+Inf\"} 10 1.000\nlat_seconds_sum 1.5 1.000\nlat_seconds_count 10 1.000\n"
    "lat_seconds_bucket{le=\"0.1\"} 2 2.000\nlat_seconds_bucket{le=\"+Inf\"} 20 2.000\nlat_seconds_sum 1.5 2.000\nlat_seconds_count 20 2.000\n"
    "lat_seconds_bucket{le=\"0.1\"} 3 3.000\nlat_seconds_bucket{le=\"+Inf\"} 30 3.000\nlat_seconds_sum 1.5 3.000\nlat_seconds_count 30 3.000\n"
    "# EOF\n";

TEST(RecordingWriter, GroupsFamiliesAndSeriesInMemory) { EXPECT_EQ(write_interleaved(""), kExpected); }

TEST(RecordingWriter, GroupsFamiliesAndSeriesThroughADiskSpool) {
  const testing::TestDir dir;  // its own: another test's files in a shared one would change the count
  EXPECT_EQ(write_interleaved(dir.path()), kExpected);
  // The spool files were unlinked at once: nothing is left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 0);
}

TEST(RecordingWriter, ManySamplesCrossTheSpoolBuffer) {
  const testing::TestDir dir;
  RecordingWriter w;
  ASSERT_TRUE(w.open(dir.path()).is_ok());
  const uint32_t f = w.family("x", "gauge", "X.");
  const uint32_t s0 = w.series(f, "x{i=\"0\"}"), s1 = w.series(f, "x{i=\"1\"}");
  for (int64_t t = 0; t < 20000; ++t) {
    ASSERT_TRUE(w.add(s1, t * 1000, 1).is_ok());
    ASSERT_TRUE(w.add(s0, t * 1000, static_cast<double>(t)).is_ok());
  }
  std::ostringstream out;
  ASSERT_TRUE(w.finish(out).is_ok());
  const std::string text = out.str();
  // Series 0 in one piece, in time order, then series 1.
  EXPECT_EQ(text.find("x{i=\"0\"} 19999 19999.000\nx{i=\"1\"} 1 0.000\n") != std::string::npos, true);
  EXPECT_EQ(text.rfind("x{i=\"0\"}"), text.find("x{i=\"0\"} 19999 "));
}

TEST(RecordingWriter, EmptyFamiliesAreLeftOut) {
  RecordingWriter w;
  w.family("unused", "gauge", "Never sampled.");
  std::ostringstream out;
  ASSERT_TRUE(w.finish(out).is_ok());
  EXPECT_EQ(out.str(), "# EOF\n");
}

TEST(RecordingWriter, UnwritableSpoolDirectoryIsAnError) {
  RecordingWriter w;
  Status s = w.open("/nonexistent/dir");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent/dir"), std::string::npos);
}

}  // namespace
}  // namespace gpulens
