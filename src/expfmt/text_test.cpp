#include "expfmt/text.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpulens::expfmt {
namespace {

TEST(ExpfmtFloat, TakesWhatGoParseFloatTakes) {
  double v = 0;
  ASSERT_TRUE(parse_float("2.5e9", v));
  EXPECT_DOUBLE_EQ(v, 2.5e9);
  ASSERT_TRUE(parse_float("+3", v));
  EXPECT_DOUBLE_EQ(v, 3);
  ASSERT_TRUE(parse_float("-0.25", v));
  EXPECT_DOUBLE_EQ(v, -0.25);
  for (std::string_view inf : {"+Inf", "Inf", "inf", "INFINITY", "+infinity"}) {
    ASSERT_TRUE(parse_float(inf, v)) << inf;
    EXPECT_TRUE(std::isinf(v) && v > 0) << inf;
  }
  ASSERT_TRUE(parse_float("-Inf", v));
  EXPECT_TRUE(std::isinf(v) && v < 0);
  ASSERT_TRUE(parse_float("NaN", v));
  EXPECT_TRUE(std::isnan(v));
  for (std::string_view bad : {"", "+", "-", "+-1", "1x", "one", "0x10", "1 ", "infinit", "--1"}) {
    EXPECT_FALSE(parse_float(bad, v)) << bad;
  }
}

TEST(ExpfmtTimestamp, SecondsOrMillisecondsWithinRange) {
  int64_t ms = 0;
  ASSERT_TRUE(timestamp_to_ms(1700000000.5, ms));
  EXPECT_EQ(ms, 1700000000500);
  ASSERT_TRUE(timestamp_to_ms(1700000000123.0, ms));
  EXPECT_EQ(ms, 1700000000123);
  EXPECT_FALSE(timestamp_to_ms(-1, ms));
  EXPECT_FALSE(timestamp_to_ms(1e19, ms));
  EXPECT_FALSE(timestamp_to_ms(NAN, ms));
}

TEST(ExpfmtSample, SplitsNameLabelsValueTimestampExemplar) {
  SampleLine s;
  ASSERT_EQ(split_sample(R"(up{job="a",path="x}y \"q\""} 1 1700000000 # {trace_id="1"} 1)", s), LineProblem::kNone);
  EXPECT_EQ(s.name, "up");
  EXPECT_EQ(s.series, R"(up{job="a",path="x}y \"q\""})");
  EXPECT_EQ(s.labels, R"(job="a",path="x}y \"q\"")");
  EXPECT_DOUBLE_EQ(s.value, 1);
  EXPECT_EQ(s.timestamp_text, "1700000000");
  EXPECT_EQ(s.exemplar, R"( {trace_id="1"} 1)");
  ASSERT_EQ(split_sample("\tx\t-Inf\t", s), LineProblem::kNone);
  EXPECT_EQ(s.name, "x");
  EXPECT_EQ(s.series, "x");
  EXPECT_TRUE(s.labels.empty());
  EXPECT_TRUE(s.timestamp_text.empty());
  EXPECT_TRUE(std::isinf(s.value));
  ASSERT_EQ(split_sample("a 1 # {} 2", s), LineProblem::kNone);
  EXPECT_TRUE(s.timestamp_text.empty());
  EXPECT_FALSE(s.exemplar.empty());
}

TEST(ExpfmtSample, NamesEachProblem) {
  SampleLine s;
  EXPECT_EQ(split_sample("9a 1", s), LineProblem::kNoName);
  EXPECT_EQ(split_sample("", s), LineProblem::kNoName);
  EXPECT_EQ(split_sample("<html>", s), LineProblem::kNoName);
  EXPECT_EQ(split_sample(R"(a{b="1" 2)", s), LineProblem::kUnterminatedLabelSet);
  EXPECT_EQ(split_sample(R"(a{b="1}" 2)", s), LineProblem::kUnterminatedLabelSet);
  EXPECT_EQ(split_sample("a", s), LineProblem::kNoValue);
  EXPECT_EQ(split_sample("a{} ", s), LineProblem::kNoValue);
  EXPECT_EQ(split_sample("a-1", s), LineProblem::kNoSpace);
  EXPECT_EQ(split_sample("a{}1", s), LineProblem::kNoSpace);
  EXPECT_EQ(split_sample("a one", s), LineProblem::kBadValue);
  EXPECT_EQ(s.value_text, "one");
  EXPECT_EQ(split_sample("a 1 2 3", s), LineProblem::kTrailingText);
  EXPECT_EQ(s.timestamp_text, "2");
}

