// Text from the configuration goes through the label rules: valid UTF-8
// everywhere, and the whole rule for the job label it sets.
#include <gtest/gtest.h>

#include "cli/config.h"

namespace gpulens::cli {
namespace {

std::string error_of(const std::string& yaml) {
  auto c = parse_config(yaml, "t.yaml");
  return c ? std::string("(accepted)") : c.status().message();
}

TEST(ConfigLabels, TextMustBeUtf8AndTheJobLabelFollowsTheRule) {
  EXPECT_EQ(error_of("remote_write: {job: trainer}"), "(accepted)");
  EXPECT_EQ(error_of("remote_write: {job: \"caf\xc3\xa9\"}"), "(accepted)");
  const std::string bad = error_of("remote_write: {job: \"bad\xff\"}");
  EXPECT_NE(bad.find("not valid UTF-8"), std::string::npos) << bad;
  EXPECT_NE(bad.find("remote_write.job"), std::string::npos) << bad;
  EXPECT_NE(error_of("remote_write: {job: \"" + std::string(257, 'j') + "\"}").find("longer than 256"),
            std::string::npos);
  EXPECT_EQ(error_of("remote_write: {job: \"" + std::string(256, 'j') + "\"}"), "(accepted)");
}

}  // namespace
}  // namespace gpulens::cli
