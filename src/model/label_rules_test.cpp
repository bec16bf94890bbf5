// The label rules: each limit on both sides, each reserved name, UTF-8 edge cases.
#include "model/label_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace gpulens {
namespace {

using L = std::vector<std::pair<std::string, std::string>>;

TEST(LabelRules, Utf8AcceptsValidAndRefusesBroken) {
  EXPECT_TRUE(valid_utf8(""));
  EXPECT_TRUE(valid_utf8("plain ascii"));
  EXPECT_TRUE(valid_utf8("\xc3\xa9t\xc3\xa9"));          // été
  EXPECT_TRUE(valid_utf8("\xe4\xb8\xad\xe6\x96\x87"));   // 中文
  EXPECT_TRUE(valid_utf8("\xf0\x9f\x98\x80"));           // U+1F600
  EXPECT_TRUE(valid_utf8("\xf4\x8f\xbf\xbf"));           // U+10FFFF
  EXPECT_FALSE(valid_utf8("\xff"));
  EXPECT_FALSE(valid_utf8("\x80"));                      // lone continuation
  EXPECT_FALSE(valid_utf8("\xc3"));                      // truncated
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));                  // overlong '/'
  EXPECT_FALSE(valid_utf8("\xe0\x80\xaf"));              // overlong 3-byte
  EXPECT_FALSE(valid_utf8("\xf0\x80\x80\xaf"));          // overlong 4-byte
  EXPECT_FALSE(valid_utf8("\xed\xa0\x80"));              // surrogate U+D800
  EXPECT_FALSE(valid_utf8("\xf4\x90\x80\x80"));          // beyond U+10FFFF
  EXPECT_FALSE(valid_utf8("ok\xc3("));                   // bad continuation
}

TEST(LabelRules, NameGrammar) {
  EXPECT_TRUE(valid_label_name("a"));
  EXPECT_TRUE(valid_label_name("_x9"));
  EXPECT_TRUE(valid_label_name("gpu_uuid"));
  EXPECT_FALSE(valid_label_name(""));
  EXPECT_FALSE(valid_label_name("9x"));
  EXPECT_FALSE(valid_label_name("a-b"));
  EXPECT_FALSE(valid_label_name("a.b"));
  EXPECT_FALSE(valid_label_name("a:b"));  // colons are for metric names only
  EXPECT_TRUE(valid_metric_name("a:b_c"));
  EXPECT_FALSE(valid_metric_name("1a"));
}

TEST(LabelRules, ReservedNames) {
  LabelLimits lim;
  EXPECT_EQ(check_label("", "v", lim).problem, LabelProblem::kReserved);
  const LabelCheck name = check_label("__name__", "x", lim);
  EXPECT_EQ(name.problem, LabelProblem::kReserved);
  EXPECT_NE(name.message.find("__name__"), std::string::npos) << name.message;
  EXPECT_EQ(check_label("le", "1", lim, LabelKind::kHistogram).problem, LabelProblem::kReserved);
  EXPECT_TRUE(check_label("le", "1", lim, LabelKind::kGauge));
  EXPECT_EQ(check_label("quantile", "0.5", lim, LabelKind::kSummary).problem, LabelProblem::kReserved);
  EXPECT_TRUE(check_label("quantile", "0.5", lim, LabelKind::kCounter));
}

TEST(LabelRules, LengthLimitsBothSides) {
  LabelLimits lim;
  lim.max_name_bytes = 8;
  lim.max_value_bytes = 4;
  EXPECT_TRUE(check_label(std::string(8, 'a'), "abcd", lim));
  EXPECT_EQ(check_label(std::string(9, 'a'), "abcd", lim).problem, LabelProblem::kLength);
  const LabelCheck v = check_label("pod", "abcde", lim);
  EXPECT_EQ(v.problem, LabelProblem::kLength);
  EXPECT_NE(v.message.find("\"pod\""), std::string::npos) << v.message;
}

TEST(LabelRules, CountLimitBothSides) {
  LabelLimits lim;
  lim.max_labels = 3;
  L three = {{"a", "1"}, {"b", "2"}, {"c", "3"}};
  EXPECT_TRUE(check_labels(three, lim));
  three.emplace_back("d", "4");
  EXPECT_EQ(check_labels(three, lim).problem, LabelProblem::kCount);
}

TEST(LabelRules, LabelSetNamesTheBadLabel) {
  LabelLimits lim;
  const LabelCheck c = check_labels({{"pod", "ok"}, {"model", "bad\xff"}}, lim);
  EXPECT_EQ(c.problem, LabelProblem::kUtf8);
  EXPECT_NE(c.message.find("\"model\""), std::string::npos) << c.message;
  EXPECT_EQ(check_labels({{"a", "1"}, {"a", "2"}}, lim).problem, LabelProblem::kDuplicate);
  const LabelCheck n = check_labels({{"bad\x1b]0;x", "v"}}, lim);
  EXPECT_EQ(n.problem, LabelProblem::kName);
  EXPECT_EQ(n.message.find('\x1b'), std::string::npos) << "the escape is written \\x1b, not raw";
  EXPECT_NE(n.message.find("\\x1b"), std::string::npos) << n.message;
}

TEST(LabelRules, Values) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(check_value(0, LabelKind::kCounter));
  EXPECT_TRUE(check_value(1e300, LabelKind::kCounter));
  EXPECT_EQ(check_value(-1, LabelKind::kCounter).problem, LabelProblem::kValue);
  EXPECT_EQ(check_value(inf, LabelKind::kCounter).problem, LabelProblem::kValue);
  EXPECT_EQ(check_value(-inf, LabelKind::kCounter).problem, LabelProblem::kValue);
  EXPECT_TRUE(check_value(-1, LabelKind::kGauge));
  EXPECT_EQ(check_value(inf, LabelKind::kGauge).problem, LabelProblem::kValue);
  EXPECT_TRUE(check_value(std::nan(""), LabelKind::kCounter)) << "NaN is absent, not invalid";
}

TEST(LabelRules, Reasons) {
  EXPECT_EQ(reason(LabelProblem::kUtf8), "label_utf8");
  EXPECT_EQ(reason(LabelProblem::kValue), "invalid_value");
  EXPECT_EQ(reason(LabelProblem::kNone), "");
}

}  // namespace
}  // namespace gpulens
