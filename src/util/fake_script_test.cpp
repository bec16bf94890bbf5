// The stand-in libraries' script pieces: tokens with quotes and comments,
// key=value, codes by name with or without their prefix, device numbers
// refused unless exact, lines counted for errors, the file by its variable.
#include "util/fake_script.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "util/testing/temp_dir.h"

namespace gpulens::script {
namespace {

using V = std::vector<std::string>;

TEST(FakeScript, Tokens) {
  EXPECT_EQ(tokens(R"(device 0 name="NVIDIA H100" # x)"), (V{"device", "0", "name=NVIDIA H100"}));
  EXPECT_EQ(tokens(""), V{});
  EXPECT_EQ(tokens("   \t  "), V{});
  EXPECT_EQ(tokens("# only a comment"), V{});
  EXPECT_EQ(tokens(R"(a "" b)"), (V{"a", "", "b"}));           // an empty quoted token is a token
  EXPECT_EQ(tokens(R"(name="a # b")"), (V{"name=a # b"}));     // '#' inside quotes is text
  EXPECT_EQ(tokens("a\tb  c"), (V{"a", "b", "c"}));
  EXPECT_EQ(tokens(std::string("x\x01y \xff", 5)), (V{std::string("x\x01y"), std::string("\xff")}));
  EXPECT_EQ(tokens(R"(open "quote never closed)"), (V{"open", "quote never closed"}));
}

TEST(FakeScript, KeyValue) {
  std::string k, v;
  ASSERT_TRUE(split_kv("mem=80", k, v));
  EXPECT_EQ(k, "mem");
  EXPECT_EQ(v, "80");
  ASSERT_TRUE(split_kv("a=b=c", k, v));
  EXPECT_EQ(k, "a");
  EXPECT_EQ(v, "b=c");
  ASSERT_TRUE(split_kv("=", k, v));
  EXPECT_EQ(k, "");
  EXPECT_EQ(v, "");
  EXPECT_FALSE(split_kv("novalue", k, v));
  EXPECT_FALSE(split_kv("", k, v));
}

TEST(FakeScript, CodesByName) {
  const std::map<std::string, int> codes{{"SUCCESS", 0}, {"TIMEOUT", 10}};
  EXPECT_EQ(code_named(codes, "NVML_ERROR_", "TIMEOUT"), 10);
  EXPECT_EQ(code_named(codes, "NVML_ERROR_", "NVML_ERROR_TIMEOUT"), 10);
  EXPECT_EQ(code_named(codes, "NVML_ERROR_", "SUCCESS"), 0);
  EXPECT_EQ(code_named(codes, "NVML_ERROR_", "timeout"), -1);
  EXPECT_EQ(code_named(codes, "NVML_ERROR_", "NVML_ERROR_"), -1);
  EXPECT_EQ(code_named(codes, "NVML_ERROR_", ""), -1);
}

TEST(FakeScript, DeviceNumbers) {
  EXPECT_EQ(device_number("0", 2), 0);
  EXPECT_EQ(device_number("1", 2), 1);
  EXPECT_EQ(device_number("2", 2), -1);
  EXPECT_EQ(device_number("0", 0), -1);
  EXPECT_EQ(device_number("", 2), -1);
  EXPECT_EQ(device_number("-1", 2), -1);
  EXPECT_EQ(device_number("+1", 2), -1);
  EXPECT_EQ(device_number(" 1", 2), -1);
  EXPECT_EQ(device_number("1x", 2), -1);
  EXPECT_EQ(device_number("*", 2), -1);
  EXPECT_EQ(device_number("99999999999999999999", 2), -1);
}

TEST(FakeScript, LinesSkipBlanksAndCountForErrors) {
  Lines lines("gpu 0\n\n   # comment\n\tvalue 0 x 1\nbad");
  std::vector<std::string> t;
  std::string error;
  ASSERT_TRUE(lines.next(t));
  EXPECT_EQ(t, (V{"gpu", "0"}));
  ASSERT_TRUE(lines.next(t));
  EXPECT_EQ(t, (V{"value", "0", "x", "1"}));
  EXPECT_EQ(lines.line(), "\tvalue 0 x 1");
  ASSERT_TRUE(lines.next(t));
  EXPECT_FALSE(lines.fail(error, "cannot understand 'bad'"));
  EXPECT_EQ(error, "line 5: cannot understand 'bad'");
  EXPECT_FALSE(lines.next(t));
  Lines empty("");
  EXPECT_FALSE(empty.next(t));
}

TEST(FakeScript, FileNamedByTheEnvironment) {
  std::string text, path;
  ::unsetenv("GPULENS_FAKE_SCRIPT_TEST");
  EXPECT_FALSE(read_script_file("GPULENS_FAKE_SCRIPT_TEST", text, path));
  ::setenv("GPULENS_FAKE_SCRIPT_TEST", "/nonexistent/script", 1);
  EXPECT_FALSE(read_script_file("GPULENS_FAKE_SCRIPT_TEST", text, path));
  const gpulens::testing::TestDir dir;  // its own directory: tests run in parallel
  const std::string name = dir.file("script");
  const std::string body("gpu 0\n\0binary\xff", 14);
  std::ofstream(name, std::ios::binary) << body;
  ::setenv("GPULENS_FAKE_SCRIPT_TEST", name.c_str(), 1);
  ASSERT_TRUE(read_script_file("GPULENS_FAKE_SCRIPT_TEST", text, path));
  EXPECT_EQ(text, body);
  EXPECT_EQ(path, name);
  ::unsetenv("GPULENS_FAKE_SCRIPT_TEST");
}

}  // namespace
}  // namespace gpulens::script
