// Tests that the streaming Tokenizer (which reuses the last line's parsed
// prefix) answers exactly as tokenize() does, line by line, on the real logs
// and on lines built to trip the shortcut.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analyze/nccl/line.h"

namespace gpulens::nccl {
namespace {

namespace fs = std::filesystem;

// Feeds lines through one Tokenizer and compares every field with tokenize().
void expect_same_as_tokenize(const std::vector<std::string>& lines, const std::string& what) {
  Tokenizer t;
  for (size_t i = 0; i < lines.size(); ++i) {
    LogLine a, b;
    const bool ra = tokenize(lines[i], a);
    const bool rb = t.next(lines[i], b);
    SCOPED_TRACE(what + " line " + std::to_string(i + 1) + ": " + lines[i]);
    ASSERT_EQ(ra, rb);
    if (!ra) continue;
    EXPECT_EQ(a.level, b.level);
    EXPECT_EQ(a.host, b.host);
    EXPECT_EQ(a.pid, b.pid);
    EXPECT_EQ(a.dev, b.dev);
    EXPECT_EQ(a.where, b.where);
    EXPECT_EQ(a.message, b.message);
    // The views point into the line given, not into an earlier one.
    if (!b.message.empty()) {
      EXPECT_GE(b.message.data(), lines[i].data());
      EXPECT_LE(b.message.data() + b.message.size(), lines[i].data() + lines[i].size());
    }
    if (!b.host.empty()) {
      EXPECT_GE(b.host.data(), lines[i].data());
    }
  }
}

TEST(Tokenizer, AgreesWithTokenizeOnEveryRealLog) {
  const fs::path dir = fs::path(GPULENS_SOURCE_DIR) / "tests" / "data" / "nccl";
  std::vector<std::string> all;
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".log") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    expect_same_as_tokenize(lines, e.path().filename().string());
    all.insert(all.end(), lines.begin(), lines.end());
    ++files;
  }
  EXPECT_GE(files, 20);
  expect_same_as_tokenize(all, "all logs in a row");
}

TEST(Tokenizer, SamePrefixWithoutMarkerOrWithAnotherLevel) {
  expect_same_as_tokenize(
      {
          "gpu2:46654:46655 [1] NCCL INFO rank 1 nranks 8",
          "gpu2:46654:46655 [1] NCCL INFORMATION is not a marker",  // marker search from the start
          "gpu2:46654:46655 [1] NCCL INFO",                          // marker at the end of the line
          "gpu2:46654:46655 [1] NCCL WARN Connect failed",
          "gpu2:46654:46655 [1] NCCL TRACE x",
          "gpu2:46654:46655 [1] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect failed",
          "gpu2:46654:46655 [1] misc/socket.cc:483 NCCL WARN again",
          "gpu2:46654:46655 [1] NCCL INFO back",
          "gpu2:46654:46655 [1]",  // the prefix alone
          "gpu2:46654:46655 [1] ",
          "gpu2:46654:46655 [1] x NCCL INFO later marker",
          "NCCL INFO no prefix",
          "NCCL INFO no prefix again",
          "gpu3:1:2 [0] NCCL INFO ok | gpu3:1:2 [0] NCCL INFO ok",  // CloudWatch copy
          "gpu3:1:2 [0] NCCL INFO NCCL INFO NCCL INFO",
          "h:99999999999999999999999:1 [0] NCCL INFO x",
          "h:99999999999999999999999:1 [0] NCCL INFO y",
      },
      "constructed");
}

}  // namespace
}  // namespace gpulens::nccl
