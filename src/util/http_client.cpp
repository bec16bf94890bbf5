// Blocking HTTP/1.1 client over plain TCP: every socket step waits in poll()
// against one deadline, so a server that never answers costs the timeout.
#include "util/http_client.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace gpulens {
namespace {

using Clock = std::chrono::steady_clock;

struct ParsedUrl {
  std::string host;
  std::string port = "80";
  std::string target = "/";  // path + query
  std::string authority;     // host[:port] as written, for Host: and errors
};

Result<ParsedUrl> parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("unsupported URL \"" + std::string(url) + "\": only http:// is supported");
  }
  std::string_view rest = url.substr(kScheme.size());
  size_t slash = rest.find_first_of("/?");
  ParsedUrl u;
  u.authority = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) {
    u.target = std::string(rest.substr(slash));
    if (u.target[0] == '?') u.target.insert(0, "/");
  }
  std::string_view auth = u.authority;
  if (auth.empty()) return invalid_argument("URL \"" + std::string(url) + "\" has no host");
  if (auth.front() == '[') {  // [v6]:port
    size_t close = auth.find(']');
    if (close == std::string_view::npos) return invalid_argument("bad IPv6 host in \"" + std::string(url) + "\"");
    u.host = std::string(auth.substr(1, close - 1));
    if (close + 1 < auth.size() && auth[close + 1] == ':') u.port = std::string(auth.substr(close + 2));
  } else {
    size_t colon = auth.rfind(':');
    u.host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) u.port = std::string(auth.substr(colon + 1));
  }
  if (u.port.empty() || u.port.find_first_not_of("0123456789") != std::string::npos) {
    return invalid_argument("bad port in URL \"" + std::string(url) + "\"");
  }
  return u;
}

// Owns a socket fd and one deadline for the whole exchange.
class Conn {
 public:
  Conn(std::string what, Clock::time_point deadline, int64_t timeout_ms, const HttpCancel* cancel)
      : what_(std::move(what)), deadline_(deadline), timeout_ms_(timeout_ms), cancel_(cancel) {}
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  Status connect(const ParsedUrl& u) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = ::getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &res); rc != 0) {
      return unavailable("resolve " + u.authority + ": " + ::gai_strerror(rc));
    }
    Status last = unavailable("connect " + u.authority + ": no addresses");
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      last = connect_one(ai, u.authority);
      if (last.is_ok()) break;
    }
    ::freeaddrinfo(res);
    return last;
  }

  Status send_all(std::string_view data) {
    while (!data.empty()) {
      if (Status s = wait(POLLOUT, "sending request to"); !s.is_ok()) return s;
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return unavailable("send to " + what_ + ": " + std::strerror(errno));
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::ok();
  }

  // Appends what arrives to `buf`; returns false at end of stream.
  Result<bool> recv_some(std::string& buf) {
    for (;;) {
      if (Status s = wait(POLLIN, "reading response from"); !s.is_ok()) return s;
      char tmp[65536];
      ssize_t n = ::recv(fd_, tmp, sizeof tmp, 0);
      if (n < 0) {
        if (errno == EAGAIN || errno == EINTR) continue;
        return unavailable("read from " + what_ + ": " + std::strerror(errno));
      }
      buf.append(tmp, static_cast<size_t>(n));
      return n > 0;
    }
  }

 private:
  Status connect_one(const addrinfo* ai, const std::string& authority) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd_ < 0) return unavailable("socket: " + std::string(std::strerror(errno)));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd_, ai->ai_addr, ai->ai_addrlen) == 0) return Status::ok();
    if (errno != EINPROGRESS) return unavailable("connect " + authority + ": " + std::strerror(errno));
    if (Status s = wait(POLLOUT, "connecting to"); !s.is_ok()) return s;
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return unavailable("connect " + authority + ": " + std::strerror(err));
    return Status::ok();
  }

  Status wait(short events, const char* doing) {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) break;
      pollfd p[2] = {{fd_, events, 0}, {cancel_ ? cancel_->fd() : -1, POLLIN, 0}};
      int rc = ::poll(p, cancel_ ? 2 : 1, static_cast<int>(left));
      if (rc > 0 && cancel_ && p[1].revents != 0) return cancelled();
      if (rc > 0) return Status::ok();  // errors/hangup surface in the following call
      if (rc < 0 && errno != EINTR) return unavailable(std::string("poll: ") + std::strerror(errno));
    }
    return {Code::kDeadline, "timeout after " + std::to_string(timeout_ms_) + " ms " + doing + " " + what_};
  }

  Status cancelled() const { return {Code::kDeadline, "cancelled while talking to " + what_}; }

  int fd_ = -1;
  std::string what_;
  Clock::time_point deadline_;
  int64_t timeout_ms_;
  const HttpCancel* cancel_;
};

