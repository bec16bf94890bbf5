// Base64 encoding and decoding (RFC 4648 sections 4 and 5).
#include "util/base64.h"

#include <cstdint>

namespace gpulens {
namespace {

constexpr char kBase64Alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The 6-bit value of `c`, or -1. `url` takes '-' and '_' (and '+' and '/').
int base64_digit(char c, bool url) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || (url && c == '-')) return 62;
  if (c == '/' || (url && c == '_')) return 63;
  return -1;
}

// Decodes `text` (no padding left in it).
Result<std::string> base64_digits(std::string_view text, bool url) {
  std::string out;
  out.reserve(text.size() / 4 * 3 + 2);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = base64_digit(c, url);
    if (v < 0) return invalid_argument(std::string("invalid base64 character '") + c + "'");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  if (bits >= 6) return invalid_argument("truncated base64 value");
  return out;
}

}  // namespace

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out.push_back(kBase64Alphabet[(v >> k) & 63]);
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += {kBase64Alphabet[v >> 18], kBase64Alphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {kBase64Alphabet[v >> 18], kBase64Alphabet[(v >> 12) & 63], kBase64Alphabet[(v >> 6) & 63], '='};
  }
  return out;
}

Result<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) {
    return invalid_argument("base64 length " + std::to_string(text.size()) + " is not a multiple of 4");
  }
  for (int pad = 0; pad < 2 && !text.empty() && text.back() == '='; ++pad) text.remove_suffix(1);
  return base64_digits(text, false);
}

Result<std::string> base64url_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  return base64_digits(text, true);
}

}  // namespace gpulens