TEST(ExpfmtLabels, UnescapesInOrder) {
  OwnedLabels out;
  ASSERT_FALSE(parse_labels(R"( gpu = "0", note="a \"q\" \\ \n" ,)", {}, out));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, "gpu");
  EXPECT_EQ(out[0].second, "0");
  EXPECT_EQ(out[1].first, "note");
  EXPECT_EQ(out[1].second, "a \"q\" \\ \n");
  ASSERT_FALSE(parse_labels("", {}, out));
  EXPECT_TRUE(out.empty());
}

TEST(ExpfmtLabels, NamesEachProblemAndLabel) {
  OwnedLabels out;
  auto problem = [&](std::string_view text, LabelLimits limits = {}) { return parse_labels(text, limits, out); };
  EXPECT_EQ(problem(R"(,a="1")").problem, LabelProblem::kBadName);
  EXPECT_EQ(problem(R"(a:b="1")").problem, LabelProblem::kNoEquals);
  EXPECT_EQ(problem(R"(a=1)").problem, LabelProblem::kNotQuoted);
  const LabelError esc = problem(R"(a="\x")");
  EXPECT_EQ(esc.problem, LabelProblem::kBadEscape);
  EXPECT_EQ(esc.found, 'x');
  EXPECT_EQ(esc.label, "a");
  EXPECT_EQ(problem(R"(a="1)").problem, LabelProblem::kUnterminatedValue);
  EXPECT_EQ(problem(R"(a="1\)").problem, LabelProblem::kUnterminatedValue);
  EXPECT_EQ(problem(R"(a="1" b="2")").problem, LabelProblem::kNoSeparator);
  EXPECT_EQ(problem(R"(a="1",a="2")").problem, LabelProblem::kDuplicate);
  LabelLimits small;
  small.max_labels = 2;
  small.max_name_bytes = 4;
  small.max_value_bytes = 4;
  EXPECT_EQ(problem(R"(a="1",b="2",c="3")", small).problem, LabelProblem::kTooMany);
  EXPECT_EQ(problem(R"(a="12345")", small).problem, LabelProblem::kTooLong);
  EXPECT_EQ(problem(R"(abcde="1")", small).problem, LabelProblem::kTooLong);
  EXPECT_FALSE(problem(R"(abcd="1234",b="2")", small));
}

TEST(ExpfmtLabels, ManyLabelsAreReadWholeAndADuplicateAnywhereIsFound) {
  // A hostile line of 100,000 labels (a 1 MiB line allows that many) is
  // read in one pass; the duplicate check past the first few is a sort,
  // not a comparison of every pair (10^10 of them: minutes of one core).
  std::string text;
  for (int i = 0; i < 100'000; ++i) text += (i ? ",l" : "l") + std::to_string(i) + "=\"x\"";
  OwnedLabels out;
  ASSERT_FALSE(parse_labels(text, {}, out));
  EXPECT_EQ(out.size(), 100'000u);
  for (const char* dup : {",l5=\"y\"", ",l77777=\"y\""}) {
    const LabelError e = parse_labels(text + dup, {}, out);
    EXPECT_EQ(e.problem, LabelProblem::kDuplicate) << dup;
  }
  EXPECT_EQ(parse_labels(text + ",l77777=\"y\"", {}, out).label, "l77777");
}

TEST(ExpfmtComment, ClassifiesHelpTypeUnitEof) {
  Comment c = parse_comment("# HELP up Whether the target is up.");
  EXPECT_EQ(c.kind, Comment::kHelp);
  EXPECT_EQ(c.name, "up");
  EXPECT_EQ(c.text, "Whether the target is up.");
  c = parse_comment("#\tTYPE up gauge ");
  EXPECT_EQ(c.kind, Comment::kType);
  EXPECT_EQ(c.text, "gauge");
  EXPECT_EQ(parse_comment("# UNIT x_seconds seconds").kind, Comment::kUnit);
  EXPECT_EQ(parse_comment("# EOF").kind, Comment::kEof);
  EXPECT_EQ(parse_comment("# a free comment").kind, Comment::kOther);
  EXPECT_EQ(parse_comment("#").kind, Comment::kOther);
}

}  // namespace
}  // namespace gpulens::expfmt
