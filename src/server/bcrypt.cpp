// The prefix check in front of crypt_r, and the constant-time comparison.
#include "server/bcrypt.h"

#include <crypt.h>

#include <cstring>
#include <memory>
#include <string>

namespace gpulens {
namespace {

bool bcrypt_char(char c) {
  return c == '.' || c == '/' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// Constant time in the length of `a` (both are 60 bytes here).
bool same_bytes(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

bool is_bcrypt_hash(std::string_view h) {
  if (h.size() != 60) return false;
  if (h[0] != '$' || h[1] != '2' || (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') || h[3] != '$') return false;
  if (h[4] < '0' || h[4] > '9' || h[5] < '0' || h[5] > '9' || h[6] != '$') return false;
  const int cost = (h[4] - '0') * 10 + (h[5] - '0');
  if (cost < 4 || cost > 31) return false;
  for (size_t i = 7; i < h.size(); ++i) {
    if (!bcrypt_char(h[i])) return false;
  }
  return true;
}

int bcrypt_cost(std::string_view h) { return (h[4] - '0') * 10 + (h[5] - '0'); }

bool bcrypt_matches(std::string_view password, std::string_view hash) {
  if (!is_bcrypt_hash(hash) || bcrypt_cost(hash) > kMaxBcryptCost) return false;
  // crypt_r reads a C string: a NUL inside the password would cut it short,
  // so such a password matches nothing.
  if (password.find('\0') != std::string_view::npos) return false;
  const std::string pw(password.substr(0, 72));
  const std::string setting(hash);
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = crypt_r(pw.c_str(), setting.c_str(), data.get());
  const bool ok = out != nullptr && out[0] != '*' && same_bytes(out, hash);
  std::memset(data.get(), 0, sizeof(crypt_data));  // the password's traces
  return ok;
}

}  // namespace gpulens
