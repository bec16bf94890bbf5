// bcrypt password hashes (basic_auth_users of the web config), verified with
// crypt_r from libxcrypt (Debian's libcrypt1).
//
//   is_bcrypt_hash("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi")  // true
//   bcrypt_matches("fakepassword", that_hash)                                     // true
//
// crypt_r falls back to traditional DES for a setting it does not recognise
// ("garbage" gives a 13-character DES hash), so a value that is not bcrypt
// would be accepted as some other scheme. Every hash is therefore checked
// here first: "$2a$", "$2b$" or "$2y$", a two-digit cost 04..31, then 53
// characters of the bcrypt alphabet (60 in all). bcrypt_matches refuses
// anything else without calling crypt_r, and compares in constant time.
//
// The cost is capped at kMaxBcryptCost (18): exporter-toolkit parses hashes
// up to Go's bcrypt.MaxCost (31), but its documentation stops at cost 18
// ("can take up to a few seconds"); each step doubles the time, so a cost-31
// hash keeps a CPU busy for hours on one login. Hashes above the cap are
// refused by the web config (and check-config), and bcrypt_matches never
// runs them.
//
// Thread-safety: pure functions; bcrypt_matches uses a crypt_data of its
// own per call (32 KiB, on the heap). Cost: 2^cost rounds, ~70 ms at cost 10.
#pragma once

#include <string_view>

namespace gpulens {

inline constexpr int kMaxBcryptCost = 18;

// True for a well-formed $2a$/$2b$/$2y$ bcrypt hash with cost 4..31 (the
// format; the cap is checked separately, to name it in errors).
bool is_bcrypt_hash(std::string_view hash);
// The bcrypt cost of a hash that passed is_bcrypt_hash.
int bcrypt_cost(std::string_view hash);
// True when `password` hashes to `hash`; false for any non-bcrypt hash and
// for a cost above kMaxBcryptCost (not computed).
// Passwords beyond bcrypt's 72 bytes are compared on their first 72, as
// every bcrypt implementation does.
bool bcrypt_matches(std::string_view password, std::string_view hash);

}  // namespace gpulens
