// Parsing of one HTTP/1.x request head, bounded, with the status to answer.
//
// A pure function over the bytes received so far: it says whether the head
// is complete, incomplete (read more), or refused with the status the server
// must answer (400 malformed, or an HTTP/1.1 request with no Host or two
// Host headers, RFC 9112 3.2; 414 URL too long, 431 head too large or too
// many header lines, 501 transfer coding). Refusals happen as early as the
// bytes allow: a request line longer than the URL limit is refused before
// its end arrives, a head over the size limit before its blank line does.
// The server (http_server.cpp) and the fuzz target (fuzz/http_request_fuzz.cpp)
// both call it.
//
//   RequestHead head;
//   HeadParse p = parse_request_head(buffer, {}, head);
//   if (p.state == HeadParse::kIncomplete) ... read more;
//   if (p.state == HeadParse::kRefused) ... answer p.status, p.message, close;
//   ... head.method, head.path, head.header("authorization"), head.head_bytes
//
// Views in RequestHead point into `buffer`: valid while it is unchanged.
// Thread-safety: none needed (no shared state).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulens {

struct RequestLimits {
  size_t max_head_bytes = 16 * 1024;  // request line + headers + blank line
  size_t max_headers = 100;           // header lines
  size_t max_target_bytes = 8 * 1024; // the request target (path + query)
};

struct RequestHead {
  std::string_view method;
  std::string_view target;
  std::string_view path;   // target without the query string
  std::string_view query;  // after '?', "" if none
  bool http10 = false;
  bool keep_alive = true;
  size_t content_length = 0;
  size_t head_bytes = 0;  // bytes of the head including the blank line
  std::vector<std::pair<std::string_view, std::string_view>> headers;  // in order, values trimmed

  // The first header of that name (case-insensitive), "" if absent.
  std::string_view header(std::string_view name) const;
};

struct HeadParse {
  enum State { kComplete, kIncomplete, kRefused };
  State state = kIncomplete;
  int status = 0;        // for kRefused
  std::string message;   // for kRefused: what was wrong, one line
};

HeadParse parse_request_head(std::string_view buffer, const RequestLimits& limits, RequestHead& head);

}  // namespace gpulens
