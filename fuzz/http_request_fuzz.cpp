// Fuzz target: the HTTP request-head parser (server/http_request.h) under
// its default limits and under tiny ones, fed the input whole and as every
// prefix a slow client could have sent so far; a complete head must lie
// inside the input and satisfy the limits it was parsed under.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/http_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const gpulens::RequestLimits limits[] = {{}, {.max_head_bytes = 64, .max_headers = 2, .max_target_bytes = 16}};
  for (const auto& l : limits) {
    gpulens::RequestHead head;
    gpulens::HeadParse p = gpulens::parse_request_head(in, l, head);
    if (p.state == gpulens::HeadParse::kComplete) {
      if (head.head_bytes > in.size() || head.head_bytes > l.max_head_bytes || head.headers.size() > l.max_headers ||
          head.target.size() > l.max_target_bytes || head.path.empty() || head.path.front() != '/') {
        std::abort();
      }
      for (const auto& [name, value] : head.headers) {
        if (name.data() < in.data() || name.data() + name.size() > in.data() + in.size()) std::abort();
        (void)value;
      }
    } else if (p.state == gpulens::HeadParse::kRefused && (p.status < 400 || p.status > 599 || p.message.empty())) {
      std::abort();
    }
  }
  // Prefixes, as the server sees them arrive (a few cuts, not all: cost).
  for (size_t cut = 1; cut < size; cut += 1 + size / 8) {
    gpulens::RequestHead head;
    (void)gpulens::parse_request_head(in.substr(0, cut), {}, head);
  }
  return 0;
}
