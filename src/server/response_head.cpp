// Response heads and error answers of the HTTP server.
#include "server/response_head.h"

#include <charconv>

namespace gpulens {

std::string_view status_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

std::string error_response(int status, std::string_view msg, std::string_view extra_headers) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(status_reason(status)) +
                    "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(msg.size() + 1) + "\r\n";
  if (status == 503 || status == 429) out += "Retry-After: 1\r\n";
  out += extra_headers;
  out += "\r\n";
  out += msg;
  out += '\n';
  return out;
}

namespace {

void build_response_head(std::string& out, const ServerResponse& res, size_t length, const std::string& security,
                         bool keep_alive) {
  char len[24];
  auto lp = std::to_chars(len, len + sizeof len, length).ptr;
  char st[16];
  auto sp = std::to_chars(st, st + sizeof st, res.status).ptr;
  out.clear();
  out += "HTTP/1.1 ";
  out.append(st, sp);
  out += ' ';
  out += status_reason(res.status);
  out += "\r\nContent-Type: ";
  out += res.content_type;
  if (!res.content_encoding.empty()) {
    out += "\r\nContent-Encoding: ";
    out += res.content_encoding;
  }
  out += "\r\nContent-Length: ";
  out.append(len, lp);
  out += "\r\n";
  out += res.headers;
  out += security;
  out += keep_alive ? "\r\n" : "Connection: close\r\n\r\n";
}

}  // namespace

const std::string& ResponseHeadCache::head(const ServerResponse& r, size_t length, const std::string& security,
                                           std::shared_ptr<const void> hold, bool keep_alive) {
  for (const Entry& e : entries_) {
    if (!e.bytes.empty() && e.status == r.status && e.length == length && e.keep_alive == keep_alive &&
        e.security == &security && e.content_type == r.content_type && e.content_encoding == r.content_encoding &&
        e.headers == r.headers) {
      return e.bytes;
    }
  }
  Entry& e = entries_[next_++ % entries_.size()];
  e.status = r.status;
  e.length = length;
  e.keep_alive = keep_alive;
  e.security = &security;
  e.security_hold = std::move(hold);
  e.content_type = r.content_type;
  e.content_encoding = r.content_encoding;
  e.headers = r.headers;
  build_response_head(e.bytes, r, length, security, keep_alive);
  return e.bytes;
}

}  // namespace gpulens
