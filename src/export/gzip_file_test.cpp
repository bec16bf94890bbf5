// GzipFileBuf writes a gzip file that zlib reads back to the same text,
// across its internal block size; a path that cannot be written is an error.
#include "export/gzip_file.h"

#include <gtest/gtest.h>

#include "util/testing/temp_dir.h"
#include <stdlib.h>
#include <zlib.h>

#include <filesystem>
#include <ostream>
#include <string>

namespace gpulens {
namespace {

std::string gunzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return "<cannot open>";
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

TEST(GzipFile, RoundTripsTextLargerThanItsBuffers) {
  gpulens::testing::TestDir dir;
  const std::string path = dir.path() + "/rec.om.gz";
  std::string text;
  for (int i = 0; text.size() < (3u << 20); ++i) {
    text += "gpu_power_watts{gpu=\"" + std::to_string(i % 8) + "\"} " + std::to_string(i * 0.37) + " " +
            std::to_string(1764639600 + i) + "\n";
  }
  text += "# EOF\n";
  GzipFileBuf buf;
  ASSERT_TRUE(buf.open(path).is_ok());
  std::ostream out(&buf);
  out << text.substr(0, 10);      // small writes go through the buffer
  out << text.substr(10);         // a large one straight to deflate
  out.put('\n');
  ASSERT_TRUE(out.good());
  ASSERT_TRUE(buf.close().is_ok());
  EXPECT_EQ(gunzip_file(path), text + "\n");
  EXPECT_EQ(buf.bytes_in(), text.size() + 1);
  EXPECT_EQ(buf.bytes_out(), std::filesystem::file_size(path));
  EXPECT_LT(buf.bytes_out(), text.size() / 4) << "a recording compresses";
}

TEST(GzipFile, UnwritablePathIsAnError) {
  gpulens::testing::TestDir dir;
  GzipFileBuf buf;
  const Status s = buf.open(dir.path() + "/no/such/dir/rec.om.gz");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("no/such/dir/rec.om.gz"), std::string::npos) << s.message();
}

TEST(GzipFile, NameDecidesCompression) {
  EXPECT_TRUE(gzip_name("rec.om.gz"));
  EXPECT_TRUE(gzip_name("/tmp/a.gz"));
  EXPECT_FALSE(gzip_name("rec.om"));
  EXPECT_FALSE(gzip_name(".gz"));
  EXPECT_FALSE(gzip_name("-"));
}

}  // namespace
}  // namespace gpulens
