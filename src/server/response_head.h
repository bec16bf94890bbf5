// The bytes that open the server's answers: a response head built once per
// distinct inputs and reused, and the short plain-text error answers.
//
// A scrape of an unchanged /metrics page asks for the same head each time
// (same status, type, encoding, length, extra headers, security headers,
// keep-alive): ResponseHeadCache hands back the bytes it built the first
// time, so that answering allocates nothing.
//
//   ResponseHeadCache heads;
//   const std::string& h = heads.head(res, res.body.size(), security, hold, keep_alive);
//   out.append(h);                     // "HTTP/1.1 200 OK\r\nContent-Type: ...\r\n\r\n"
//
//   send(fd, error_response(503, "server full").data(), ...);   // closes: "Connection: close"
//
// Thread-safety: ResponseHeadCache none (the event loop's thread alone);
// the functions are pure.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "server/http_server.h"

namespace gpulens {

// "OK", "Not Found", ...; "Status" for a code without one here.
std::string_view status_reason(int status);

// A complete answer that closes the connection: `msg` and a newline as
// text/plain, Retry-After: 1 on 429 and 503, then `extra_headers` (lines
// ending "\r\n").
std::string error_response(int status, std::string_view msg, std::string_view extra_headers = {});

// Heads of the last few distinct answers (four: /metrics, its gzip form,
// and two API answers keep theirs while they alternate).
class ResponseHeadCache {
 public:
  // The head of `res` with a body of `length` bytes, `security` headers (a
  // string that `hold` keeps alive while the head is cached) and
  // "Connection: close" unless `keep_alive`. Valid until the next call.
  const std::string& head(const ServerResponse& res, size_t length, const std::string& security,
                          std::shared_ptr<const void> hold, bool keep_alive);

 private:
  struct Entry {
    int status = 0;
    size_t length = 0;
    bool keep_alive = false;
    const std::string* security = nullptr;
    std::shared_ptr<const void> security_hold;
    std::string content_type, content_encoding, headers;
    std::string bytes;  // "" until built
  };
  std::array<Entry, 4> entries_;
  size_t next_ = 0;
};

}  // namespace gpulens
