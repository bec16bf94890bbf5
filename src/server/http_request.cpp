// Request-head parsing: strict where lenience would let requests be read two
// ways (whitespace before a colon, two Content-Lengths, a transfer coding).
#include "server/http_request.h"

#include <charconv>

#include "util/ascii.h"

namespace gpulens {
namespace {

bool is_tchar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  switch (c) {
    case '!': case '#': case '$': case '%': case '&': case '\'': case '*': case '+':
    case '-': case '.': case '^': case '_': case '`': case '|': case '~': return true;
    default: return false;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

HeadParse refuse(int status, std::string message) { return {HeadParse::kRefused, status, std::move(message)}; }

// True when the comma-separated `list` holds `token` (case-insensitive).
bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    if (ascii_iequals(trim(list.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

std::string_view RequestHead::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (ascii_iequals(n, name)) return v;
  }
  return {};
}

HeadParse parse_request_head(std::string_view buf, const RequestLimits& limits, RequestHead& head) {
  {
    // A head parsed into again keeps its header list's capacity (the server
    // reuses one: no allocation per request).
    auto headers = std::move(head.headers);
    headers.clear();
    head = RequestHead{};
    head.headers = std::move(headers);
  }
  const size_t end = buf.find("\r\n\r\n");
  const size_t line_end = buf.find("\r\n");
  // Early refusals on an incomplete head, so a slow or endless client is
  // answered as soon as its bytes show the problem.
  const size_t line_len = line_end == std::string_view::npos ? buf.size() : line_end;
  if (line_len > limits.max_target_bytes + 32) {
    return refuse(414, "request line longer than " + std::to_string(limits.max_target_bytes) + " bytes");
  }
  if (end == std::string_view::npos) {
    if (buf.size() > limits.max_head_bytes) {
      return refuse(431, "request head larger than " + std::to_string(limits.max_head_bytes / 1024) + " KiB");
    }
    size_t lines = 0;
    for (size_t p = buf.find("\r\n"); p != std::string_view::npos; p = buf.find("\r\n", p + 2)) ++lines;
    if (lines > limits.max_headers + 1) {
      return refuse(431, "more than " + std::to_string(limits.max_headers) + " header lines");
    }
    return {};
  }
  if (end + 4 > limits.max_head_bytes) {
    return refuse(431, "request head larger than " + std::to_string(limits.max_head_bytes / 1024) + " KiB");
  }
  head.head_bytes = end + 4;

  // Request line: METHOD SP target SP HTTP/1.x
  std::string_view line = buf.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp1 == 0 || sp2 == sp1) return refuse(400, "malformed request line");
  head.method = line.substr(0, sp1);
  for (char c : head.method) {
    if (!is_tchar(c)) return refuse(400, "malformed request method");
  }
  head.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (head.target.size() > limits.max_target_bytes) {
    return refuse(414, "request target longer than " + std::to_string(limits.max_target_bytes) + " bytes");
  }
  if (head.target.empty() || head.target.front() != '/') return refuse(400, "request target must start with /");
  for (char c : head.target) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return refuse(400, "control character or space in the request target");
  }
  const std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.0") head.http10 = true;
  else if (version != "HTTP/1.1") return refuse(400, "unsupported protocol version (HTTP/1.0 or HTTP/1.1)");
  const size_t q = head.target.find('?');
  head.path = head.target.substr(0, q);
  if (q != std::string_view::npos) head.query = head.target.substr(q + 1);
  head.keep_alive = !head.http10;

  bool have_length = false;
  int hosts = 0;
  std::string_view rest = buf.substr(line_end + 2, end + 2 - (line_end + 2));
  while (!rest.empty()) {
    const size_t e = rest.find("\r\n");
    std::string_view h = rest.substr(0, e);
    rest = rest.substr(e + 2);
    if (head.headers.size() >= limits.max_headers) {
      return refuse(431, "more than " + std::to_string(limits.max_headers) + " header lines");
    }
    const size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return refuse(400, "malformed header line");
    const std::string_view name = h.substr(0, colon);
    for (char c : name) {
      if (!is_tchar(c)) return refuse(400, "malformed header name");
    }
    const std::string_view value = trim(h.substr(colon + 1));
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) return refuse(400, "control character in a header value");
    }
    head.headers.emplace_back(name, value);
    if (ascii_iequals(name, "connection")) {
      if (has_token(value, "close")) head.keep_alive = false;
      else if (has_token(value, "keep-alive")) head.keep_alive = true;
    } else if (ascii_iequals(name, "content-length")) {
      size_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (value.empty() || ec != std::errc() || p != value.data() + value.size()) {
        return refuse(400, "invalid Content-Length");
      }
      if (have_length && n != head.content_length) return refuse(400, "conflicting Content-Length headers");
      head.content_length = n;
      have_length = true;
    } else if (ascii_iequals(name, "transfer-encoding")) {
      return refuse(501, "transfer codings (chunked request bodies) are not supported; send Content-Length");
    } else if (ascii_iequals(name, "host") && ++hosts > 1) {
      return refuse(400, "more than one Host header");  // RFC 9112 3.2
    }
  }
  // RFC 9112 3.2: an HTTP/1.1 request without Host is refused (1.0 may omit it).
  if (hosts == 0 && !head.http10) return refuse(400, "no Host header (HTTP/1.1 requires one)");
  return {HeadParse::kComplete, 0, {}};
}

}  // namespace gpulens