std::string lower(std::string_view s) {
  std::string r(s);
  for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return r;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Parses "HTTP/1.1 200 OK\r\nName: value\r\n..." (without the blank line).
Status parse_head(std::string_view head, HttpResponse& r, const std::string& what) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  if (line.substr(0, 5) != "HTTP/" || line.size() < 12 || line[8] != ' ') {
    return io_error("malformed status line from " + what + ": \"" + std::string(line.substr(0, 80)) + "\"");
  }
  r.status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return io_error("malformed status code from " + what);
    r.status = r.status * 10 + (line[i] - '0');
  }
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    std::string_view h = head.substr(0, eol);
    if (h.empty()) continue;
    size_t colon = h.find(':');
    if (colon == std::string_view::npos) return io_error("malformed header from " + what);
    r.headers.emplace_back(lower(trim(h.substr(0, colon))), std::string(trim(h.substr(colon + 1))));
  }
  return Status::ok();
}

// Decodes a complete chunked body in `raw` into `out`; returns false while more bytes are needed.
Result<bool> dechunk(std::string_view raw, std::string& out, size_t max, const std::string& what) {
  out.clear();
  for (;;) {
    size_t eol = raw.find("\r\n");
    if (eol == std::string_view::npos) return false;
    size_t n = 0;
    std::string_view hex = raw.substr(0, raw.find_first_of(";\r"));
    if (hex.empty()) return io_error("malformed chunk size from " + what);
    for (char c : hex) {
      int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
              : (c >= 'a' && c <= 'f')                     ? c - 'a' + 10
              : (c >= 'A' && c <= 'F')                     ? c - 'A' + 10
                                                           : -1;
      if (d < 0 || n > (max >> 4)) return io_error("malformed chunk size from " + what);
      n = n * 16 + static_cast<size_t>(d);
    }
    if (out.size() + n > max) {
      return io_error("response body from " + what + " exceeds " + std::to_string(max) + " bytes");
    }
    raw.remove_prefix(eol + 2);
    if (n == 0) return raw.find("\r\n") != std::string_view::npos;  // trailers end with a blank line
    if (raw.size() < n + 2) return false;
    out.append(raw.substr(0, n));
    raw.remove_prefix(n + 2);
  }
}

}  // namespace

HttpCancel::HttpCancel() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

HttpCancel::~HttpCancel() {
  if (fd_ >= 0) ::close(fd_);
}

void HttpCancel::cancel() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(fd_, &one, sizeof one);
}

bool HttpCancel::cancelled() const {
  pollfd p{fd_, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

std::string_view HttpResponse::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (k.size() == name.size() && lower(name) == k) return v;
  }
  return {};
}

Result<HttpResponse> HttpClient::get(std::string_view url,
                                     const std::vector<std::pair<std::string, std::string>>& headers) const {
  return request("GET", url, {}, headers);
}

Result<HttpResponse> HttpClient::post(std::string_view url, std::string_view body,
                                      const std::vector<std::pair<std::string, std::string>>& headers) const {
  return request("POST", url, body, headers);
}

