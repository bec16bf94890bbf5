// Stacks captures: the waits found in the main thread, errors, rendering.
#include "agent/profile_stacks.h"

#include <gtest/gtest.h>

namespace gpulens::cli {
namespace {

std::string capture(std::string_view main_frames) {
  return std::string(R"({"kind":"stacks","hz":100,"duration_s":2.0,"rounds":200,"threads":[)"
                     R"({"name":"MainThread","main":true,"samples":200,"frames":[)") +
         std::string(main_frames) +
         R"(]},{"name":"worker","main":false,"samples":200,"frames":[)"
         R"({"function":"_worker_loop","file":"/x/torch/utils/data/_utils/worker.py","line":3,"self":1,"total":1}]}]})";
}

TEST(ProfileStacks, DataLoaderWait) {
  auto a = analyse_stacks(capture(
      R"({"function":"<module>","file":"train.py","line":30,"self":0,"total":1},)"
      R"({"function":"__next__","file":"/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py","line":628,"self":0,"total":0.8},)"
      R"({"function":"step","file":"train.py","line":12,"self":0.2,"total":0.2})"));
  ASSERT_TRUE(a) << a.status().message();
  EXPECT_DOUBLE_EQ(a->dataloader_wait, 0.8);
  EXPECT_EQ(a->verdict, "dataloader");
  std::string text = stacks_text(*a);
  EXPECT_NE(text.find("waits on the DataLoader"), std::string::npos) << text;
  EXPECT_NE(text.find("train.py:12"), std::string::npos);
  std::string json = stacks_json(*a, R"({"id":"p1"})");
  EXPECT_NE(json.find("\"verdict\":\"dataloader\""), std::string::npos) << json;
}

TEST(ProfileStacks, WorkerThreadsDoNotCount) {
  auto a = analyse_stacks(capture(R"({"function":"mm_loop","file":"train.py","line":5,"self":0.9,"total":1})"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->dataloader_wait, 0);
  EXPECT_EQ(a->verdict, "");
  EXPECT_NE(stacks_json(*a, "{}").find("\"verdict\":null"), std::string::npos);
}

TEST(ProfileStacks, DeviceSync) {
  auto a = analyse_stacks(capture(
      R"({"function":"synchronize","file":"/p/torch/cuda/__init__.py","line":566,"self":0.5,"total":0.5})"));
  ASSERT_TRUE(a);
  EXPECT_EQ(a->verdict, "device_sync");
}

TEST(ProfileStacks, Errors) {
  EXPECT_NE(analyse_stacks("{").status().message().find("not JSON"), std::string::npos);
  EXPECT_NE(analyse_stacks("{}").status().message().find("threads"), std::string::npos);
  EXPECT_NE(analyse_stacks(R"({"threads":[{"name":"x"}]})").status().message().find("frames"), std::string::npos);
}

}  // namespace
}  // namespace gpulens::cli
