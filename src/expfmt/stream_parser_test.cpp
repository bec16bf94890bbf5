#include "expfmt/stream_parser.h"

#include <gtest/gtest.h>

#include <map>

namespace gpulens::expfmt {
namespace {

// Keeps every series and sample it is given.
struct KeepAllSink final : SeriesSink {
  std::vector<std::map<std::string, std::string>> series;
  std::vector<std::pair<int64_t, double>> samples;
  int64_t on_series(std::string_view name, LabelSpan labels) override {
    std::map<std::string, std::string> m{{"__name__", std::string(name)}};
    for (const auto& [k, v] : labels) m[std::string(k)] = std::string(v);
    series.push_back(std::move(m));
    return static_cast<int64_t>(series.size() - 1);
  }
  void on_sample(int64_t, int64_t t, double v) override { samples.emplace_back(t, v); }
};

TEST(ExpfmtStream, FeedsAnyChunkingTheSame) {
  const std::string page =
      "# TYPE gpu_up gauge\n"
      "gpu_up{gpu=\"0\",uuid=\"GPU-a\"} 1 1700000000\n"
      "gpu_up{gpu=\"1\",uuid=\"GPU-b\"} 0 1700000000.5 # {trace_id=\"x\"} 1\n"
      "gpu_up{gpu=\"0\",uuid=\"GPU-a\"} 1 1700000001\n"
      "# EOF\n";
  for (size_t chunk : {1u, 2u, 7u, 1000u}) {
    KeepAllSink sink;
    StreamParser p("t.om", sink);
    for (size_t i = 0; i < page.size(); i += chunk) ASSERT_TRUE(p.feed(page.substr(i, chunk)).is_ok());
    ASSERT_TRUE(p.finish().is_ok());
    ASSERT_EQ(sink.series.size(), 2u) << chunk;
    EXPECT_EQ(sink.series[1].at("uuid"), "GPU-b");
    ASSERT_EQ(sink.samples.size(), 3u);
    EXPECT_EQ(sink.samples[1].first, 1700000000500);
    EXPECT_TRUE(p.stats().warnings.empty());
  }
}

TEST(ExpfmtStream, LabelLimitsNameTheLine) {
  KeepAllSink sink;
  StreamLimits limits;
  limits.labels.max_labels = 2;
  StreamParser p("page", sink, limits);
  p.start_scrape(1000);
  Status s = p.feed("a{x=\"1\"} 1\nb{x=\"1\",y=\"2\",z=\"3\"} 1\n");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "page:2: more than 2 labels");
  StreamParser q("page", sink);
  q.start_scrape(1000);
  s = q.feed("a{x=\"\\t\"} 1\n");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "page:1: label x: bad escape \\t");
}

TEST(ExpfmtStream, LongLineIsAnErrorNotMemory) {
  KeepAllSink sink;
  StreamLimits limits;
  limits.max_line_bytes = 16;
  StreamParser p("big", sink, limits);
  p.start_scrape(0);
  Status s = p.feed(std::string(10, 'a'));
  ASSERT_TRUE(s.is_ok());
  s = p.feed(std::string(10, 'a'));
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "big:1: line longer than 16 bytes (not a recording?)");
}

}  // namespace
}  // namespace gpulens::expfmt
