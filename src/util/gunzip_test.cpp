// The bounded gzip inflater: what zlib writes comes back byte for byte
// (one member or several), and bad input is an error value that says
// corrupt, truncated or too large, with the output bounded by the limit.
#include "util/gunzip.h"

#include <gtest/gtest.h>
#include <zlib.h>

namespace gpulens {
namespace {

std::string gzip_of(const std::string& s) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, s.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  z.avail_in = static_cast<uInt>(s.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string binary_text(size_t n) {
  std::string s;
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1103515245 + 12345;
    s += (i % 3 == 0) ? static_cast<char>(x >> 24) : "metric{a=\"b\"} 1\n"[i % 16];
  }
  return s;
}

TEST(Gunzip, OneMemberComesBackByteForByte) {
  for (const std::string& plain : {std::string(), std::string("\0\x01\x1b\x7f\xff", 5), binary_text(100000)}) {
    std::string out = "old contents";
    const Gunzip g = gunzip(gzip_of(plain), 1 << 20, out, 64);
    ASSERT_EQ(g.error, GunzipError::kNone) << g.detail;
    EXPECT_EQ(out, plain);
    EXPECT_EQ(g.bytes, plain.size());
    EXPECT_GE(out.capacity(), out.size() + 64);
  }
}

TEST(Gunzip, SeveralMembersInflateInTurn) {
  const std::string a = binary_text(5000), b = "second member\n", c;
  std::string out;
  const Gunzip g = gunzip(gzip_of(a) + gzip_of(b) + gzip_of(c), 1 << 20, out, 32);
  ASSERT_EQ(g.error, GunzipError::kNone) << g.detail;
  EXPECT_EQ(out, a + b + c);
  EXPECT_GE(out.capacity(), out.size() + 32);
}

TEST(Gunzip, CorruptInputIsAnError) {
  std::string out;
  Gunzip g = gunzip("not gzip", 1 << 20, out);
  EXPECT_EQ(g.error, GunzipError::kCorrupt);
  EXPECT_FALSE(g.detail.empty());  // zlib's "incorrect header check"
  std::string gz = gzip_of(binary_text(4000));
  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 8] ^= 0x5a;
  EXPECT_EQ(gunzip(bad_crc, 1 << 20, out).error, GunzipError::kCorrupt);
  std::string bad_size = gz;
  bad_size[bad_size.size() - 4] ^= 0x01;  // a lying ISIZE trailer
  EXPECT_EQ(gunzip(bad_size, 1 << 20, out).error, GunzipError::kCorrupt);
  EXPECT_EQ(gunzip(gz + "trailing garbage", 1 << 20, out).error, GunzipError::kCorrupt);
  std::string flipped = gz;
  flipped[gz.size() / 2] ^= 0xff;
  EXPECT_NE(gunzip(flipped, 1 << 20, out).error, GunzipError::kNone);
}

TEST(Gunzip, DataCutShortIsTruncated) {
  std::string out;
  const std::string gz = gzip_of(binary_text(4000));
  for (size_t n : {size_t{0}, size_t{2}, size_t{10}, size_t{20}, gz.size() / 2, gz.size() - 1}) {
    EXPECT_EQ(gunzip(gz.substr(0, n), 1 << 20, out).error, GunzipError::kTruncated) << n << " bytes";
  }
  // A whole member and then half of another.
  EXPECT_EQ(gunzip(gz + gz.substr(0, 30), 1 << 20, out).error, GunzipError::kTruncated);
}

TEST(Gunzip, TheLimitBoundsTheOutput) {
  const std::string plain(100000, '#');
  const std::string gz = gzip_of(plain);
  std::string out;
  EXPECT_EQ(gunzip(gz, plain.size(), out).error, GunzipError::kNone);  // exactly the limit
  EXPECT_EQ(out.size(), plain.size());
  Gunzip g = gunzip(gz, plain.size() - 1, out);
  EXPECT_EQ(g.error, GunzipError::kTooLarge);
  EXPECT_GT(g.bytes, plain.size() - 1);
  // A bomb: 64 MiB of zeros from ~64 KiB of gzip, stopped at 1 MiB with
  // no more than that held.
  const std::string bomb = gzip_of(std::string(64 << 20, '\0'));
  g = gunzip(bomb, 1 << 20, out);
  EXPECT_EQ(g.error, GunzipError::kTooLarge);
  EXPECT_LE(out.size(), (1u << 20) + 1);
  // Several members: the limit counts them together.
  g = gunzip(gz + gz, plain.size() + 10, out);
  EXPECT_EQ(g.error, GunzipError::kTooLarge);
  EXPECT_EQ(gunzip(gz + gz, 2 * plain.size(), out).error, GunzipError::kNone);
  EXPECT_EQ(gunzip(gzip_of(""), 0, out).error, GunzipError::kNone);
  EXPECT_EQ(gunzip(gzip_of("x"), 0, out).error, GunzipError::kTooLarge);
}

}  // namespace
}  // namespace gpulens
