// The one base64 codec of the program (RFC 4648): the Authorization header
// the outgoing client sends (encode), the credentials of an incoming Basic
// auth header (strict decode), and the Pushgateway's @base64 path segments
// (URL-safe decode, padding optional).
//
//   base64_encode("user:pw")          -> "dXNlcjpwdw=="
//   base64_decode("dXNlcjpwdw==")     -> "user:pw"
//   base64_decode("dXNlcjpwdw")       -> error (length not a multiple of 4)
//   base64url_decode("L3Zhci90bXA")   -> "/var/tmp"
//   base64url_decode("_-8")           -> "\xff\xef"
//
// Bad input is an error value, never a partial result. Bits left over
// after the last whole byte are ignored, as most decoders do.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace gpulens {

// Standard alphabet (A-Z a-z 0-9 + /), padded with '=' to a multiple of 4.
std::string base64_encode(std::string_view bytes);

// Standard alphabet, padding required: the length a multiple of 4, '=' only
// as the last one or two characters. Errors name the problem.
Result<std::string> base64_decode(std::string_view text);

// The URL-safe alphabet ('-' and '_'), with '+' and '/' taken too for
// clients that send standard base64; trailing '=' optional. A lone last
// character (6 bits, not a byte) is an error.
Result<std::string> base64url_decode(std::string_view text);

}  // namespace gpulens
