// Replay parsing: good input, malformed lines, truncation, unknown names,
// counter resets and gaps, DCGM units.
#include "expfmt/stream_parser.h"

#include <gtest/gtest.h>

#include <limits>

#include "diagnose/mapping.h"
#include "diagnose/replay_input.h"

namespace gpulens::diagnose {
namespace {

// Stores nothing: wants every gpulens/DCGM series, drops the samples.
class ReplaySinkForTest final : public expfmt::SeriesSink {
 public:
  int64_t on_series(std::string_view name, LabelSpan) override { return known_name(name) ? 0 : -1; }
  void on_sample(int64_t, int64_t, double) override {}
};

constexpr std::string_view kGood =
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100\",Hostname=\"n1\"} 50 100\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100\",Hostname=\"n1\"} 75 115.5\n"
    "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n1\"} 1024 100\n"
    "some_unknown_metric{a=\"x\"} 3 100\n"
    "some_unknown_metric{a=\"x\"} 4 115\n"
    "# EOF\n";

TEST(Replay, MapsDcgmUnitsAndCountsUnknownNames) {
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(kGood, "rec.om", info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(info.stats.saw_eof);
  EXPECT_EQ(info.stats.samples, 3u);
  EXPECT_EQ(info.stats.ignored_series, 1u);
  EXPECT_EQ(info.stats.ignored_samples, 2u);
  ASSERT_EQ(set->hosts.size(), 1u);
  EXPECT_EQ(set->hosts[0].name, "n1");
  const GpuSignals& g = set->hosts[0].gpus.at(0);
  EXPECT_EQ(g.uuid, "GPU-a");
  EXPECT_EQ(g.model, "NVIDIA H100");
  ASSERT_EQ(g.sig(GpuSig::kGpuUtil).size(), 2u);
  EXPECT_DOUBLE_EQ(g.sig(GpuSig::kGpuUtil)[1].v, 0.75);      // percent -> ratio
  EXPECT_EQ(g.sig(GpuSig::kGpuUtil)[1].t_ms, 115500);         // seconds -> ms
  EXPECT_DOUBLE_EQ(g.sig(GpuSig::kFbUsed)[0].v, 1024.0 * 1024 * 1024);  // MiB -> bytes
}

struct Bad {
  std::string_view text;
  std::string_view message;
};

class Malformed : public ::testing::TestWithParam<Bad> {};

TEST_P(Malformed, NamesFileLineAndProblem) {
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(GetParam().text, "bad.om", info);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find(GetParam().message), std::string::npos) << set.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Lines, Malformed,
    ::testing::Values(Bad{"gpu_up{gpu=\"0\"} 1 1700000000\ngpu_up{gpu=\"1\"} 1\n# EOF\n", "bad.om:2: sample has no timestamp"},
                      Bad{"gpu_up{gpu=\"0\"} 1 100\ngpu_up{gpu=\"0\" 1 100\n# EOF\n", "bad.om:2: unterminated label set"},
                      Bad{"gpu_up{gpu=\"0\"} one 100\n# EOF\n", "bad.om:1: bad value \"one\""},
                      Bad{"gpu_up{gpu=\"0\"} 1 1e\n# EOF\n", "bad.om:1: bad timestamp"},
                      Bad{"9gpu 1 100\n# EOF\n", "bad.om:1: expected a metric name"},
                      // Out-of-range timestamps (issue 16): an error, never an overflow.
                      Bad{"gpu_up{gpu=\"0\"} 1 100\ngpu_up{gpu=\"0\"} 1 1e300\n# EOF\n",
                          "bad.om:2: timestamp \"1e300\" out of range"},
                      Bad{"gpu_up{gpu=\"0\"} 1 1e19\n# EOF\n", "bad.om:1: timestamp \"1e19\" out of range"},
                      Bad{"gpu_up{gpu=\"0\"} 1 -5\n# EOF\n", "bad.om:1: timestamp \"-5\" out of range"},
                      Bad{"gpu_up{gpu=\"0\"} 1 NaN\n# EOF\n", "bad.om:1: timestamp \"NaN\" out of range"},
                      Bad{"gpu_up{gpu=\"0\"} 1 +Inf\n# EOF\n", "bad.om:1: timestamp \"+Inf\" out of range"},
                      Bad{"gpu_up{gpu=0} 1 100\n# EOF\n", "bad.om:1: expected =\"...\" after label gpu"},
                      Bad{"gpu_up{gpu=\"0\"} 1 100\n# EOF\ngpu_up{gpu=\"0\"} 1 101\n", "bad.om:3: content after"},
                      Bad{"unknown_only 1 100\n# EOF\n", "no samples of any metric diagnosis knows"}));

TEST(Replay, TruncatedFileWarnsAndUsesWhatWasRead) {
  const std::string text =
      "gpu_utilization_ratio{gpu=\"0\"} 0.5 100\n"
      "gpu_utilization_ratio{gpu=\"0\"} 0.6 101\n"
      "gpu_utilization_ratio{gpu=\"0\"} 0.";  // cut mid-line, no # EOF
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(text, "cut.om", info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_FALSE(info.stats.saw_eof);
  ASSERT_EQ(info.stats.warnings.size(), 2u);
  EXPECT_NE(info.stats.warnings[0].find("cut.om:3: last line cut short"), std::string::npos);
  EXPECT_NE(info.stats.warnings[1].find("no \"# EOF\""), std::string::npos);
  EXPECT_EQ(set->hosts[0].gpus[0].sig(GpuSig::kGpuUtil).size(), 2u);
}

TEST(Replay, CountersResetAndGapsYieldNoFalseRates) {
  // PCIe RX counter: 1 GB/s, reset at t=3, a 10-minute gap at t=5.
  std::string text;
  const double vals[] = {0, 1e9, 2e9, 0.5e9, 1.5e9, 2.5e9, 602.5e9, 603.5e9};
  const int times[] = {0, 1, 2, 3, 4, 5, 605, 606};
  for (int i = 0; i < 8; ++i) {
    text += "gpu_pcie_rx_bytes_total{gpu=\"0\"} " + std::to_string(vals[i]) + " " + std::to_string(1000 + times[i]) + "\n";
  }
  text += "# EOF\n";
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(text, "c.om", info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  const Series& rx = set->hosts[0].gpus[0].sig(GpuSig::kPcieRxBps);
  ASSERT_EQ(rx.size(), 5u);  // 8 points - first - reset - gap
  for (const Point& p : rx) EXPECT_DOUBLE_EQ(p.v, 1e9) << p.t_ms;
}

TEST(Replay, ChunkBoundariesDoNotMatter) {
  struct Count : expfmt::SeriesSink {
    int64_t on_series(std::string_view, LabelSpan labels) override {
      last_labels = labels.size();
      return series++;
    }
    void on_sample(int64_t, int64_t, double) override { ++samples; }
    int64_t series = 0, samples = 0;
    size_t last_labels = 0;
  } sink;
  expfmt::StreamParser p("x", sink);
  const std::string text(kGood);
  for (char c : text) ASSERT_TRUE(p.feed(std::string_view(&c, 1)).is_ok());
  ASSERT_TRUE(p.finish().is_ok());
  EXPECT_EQ(sink.series, 3);
  EXPECT_EQ(sink.samples, 5);
  EXPECT_TRUE(p.stats().saw_eof);
}

TEST(Replay, LabelValuesWithBracesQuotesAndMillisecondTimestamps) {
  const std::string text =
      "gpu_utilization_ratio{gpu=\"0\",note=\"a}b \\\"q\\\"\"} 0.5 1764410400000\n# EOF\n";
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(text, "x", info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->hosts[0].gpus[0].sig(GpuSig::kGpuUtil)[0].t_ms, 1764410400000);
}

TEST(Timestamps, RangeIsNineteenSeventyToNineNineNineNine) {
  int64_t ms = -1;
  EXPECT_TRUE(expfmt::timestamp_to_ms(0, ms));
  EXPECT_EQ(ms, 0);
  EXPECT_TRUE(expfmt::timestamp_to_ms(1764410400.5, ms));
  EXPECT_EQ(ms, 1764410400500);
  EXPECT_TRUE(expfmt::timestamp_to_ms(1764410400500.0, ms));  // milliseconds
  EXPECT_EQ(ms, 1764410400500);
  EXPECT_TRUE(expfmt::timestamp_to_ms(static_cast<double>(expfmt::kMaxTimestampMs), ms));
  EXPECT_FALSE(expfmt::timestamp_to_ms(static_cast<double>(expfmt::kMaxTimestampMs) * 2, ms));
  EXPECT_FALSE(expfmt::timestamp_to_ms(-0.001, ms));
  EXPECT_FALSE(expfmt::timestamp_to_ms(1e19, ms));
  EXPECT_FALSE(expfmt::timestamp_to_ms(std::numeric_limits<double>::quiet_NaN(), ms));
}

// A stream with no newline (/dev/zero) stops at the line bound, whatever the
// chunking, instead of growing the partial line without end.
TEST(Limits, EndlessLineIsAnErrorAtTheLineBound) {
  ReplaySinkForTest sink;
  expfmt::StreamParser p("/dev/zero", sink, expfmt::StreamLimits{.max_line_bytes = 1000});
  const std::string zeros(300, '\0');
  Status s = Status::ok();
  int chunks = 0;
  while (s && chunks < 100) { s = p.feed(zeros); ++chunks; }
  ASSERT_FALSE(s);
  EXPECT_LT(chunks, 10);
  EXPECT_NE(s.message().find("/dev/zero:1: line longer than 1000 bytes"), std::string::npos) << s.message();
}

TEST(Limits, TotalBytesSeriesAndSamplesAreBounded) {
  {
    ReplaySinkForTest sink;
    expfmt::StreamParser p("s.om", sink, expfmt::StreamLimits{.max_bytes = 100});
    Status s = Status::ok();
    for (int i = 0; s && i < 100; ++i) s = p.feed("gpu_up{gpu=\"0\"} 1 100\n");
    ASSERT_FALSE(s);
    EXPECT_NE(s.message().find("s.om: input larger than 100 bytes"), std::string::npos) << s.message();
  }
  {
    ReplayInfo info;
    std::string text;
    for (int i = 0; i < 20; ++i) text += "gpu_up{gpu=\"" + std::to_string(i) + "\"} 1 100\n";
    expfmt::StreamLimits limits{.max_series = 10};
    Result<SignalSet> set = load_replay_text(text, "m.om", info, limits);
    ASSERT_FALSE(set.ok());
    EXPECT_NE(set.status().message().find("m.om:11: more than 10 distinct series"), std::string::npos)
        << set.status().message();
    EXPECT_EQ(set.status().message().find('('), std::string::npos);  // no advice but the caller's
    limits.series_advice = "raise --max-series";
    set = load_replay_text(text, "m.om", info, limits);
    ASSERT_FALSE(set.ok());
    EXPECT_NE(set.status().message().find("distinct series of the families read (raise --max-series)"),
              std::string::npos)
        << set.status().message();
  }
  {
    ReplayInfo info;
    std::string text;
    for (int i = 0; i < 20; ++i) text += "gpu_up{gpu=\"0\"} 1 " + std::to_string(100 + i) + "\n";
    Result<SignalSet> set = load_replay_text(text, "n.om", info, expfmt::StreamLimits{.max_samples = 5});
    ASSERT_FALSE(set.ok());
    EXPECT_NE(set.status().message().find("n.om:6: more than 5 samples"), std::string::npos)
        << set.status().message();
  }
  {
    // Ignored series past their bound are not remembered, yet still parsed.
    ReplaySinkForTest sink;
    expfmt::StreamParser p("i.om", sink, expfmt::StreamLimits{.max_ignored_series = 3});
    std::string text;
    for (int i = 0; i < 10; ++i) text += "unused_metric{a=\"" + std::to_string(i) + "\"} 1 100\n";
    ASSERT_TRUE(p.feed(text));
    EXPECT_EQ(p.stats().ignored_series, 3u);
    EXPECT_EQ(p.stats().ignored_samples, 10u);
  }
}

// Records what reaches the sink: series seen and (handle, time, value).
class RecordingSink final : public expfmt::SeriesSink {
 public:
  int64_t on_series(std::string_view name, LabelSpan) override {
    names.emplace_back(name);
    return static_cast<int64_t>(names.size() - 1);
  }
  void on_sample(int64_t h, int64_t t, double v) override { samples.push_back({h, t, v}); }
  struct S {
    int64_t h, t;
    double v;
  };
  std::vector<std::string> names;
  std::vector<S> samples;
};

TEST(Scrape, SamplesWithoutTimestampTakeTheScrapeTimeAndSeriesKeepTheirHandles) {
  RecordingSink sink;
  expfmt::StreamParser p("http://127.0.0.1:9400/metrics", sink);
  p.start_scrape(5000);
  ASSERT_TRUE(p.feed("# HELP up x\n# TYPE up gauge\nup{job=\"a\"} 1\nother 2 1700000000000\n").is_ok());
  ASSERT_TRUE(p.finish().is_ok());
  EXPECT_TRUE(p.stats().warnings.empty());  // text 0.0.4 has no # EOF
  ASSERT_EQ(sink.samples.size(), 2u);
  EXPECT_EQ(sink.samples[0].t, 5000);
  EXPECT_EQ(sink.samples[1].t, 5000);  // an explicit timestamp is not kept either
  p.start_scrape(6000);
  ASSERT_TRUE(p.feed("up{job=\"a\"} 0\n# EOF\n").is_ok());
  ASSERT_TRUE(p.finish().is_ok());
  EXPECT_EQ(sink.names.size(), 2u);  // no second announcement
  EXPECT_EQ(sink.samples.back().h, 0);
  EXPECT_EQ(sink.samples.back().t, 6000);
  EXPECT_EQ(p.stats().samples, 1u);
  // Garbage is still an error naming the target and line.
  p.start_scrape(7000);
  Status s = p.feed("<html>\n");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "http://127.0.0.1:9400/metrics:1: expected a metric name");
  p.start_scrape(8000);
  s = p.feed("up 1 12x\n");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("bad timestamp"), std::string::npos);
}

}  // namespace
}  // namespace gpulens::diagnose
