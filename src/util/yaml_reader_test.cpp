// The strict YAML reader's one rule for booleans (the configuration's) and
// its range checks, NaN included.
#include "util/yaml_reader.h"

#include <gtest/gtest.h>

#include <limits>

namespace gpulens::yaml {
namespace {

// The message of the ParseError that reading `value` with `read` throws; "" when none.
template <typename F>
std::string error_of(const std::string& value, F read) {
  const Reader r("f.yaml");
  const YAML::Node n = YAML::Load("k: " + value)["k"];
  try {
    read(r, n);
  } catch (const ParseError& e) {
    return e.message;
  }
  return "";
}

TEST(YamlReader, BooleansAreTrueOrFalseOnly) {
  const Reader r("f.yaml");
  EXPECT_TRUE(r.boolean(YAML::Load("k: true")["k"], "k"));
  EXPECT_FALSE(r.boolean(YAML::Load("k: false")["k"], "k"));
  auto boolean = [](const Reader& rd, const YAML::Node& n) { rd.boolean(n, "repeat"); };
  for (const char* v : {"yes", "no", "on", "off", "y", "True", "FALSE", "1"}) {
    EXPECT_EQ(error_of(v, boolean), "f.yaml:1:4: repeat: \"" + std::string(v) + "\": expected true or false") << v;
  }
  EXPECT_EQ(error_of("[true]", boolean), "f.yaml:1:4: repeat: expected true or false");
}

TEST(YamlReader, NaNIsNotANumberInAnyRange) {
  auto ratio = [](const Reader& rd, const YAML::Node& n) { rd.ratio(n, "burst_ratio"); };
  EXPECT_EQ(error_of(".nan", ratio), "f.yaml:1:4: burst_ratio: \".nan\" is not a finite number");
  EXPECT_EQ(error_of(".NaN", ratio), "f.yaml:1:4: burst_ratio: \".NaN\" is not a finite number");
  auto integer = [](const Reader& rd, const YAML::Node& n) { rd.integer(n, "gpus", 1, 64); };
  EXPECT_EQ(error_of(".nan", integer), "f.yaml:1:4: gpus: \".nan\" is not a finite number");
  EXPECT_EQ(error_of(".inf", ratio), "f.yaml:1:4: burst_ratio: \".inf\" is not a finite number");
  EXPECT_EQ(error_of("hot", ratio), "f.yaml:1:4: burst_ratio: expected a number");
  EXPECT_EQ(error_of("1.5", ratio), "f.yaml:1:4: burst_ratio: 1.5 is out of range [0, 1]");
  EXPECT_EQ(error_of("0.5", ratio), "");
}

// An infinity is refused even where the range is open at that end.
TEST(YamlReader, InfinityIsNotANumberInAnOpenRange) {
  auto open = [](const Reader& rd, const YAML::Node& n) {
    rd.number(n, "rate", -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
  };
  EXPECT_EQ(error_of(".inf", open), "f.yaml:1:4: rate: \".inf\" is not a finite number");
  EXPECT_EQ(error_of("-.Inf", open), "f.yaml:1:4: rate: \"-.Inf\" is not a finite number");
  EXPECT_EQ(error_of("1e308", open), "");
}

}  // namespace
}  // namespace gpulens::yaml
