// Recordings as users keep them: gzip-compressed (read by magic, whatever
// the name; several members; cut short) and cut mid-line, never read as a
// window starting in 1970.
#include <gtest/gtest.h>

#include "util/testing/temp_dir.h"
#include <stdlib.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "diagnose/replay_input.h"

namespace gpulens::diagnose {
namespace {

constexpr int64_t kStart = 1764639600;  // 2025-12-02

std::string recording(int samples, bool eof = true) {
  std::string text = "# TYPE gpu_utilization_ratio gauge\n";
  for (int i = 0; i < samples; ++i) {
    text += "gpu_utilization_ratio{gpu=\"0\"} 0." + std::to_string(i % 10) + " " + std::to_string(kStart + i) + "\n";
  }
  if (eof) text += "# EOF\n";
  return text;
}

std::string gzip(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(out.size() - z.avail_out);
  deflateEnd(&z);
  return out;
}

std::string write(const gpulens::testing::TestDir& d, const std::string& name, const std::string& bytes) {
  const std::string path = d.path() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

const Series& util(const SignalSet& set) { return set.hosts.at(0).gpus.at(0).sig(GpuSig::kGpuUtil); }

TEST(ReplayGzip, ReadByMagicWhateverTheName) {
  gpulens::testing::TestDir d;
  const std::string text = recording(600);
  for (const char* name : {"rec.om.gz", "rec.om"}) {
    ReplayInfo info;
    Result<SignalSet> set = load_replay(write(d, name, gzip(text)), info);
    ASSERT_TRUE(set.ok()) << set.status().message();
    EXPECT_TRUE(info.stats.saw_eof);
    EXPECT_TRUE(info.stats.warnings.empty()) << info.stats.warnings.front();
    ASSERT_EQ(util(*set).size(), 600u) << name;
    EXPECT_EQ(util(*set).front().t_ms, kStart * 1000);
    EXPECT_DOUBLE_EQ(util(*set)[7].v, 0.7);
  }
}

TEST(ReplayGzip, ConcatenatedMembersReadAsOne) {
  gpulens::testing::TestDir d;
  std::string a = recording(300, false), b;
  for (int i = 300; i < 400; ++i) b += "gpu_utilization_ratio{gpu=\"0\"} 0.5 " + std::to_string(kStart + i) + "\n";
  b += "# EOF\n";
  ReplayInfo info;
  Result<SignalSet> set = load_replay(write(d, "cat.om.gz", gzip(a) + gzip(b)), info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(util(*set).size(), 400u);
}

TEST(ReplayGzip, CutShortReadsUpToTheLastCompleteSample) {
  gpulens::testing::TestDir d;
  const std::string text = recording(20000);
  const std::string gz = gzip(text);
  ReplayInfo info;
  Result<SignalSet> set = load_replay(write(d, "cut.om.gz", gz.substr(0, gz.size() / 2)), info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  bool said_cut = false;
  for (const auto& w : info.stats.warnings) said_cut |= w.find("gzip stream cut short") != std::string::npos;
  EXPECT_TRUE(said_cut);
  const Series& s = util(*set);
  ASSERT_GT(s.size(), 100u);
  EXPECT_LT(s.size(), 20000u);
  EXPECT_EQ(s.front().t_ms, kStart * 1000);
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i].t_ms, (kStart + static_cast<int64_t>(i)) * 1000) << i;
}

TEST(ReplayGzip, CorruptDataIsAnErrorNamingTheFile) {
  gpulens::testing::TestDir d;
  std::string gz = gzip(recording(2000));
  for (size_t i = 20; i < 60; ++i) gz[i] = static_cast<char>(gz[i] ^ 0x5a);
  ReplayInfo info;
  Result<SignalSet> set = load_replay(write(d, "bad.om.gz", gz), info);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("bad.om.gz"), std::string::npos) << set.status().message();
  EXPECT_NE(set.status().message().find("gzip"), std::string::npos) << set.status().message();
}

// The bug users hit: a copy stopped mid-timestamp ("... 0.7 17") parsed as
// 17 s after 1970, stretching the window to 56 years.
TEST(ReplayTruncated, LastLineCutMidTimestampIsIgnored) {
  gpulens::testing::TestDir d;
  std::string text = recording(50, false) + "gpu_utilization_ratio{gpu=\"0\"} 0.7 17";
  for (bool zipped : {false, true}) {
    ReplayInfo info;
    Result<SignalSet> set = load_replay(write(d, zipped ? "t.om.gz" : "t.om", zipped ? gzip(text) : text), info);
    ASSERT_TRUE(set.ok()) << set.status().message();
    const Series& s = util(*set);
    ASSERT_EQ(s.size(), 50u);
    EXPECT_EQ(s.front().t_ms, kStart * 1000) << "no sample from 1970";
    ASSERT_FALSE(info.stats.warnings.empty());
    EXPECT_NE(info.stats.warnings[0].find(":52: last line cut short"), std::string::npos) << info.stats.warnings[0];
  }
}

}  // namespace
}  // namespace gpulens::diagnose