Result<HttpResponse> HttpClient::request(std::string_view method, std::string_view url, std::string_view body,
                                         const std::vector<std::pair<std::string, std::string>>& headers) const {
  Result<ParsedUrl> pu = parse_url(url);
  if (!pu) return pu.status();
  const ParsedUrl& u = *pu;
  std::string what = u.authority + u.target.substr(0, u.target.find('?'));
  if (options_.cancel && options_.cancel->cancelled()) return Status(Code::kDeadline, "cancelled: " + what);
  Conn conn(what, Clock::now() + std::chrono::milliseconds(options_.timeout_ms), options_.timeout_ms,
            options_.cancel);
  if (Status s = conn.connect(u); !s.is_ok()) return s;

  std::string req;
  req.reserve(256 + body.size());
  req.append(method).append(" ").append(u.target).append(" HTTP/1.1\r\nHost: ").append(u.authority);
  req.append("\r\nConnection: close\r\n");
  bool own_agent = false;
  for (const auto& [k, v] : headers) {
    req.append(k).append(": ").append(v).append("\r\n");
    own_agent |= lower(k) == "user-agent";
  }
  if (!own_agent) req.append("User-Agent: gpulens\r\n");
  if (method == "POST" || !body.empty()) req.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  req.append("\r\n");
  // Small bodies go in one segment with the head; large ones avoid a copy.
  if (body.size() <= 64 * 1024) {
    req.append(body);
    body = {};
  }
  if (Status s = conn.send_all(req); !s.is_ok()) return s;
  if (Status s = conn.send_all(body); !s.is_ok()) return s;

  std::string buf;
  size_t head_end = std::string::npos;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > 64 * 1024) return io_error("response headers from " + what + " exceed 64 KiB");
    Result<bool> more = conn.recv_some(buf);
    if (!more) return more.status();
    if (!*more) return io_error("connection closed by " + what + " before a complete response header");
  }
  HttpResponse r;
  if (Status s = parse_head(std::string_view(buf).substr(0, head_end), r, what); !s.is_ok()) return s;
  buf.erase(0, head_end + 4);

  const size_t max = options_.max_body_bytes;
  const std::string too_big = "response body from " + what + " exceeds " + std::to_string(max) + " bytes";
  bool chunked = lower(r.header("transfer-encoding")).find("chunked") != std::string::npos;
  std::string_view cl = r.header("content-length");
  bool no_body = method == "HEAD" || r.status == 204 || r.status == 304 || r.status / 100 == 1;
  if (no_body) return r;
  if (chunked) {
    for (;;) {
      Result<bool> done = dechunk(buf, r.body, max, what);
      if (!done) return done.status();
      if (*done) return r;
      Result<bool> more = conn.recv_some(buf);
      if (!more) return more.status();
      if (!*more) return io_error("connection closed by " + what + " in the middle of a chunked body");
    }
  }
  if (!cl.empty()) {
    size_t n = 0;
    for (char c : cl) {
      if (c < '0' || c > '9' || n > max) return io_error("bad Content-Length from " + what);
      n = n * 10 + static_cast<size_t>(c - '0');
    }
    if (n > max) return io_error(too_big);
    while (buf.size() < n) {
      Result<bool> more = conn.recv_some(buf);
      if (!more) return more.status();
      if (!*more) return io_error("connection closed by " + what + " after " + std::to_string(buf.size()) + " of " + std::to_string(n) + " body bytes");
    }
    buf.resize(n);
    r.body = std::move(buf);
    return r;
  }
  // No length: the body runs to the end of the connection.
  for (;;) {
    if (buf.size() > max) return io_error(too_big);
    Result<bool> more = conn.recv_some(buf);
    if (!more) return more.status();
    if (!*more) break;
  }
  if (buf.size() > max) return io_error(too_big);
  r.body = std::move(buf);
  return r;
}

std::string url_encode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3);
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace gpulens
