// Tests for reading damaged input: empty, binary, truncated, overlong, missing.
#include "analyze/nccl/reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace gpulens::nccl {
namespace {

// Runs read_stream over text through a real FILE*.
Result<Report> via_file(const std::string& text, InputStats* stats = nullptr) {
  std::FILE* f = std::tmpfile();
  std::fwrite(text.data(), 1, text.size(), f);
  std::rewind(f);
  Analyzer a;
  Status s = read_stream(f, "t.log", a);
  std::fclose(f);
  if (!s) return s;
  if (stats) *stats = a.input();
  return a.finish();
}

TEST(Reader, EmptyInputIsAnError) {
  auto r = analyze_text("");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("empty input"), std::string::npos);
}

TEST(Reader, NoNcclLinesIsAnErrorThatSaysSo) {
  auto r = analyze_text("hello\nworld\n");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no NCCL lines"), std::string::npos);
  EXPECT_NE(r.status().message().find("2 lines"), std::string::npos);
}

TEST(Reader, BinaryGarbageIsSkippedAndCounted) {
  static const char kGarbage[] = "\x7f" "ELF\x02\x01\x01\0\0\0 NCCL INFO Using network IB\n";
  std::string garbage(kGarbage, sizeof kGarbage - 1);
  auto only = analyze_text(garbage);
  ASSERT_FALSE(only.ok());
  EXPECT_NE(only.status().message().find("binary"), std::string::npos);

  auto mixed = analyze_text(garbage + "h:1:2 [0] NCCL INFO Using network Socket\n");
  ASSERT_TRUE(mixed.ok());
  EXPECT_EQ(mixed->input.binary_lines, 1u);
  EXPECT_EQ(mixed->inter_node_transport, "Socket");
}

TEST(Reader, TruncatedLastLineIsRead) {
  InputStats stats;
  auto r = via_file("h:1:2 [0] NCCL INFO Using network Socket\nh:1:2 [0] NCCL INFO Channel 00/0 : 8[0] -> 0[", &stats);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(stats.lines, 2u);
  EXPECT_EQ(r->input.unparsed_channel_lines, 1u);
  EXPECT_EQ(r->inter_node_transport, "Socket");
}

TEST(Reader, OverlongLinesAreCutAndCounted) {
  std::string text = "h:1:2 [0] NCCL INFO Using network IB\n" + std::string(3 * kMaxLine, 'x') +
                     "\nh:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB e:1<0>\n";
  InputStats stats;
  auto r = via_file(text, &stats);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(stats.overlong_lines, 1u);
  EXPECT_EQ(stats.lines, 3u);
  EXPECT_EQ(r->inter_node_transport, "RoCE");
}

TEST(Reader, LinesAcrossBufferBoundariesAreWhole) {
  // 1 MiB buffer: put NCCL lines across the boundary.
  std::string line = "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n";
  std::string text;
  while (text.size() < (3u << 20)) text += line;
  InputStats stats;
  auto r = via_file(text, &stats);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(stats.lines, text.size() / line.size());
  EXPECT_EQ(stats.nccl_lines, stats.lines);
  EXPECT_EQ(r->input.unparsed_channel_lines, 0u);
}

TEST(Reader, MissingFileNamesTheFile) {
  auto r = analyze_paths({"/nonexistent/nccl.log"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/nccl.log"), std::string::npos);
}

TEST(Reader, CrLfLineEndings) {
  auto r = analyze_text("h:1:2 [0] NCCL INFO Using network Socket\r\nh:1:2 [0] NCCL INFO NCCL version 2.7.8+cuda10.2\r\n");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nccl_version, "2.7.8+cuda10.2");
}

}  // namespace
}  // namespace gpulens::nccl

namespace gpulens::nccl {
namespace {

// Every real log, cut at many points and with bytes overwritten, must give a
// report or a clear error, with sane numbers (run under the sanitizers in CI).
TEST(Reader, DamagedRealLogsNeverCrash) {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(GPULENS_SOURCE_DIR) / "tests" / "data" / "nccl";
  std::uint32_t seed = 12345;
  auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
  int logs = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".log") continue;
    ++logs;
    std::ifstream in(e.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (int i = 0; i < 40; ++i) {
      std::string damaged = text.substr(0, next() % (text.size() + 1));
      for (int k = 0; k < 4 && !damaged.empty(); ++k) damaged[next() % damaged.size()] = static_cast<char>(next());
      auto r = analyze_text(damaged);
      if (!r.ok()) {
        EXPECT_FALSE(r.status().message().empty());
        continue;
      }
      EXPECT_GT(r->ranks.value_or(1), 0);
      EXPECT_GT(r->nodes.value_or(1), 0);
      EXPECT_GT(r->channels.value_or(1), 0);
      EXPECT_FALSE(r->inter_node_transport.empty());
    }
  }
  EXPECT_GE(logs, 25);
}

}  // namespace
}  // namespace gpulens::nccl
