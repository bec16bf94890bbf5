// The base64 codec: RFC 4648's test vectors both ways, every byte value,
// and malformed text refused with a reason instead of decoded partly.
#include "util/base64.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

TEST(Base64, Rfc4648Vectors) {
  const std::pair<const char*, const char*> kVectors[] = {
      {"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},        {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"},
  };
  for (const auto& [plain, coded] : kVectors) {
    EXPECT_EQ(base64_encode(plain), coded);
    auto d = base64_decode(coded);
    ASSERT_TRUE(d.ok()) << coded << ": " << d.status().message();
    EXPECT_EQ(*d, plain);
    auto u = base64url_decode(coded);
    ASSERT_TRUE(u.ok()) << coded;
    EXPECT_EQ(*u, plain);
  }
}

TEST(Base64, EveryByteValueRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t n = 0; n <= all.size(); n += 37) {
    const std::string bytes = all.substr(0, n) + std::string("\0\x01\x7f\xff", 4);
    const std::string coded = base64_encode(bytes);
    EXPECT_EQ(coded.size() % 4, 0u);
    auto d = base64_decode(coded);
    ASSERT_TRUE(d.ok()) << d.status().message();
    EXPECT_EQ(*d, bytes);
  }
  EXPECT_EQ(base64_encode(std::string("\xff\xef\xbe", 3)), "/+++");
}

TEST(Base64, StrictDecodeRefusesMalformedText) {
  EXPECT_EQ(base64_decode("Zm9").status().message(), "base64 length 3 is not a multiple of 4");
  EXPECT_FALSE(base64_decode("Zg=").ok());
  EXPECT_FALSE(base64_decode("Z===").ok());                   // three pads: a lone 6-bit digit
  EXPECT_FALSE(base64_decode("====").ok());
  EXPECT_FALSE(base64_decode("Zg=a").ok());                   // '=' inside
  EXPECT_FALSE(base64_decode("Zm9vYg==Zg==").ok());           // padding in the middle
  EXPECT_FALSE(base64_decode("Zm9-").ok());                   // URL-safe digits are not standard
  EXPECT_FALSE(base64_decode("Zm9_").ok());
  EXPECT_FALSE(base64_decode("Zm 9").ok());                   // blanks
  EXPECT_FALSE(base64_decode("Zm\n9").ok());                  // control characters
  EXPECT_FALSE(base64_decode(std::string("Zm\0v", 4)).ok());  // NUL
  EXPECT_FALSE(base64_decode("Zm\xc3\xa9").ok());             // non-ASCII
  EXPECT_EQ(base64_decode("Zm!v").status().message(), "invalid base64 character '!'");
}

TEST(Base64, UrlSafeDecodeTakesBothAlphabetsAndOptionalPadding) {
  EXPECT_EQ(*base64url_decode("L3Zhci90bXA"), "/var/tmp");
  EXPECT_EQ(*base64url_decode("L3Zhci90bXA="), "/var/tmp");
  EXPECT_EQ(*base64url_decode("_-8"), "\xff\xef");
  EXPECT_EQ(*base64url_decode("/+8"), "\xff\xef");  // standard digits from clients that send them
  EXPECT_EQ(*base64url_decode("="), "");
  EXPECT_EQ(*base64url_decode(""), "");
  EXPECT_EQ(base64url_decode("A").status().message(), "truncated base64 value");
  EXPECT_EQ(base64url_decode("QUJD!").status().message(), "invalid base64 character '!'");
  EXPECT_FALSE(base64url_decode("Q=Q").ok());
  EXPECT_FALSE(base64url_decode("Q\tQ").ok());
}

}  // namespace
}  // namespace gpulens
