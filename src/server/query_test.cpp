// Query strings: decoding, and refusal of parameters a route does not take.
#include "server/query.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

TEST(Query, SplitsAndDecodes) {
  auto q = parse_query("series=a%2Cb&range=5m&gpu=", {"series", "range", "gpu"});
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->get("series"), "a,b");
  EXPECT_EQ(q->get("range"), "5m");
  EXPECT_TRUE(q->has("gpu"));
  EXPECT_EQ(q->get("gpu"), "");
  EXPECT_FALSE(q->has("step"));
}

TEST(Query, RefusesUnknownParametersByName) {
  auto q = parse_query("rnage=5m", {"range"});
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "unknown parameter \"rnage\" (this route takes range)");
  auto none = parse_query("x=1", {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("takes none"), std::string::npos);
}

TEST(Query, RefusesRepeatedParameters) {
  auto q = parse_query("gpu=1&gpu=2", {"gpu"});
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("twice"), std::string::npos);
}

TEST(Query, EmptyIsFine) { EXPECT_TRUE(parse_query("", {"gpu"}).ok()); }

}  // namespace
}  // namespace gpulens
