// Test support: a directory of one's own for one test, so that tests run in
// parallel (ctest -j, each test its own process) or repeated never share a
// file name. Created with mkdtemp under testing::TempDir() (which honours
// TEST_TMPDIR), removed with everything in it when the object goes out of
// scope. Header-only: the test binaries include it directly.
//
//   gpulens::testing::TestDir dir;
//   std::ofstream(dir.file("web-auth.yml")) << "...";
//
// Thread-safety: a plain value; one per test.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace gpulens::testing {

class TestDir {
 public:
  TestDir() {
    std::string parent = ::testing::TempDir();
    if (!parent.empty() && parent.back() == '/') parent.pop_back();
    std::string tmpl = parent + "/gpulens-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp " << tmpl << " failed";
    } else {
      path_ = buf.data();
    }
  }
  ~TestDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;

  // The directory, without a trailing slash.
  const std::string& path() const { return path_; }
  // `name` inside it.
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace gpulens::testing
