// Blocking HTTP/1.1 client over TCP or TLS: every socket step waits in
// poll() against one deadline (and the cancel fd), so a server that never
// answers costs the timeout. TLS runs on the same non-blocking socket:
// OpenSSL's WANT_READ/WANT_WRITE become the poll events to wait for.
// Connections are kept alive in a small pool per client (one Connection:
// close per request made every remote_write batch and every scrape of a
// target a new connection, over https a new handshake: issue 23).
#include "util/http_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <arpa/inet.h>

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <iomanip>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include "util/ascii.h"
#include "util/base64.h"

namespace gpulens {
namespace {

using Clock = std::chrono::steady_clock;

struct ParsedUrl {
  bool tls = false;
  std::string host;
  std::string port = "80";
  std::string target = "/";  // path + query
  std::string authority;     // host[:port] as written, for Host: and errors
};

Result<ParsedUrl> parse_url(std::string_view url) {
  ParsedUrl u;
  std::string_view rest;
  if (url.starts_with("http://")) {
    rest = url.substr(7);
  } else if (url.starts_with("https://")) {
    rest = url.substr(8);
    u.tls = true;
    u.port = "443";
  } else {
    return invalid_argument("unsupported URL \"" + std::string(url) + "\": only http:// and https:// are supported");
  }
  size_t slash = rest.find_first_of("/?");
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

// The text of OpenSSL's oldest queued error, "unknown error" when none.
std::string openssl_error() {
  char text[256] = "unknown error";
  if (unsigned long e = ERR_get_error(); e != 0) ERR_error_string_n(e, text, sizeof text);
  return text;
}

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

// Decodes the complete chunks of a chunked body from raw[pos..] onto `out`
// and advances pos past them; true once the last chunk and its trailers are
// in (pos then just past the body), false while more bytes are needed. Incremental, so that a body read in
// many pieces is decoded once (decoding the whole buffer again after every
// read made a 10 MB answer cost gigabytes of copying).
Result<bool> dechunk(std::string_view raw, size_t& pos, std::string& out, size_t max, const std::string& what) {
  for (;;) {
    std::string_view rest = raw.substr(pos);
    size_t eol = rest.find("\r\n");
    if (eol == std::string_view::npos) return false;
    size_t n = 0;
    std::string_view hex = rest.substr(0, rest.find_first_of(";\r"));
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
    rest.remove_prefix(eol + 2);
    if (n == 0) {  // trailers (if any) end with a blank line; pos moves past it
      const size_t end = rest.starts_with("\r\n") ? 2 : rest.find("\r\n\r\n");
      if (end == std::string_view::npos) return false;
      pos += eol + 2 + (end == 2 ? 2 : end + 4);
      return true;
    }
    if (rest.size() < n + 2) return false;
    out.append(rest.substr(0, n));
    pos += eol + 2 + n + 2;
  }
}

// Owns a socket fd (and its TLS session); every wait is bounded by the
// deadline of the request it is carrying. Kept alive, it carries several.
class Conn {
 public:
  explicit Conn(const HttpCancel* cancel) : cancel_(cancel) {}
  ~Conn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  // The request now carried: `what` names it in errors, `deadline` bounds every wait.
  void begin(std::string what, Clock::time_point deadline, int64_t timeout_ms) {
    what_ = std::move(what);
    deadline_ = deadline;
    timeout_ms_ = timeout_ms;
  }

  // `label` names the peer in errors: "127.0.0.1:9100", "proxy 10.0.0.1:3128".
  Status connect(const std::string& host, const std::string& port, const std::string& label) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &res); rc != 0) {
      return unavailable("resolve " + label + ": " + ::gai_strerror(rc));
    }
    Status last = unavailable("connect " + label + ": no addresses");
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      last = connect_one(ai, label);
      if (last.is_ok()) break;
    }
    ::freeaddrinfo(res);
    return last;
  }

  // An idle kept-alive connection may carry another request: nothing is
  // waiting to be read (the server's close, or bytes it should not have sent,
  // make it unusable).
  bool still_open() const {
    if (ssl_ != nullptr && SSL_has_pending(ssl_) == 1) return false;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  // Asks the HTTP proxy at the other end for a tunnel to hostport (CONNECT);
  // ok once it answers 2xx. `proxy` names it in errors.
  Status tunnel(const std::string& hostport, const std::string& proxy_authorization, const std::string& proxy) {
    std::string req = "CONNECT " + hostport + " HTTP/1.1\r\nHost: " + hostport + "\r\nUser-Agent: gpulens\r\n";
    if (!proxy_authorization.empty()) req += "Proxy-Authorization: " + proxy_authorization + "\r\n";
    req += "\r\n";
    if (Status s = send_all(req); !s.is_ok()) return s;
    std::string buf;
    size_t end = std::string::npos;
    while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
      if (buf.size() > 64 * 1024) return io_error("answer of " + proxy + " to CONNECT exceeds 64 KiB");
      Result<bool> more = recv_some(buf);
      if (!more) return more.status();
      if (!*more) return unavailable(proxy + " closed the connection before answering CONNECT " + hostport);
    }
    HttpResponse r;
    if (Status s = parse_head(std::string_view(buf).substr(0, end), r, proxy); !s.is_ok()) return s;
    if (r.status / 100 != 2) {
      return unavailable(proxy + " refused CONNECT " + hostport + ": " + buf.substr(9, buf.find("\r\n") - 9));
    }
    if (end + 4 != buf.size()) return io_error(proxy + " sent bytes after its answer to CONNECT");
    return Status::ok();
  }

  // The TLS handshake, verifying the server unless told not to.
  Status start_tls(SSL_CTX* ctx, const TlsClientOptions& o, const std::string& host) {
    ssl_ = SSL_new(ctx);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) return tls_error("TLS setup for");
    const std::string name = o.server_name.empty() ? host : o.server_name;
    in6_addr a6{};
    const bool ip = ::inet_pton(AF_INET, name.c_str(), &a6) == 1 || ::inet_pton(AF_INET6, name.c_str(), &a6) == 1;
    if (!ip) SSL_set_tlsext_host_name(ssl_, name.c_str());
    if (!o.insecure_skip_verify) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      if (ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1
             : X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0) != 1) {
        return tls_error("TLS name \"" + name + "\" for");
      }
    }
    for (;;) {
      ERR_clear_error();
      int rc = SSL_connect(ssl_);
      if (rc == 1) return Status::ok();
      int err = SSL_get_error(ssl_, rc);
      if (err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE) {
        if (Status s = wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, "TLS handshake with"); !s.is_ok()) {
          return s;
        }
        continue;
      }
      long verify = SSL_get_verify_result(ssl_);
      if (verify != X509_V_OK) {
        std::string hint = verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH
                               ? " (set tls_config.server_name to a name the certificate holds)"
                               : " (set tls_config.ca_file to the CA that signed it)";
        return unavailable("TLS handshake with " + what_ + ": certificate verify failed: " +
                           X509_verify_cert_error_string(verify) + hint);
      }
      return tls_error("TLS handshake with");
    }
  }

  Status send_all(std::string_view data) {
    while (!data.empty()) {
      if (ssl_ != nullptr) {
        ERR_clear_error();
        int n = SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
        if (n > 0) {
          data.remove_prefix(static_cast<size_t>(n));
          continue;
        }
        int err = SSL_get_error(ssl_, n);
        if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return tls_error("TLS send to");
        if (Status s = wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, "sending request to"); !s.is_ok()) {
          return s;
        }
        continue;
      }
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
    char tmp[65536];
    while (ssl_ != nullptr) {
      ERR_clear_error();
      int n = SSL_read(ssl_, tmp, sizeof tmp);
      if (n > 0) {
        buf.append(tmp, static_cast<size_t>(n));
        return true;
      }
      int err = SSL_get_error(ssl_, n);
      if (err == SSL_ERROR_ZERO_RETURN) return false;
      if (err == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) return false;  // closed without close_notify
      if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) return tls_error("TLS read from");
      if (Status s = wait(err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, "reading response from"); !s.is_ok()) {
        return s;
      }
    }
    for (;;) {
      if (Status s = wait(POLLIN, "reading response from"); !s.is_ok()) return s;
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

  Status tls_error(const std::string& doing) const { return unavailable(doing + " " + what_ + ": " + openssl_error()); }

  Status cancelled() const { return {Code::kDeadline, "cancelled while talking to " + what_}; }

  int fd_ = -1;
  SSL* ssl_ = nullptr;
  std::string what_;
  Clock::time_point deadline_;
  int64_t timeout_ms_ = 0;
  const HttpCancel* cancel_;
};

// Reads a small secret or PEM file whole; "" and an error for a missing one.
Result<std::string> read_small_file(const std::string& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found(key + ": cannot read " + path + ": " + std::strerror(errno));
  std::string text;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > (1u << 20)) return invalid_argument(key + ": " + path + " is larger than 1 MiB");
  }
  return text;
}

// A credentials file without its trailing newline (as Prometheus reads it).
Result<std::string> read_secret(const std::string& path, const std::string& key) {
  Result<std::string> t = read_small_file(path, key);
  if (!t) return t;
  std::string v = std::move(*t);
  while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
  if (v.empty()) return invalid_argument(key + ": " + path + " is empty");
  return v;
}

// The Authorization header value of `a`, "" when it sets none.
Result<std::string> authorization(const HttpAuthOptions& a) {
  if (!a.username.empty()) {
    std::string password = a.password;
    if (!a.password_file.empty()) {
      Result<std::string> p = read_secret(a.password_file, "basic_auth.password_file");
      if (!p) return p.status();
      password = *p;
    }
    return "Basic " + base64_encode(a.username + ":" + password);
  }
  std::string credentials = a.credentials;
  if (!a.credentials_file.empty()) {
    Result<std::string> c = read_secret(a.credentials_file, "authorization.credentials_file");
    if (!c) return c.status();
    credentials = *c;
  }
  if (credentials.empty()) return std::string();
  return (a.authorization_type.empty() ? std::string("Bearer") : a.authorization_type) + " " + credentials;
}

// `token` is one of the comma-separated tokens of a header value (Connection: keep-alive, close).
bool has_token(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (ascii_iequals(trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

struct ProxyUrl {
  std::string host, port = "80", authority;
  std::string authorization;  // "Basic …" from user:password in the URL; "" without
};

// "http://[user:password@]host[:port][/]" or just "host:port"; nullopt for "".
// Errors show the proxy without its credentials.
Result<std::optional<ProxyUrl>> parse_proxy(std::string_view value) {
  value = trim(value);
  if (value.empty()) return std::optional<ProxyUrl>();
  std::string_view rest = value, scheme = "http";
  if (size_t s = rest.find("://"); s != std::string_view::npos) {
    scheme = rest.substr(0, s);
    rest.remove_prefix(s + 3);
  }
  rest = rest.substr(0, rest.find('/'));
  ProxyUrl p;
  if (size_t at = rest.rfind('@'); at != std::string_view::npos) {
    const std::string_view userinfo = rest.substr(0, at);
    const size_t colon = userinfo.find(':');
    const std::string password = colon == std::string_view::npos ? "" : percent_decode(userinfo.substr(colon + 1));
    p.authorization = "Basic " + base64_encode(percent_decode(userinfo.substr(0, colon)) + ":" + password);
    rest.remove_prefix(at + 1);
  }
  const std::string shown = std::string(scheme) + "://" + std::string(rest);
  if (lower(scheme) != "http") {
    return invalid_argument("proxy \"" + shown + "\": only http:// proxies are supported (https:// URLs go through them in a CONNECT tunnel)");
  }
  Result<ParsedUrl> u = parse_url("http://" + std::string(rest) + "/");
  if (!u || u->host.empty()) return invalid_argument("proxy \"" + shown + "\" is not http://host[:port]");
  p.host = u->host;
  p.port = u->port;
  p.authority = u->authority;
  return std::optional<ProxyUrl>(std::move(p));
}

// Where a request's connection goes: to the target itself, to an HTTP proxy
// that forwards the request (http:// URLs; the request line carries the
// whole URL), or through a proxy's CONNECT tunnel (https://: TLS runs end to
// end with the target, the proxy sees only bytes).
struct Route {
  std::string host, port;            // what the socket connects to
  std::string label;                 // that peer in errors: "127.0.0.1:9100", "proxy 10.0.0.1:3128"
  bool tunnel = false;
  bool absolute_form = false;
  std::string proxy_authorization;   // "Basic …" when the proxy URL has credentials
  std::string key;                   // the connection pool's: requests with one key share connections
};

Result<Route> route_for(const ProxyOptions& options, const ParsedUrl& u) {
  Route r{.host = u.host, .port = u.port, .label = u.authority};
  const std::string& proxy = u.tls ? options.https_proxy : options.http_proxy;
  if (!proxy.empty() && !bypasses_proxy(options.no_proxy, u.host, u.port)) {
    Result<std::optional<ProxyUrl>> p = parse_proxy(proxy);
    if (!p) return p.status();
    if (*p) {
      r.host = (*p)->host;
      r.port = (*p)->port;
      r.label = "proxy " + (*p)->authority;
      r.proxy_authorization = (*p)->authorization;
      r.tunnel = u.tls;
      r.absolute_form = !u.tls;
    }
  }
  r.key = std::string(u.tls ? "https " : "http ") + r.host + " " + r.port;
  if (r.tunnel) r.key += " to " + u.host + " " + u.port;
  return r;
}

// An IP address as 16 bytes (IPv4 mapped into ::ffff:0:0/96); false for a name.
bool parse_ip(const std::string& text, std::array<uint8_t, 16>& ip, bool& v4) {
  in_addr a4{};
  if (::inet_pton(AF_INET, text.c_str(), &a4) == 1) {
    ip = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    std::memcpy(ip.data() + 12, &a4, 4);
    v4 = true;
    return true;
  }
  in6_addr a6{};
  if (::inet_pton(AF_INET6, text.c_str(), &a6) == 1) {
    std::memcpy(ip.data(), &a6, 16);
    v4 = false;
    return true;
  }
  return false;
}

}  // namespace

// The client's SSL_CTX. Not `TlsContext`: that is the listener's class
// (server/tls.h), and two classes of one name in one binary break the
// one-definition rule (the linker keeps one destructor for both).
struct ClientTls {
  SSL_CTX* ctx = nullptr;
  ~ClientTls() {
    if (ctx != nullptr) SSL_CTX_free(ctx);
  }
};

// Built on the first https request: plain-http clients never pay for it.
struct HttpClient::LazyTls {
  std::once_flag once;
  std::unique_ptr<ClientTls> tls;
  Status status;
};

// Idle kept-alive connections, newest last. Bounded: kPerTarget idle
// connections for one key, kTotal in all (the oldest goes first), each
// closed once idle longer than the client's idle_timeout_ms. A connection is
// taken out while it carries a request, so no two requests share one.
struct HttpClient::Pool {
  static constexpr size_t kPerTarget = 4;
  static constexpr size_t kTotal = 16;
  struct Idle {
    std::string key;
    std::unique_ptr<Conn> conn;
    Clock::time_point since;
  };
  std::mutex mu;
  std::vector<Idle> idle;

  // The newest idle connection for `key` that is still open; null when none.
  std::unique_ptr<Conn> take(const std::string& key, int64_t idle_timeout_ms) {
    std::vector<std::unique_ptr<Conn>> closing;  // closed outside the lock
    for (;;) {
      std::unique_ptr<Conn> found;
      {
        std::lock_guard lock(mu);
        expire(idle_timeout_ms, closing);
        for (size_t i = idle.size(); i-- > 0;) {
          if (idle[i].key != key) continue;
          found = std::move(idle[i].conn);
          idle.erase(idle.begin() + static_cast<std::ptrdiff_t>(i));
          break;
        }
      }
      if (found == nullptr || found->still_open()) return found;
      closing.push_back(std::move(found));
    }
  }

  void put(std::string key, std::unique_ptr<Conn> conn, int64_t idle_timeout_ms) {
    std::vector<std::unique_ptr<Conn>> closing;
    std::lock_guard lock(mu);
    expire(idle_timeout_ms, closing);
    size_t same = 0;
    for (const Idle& i : idle) same += i.key == key;
    if (same >= kPerTarget) {
      auto oldest = std::find_if(idle.begin(), idle.end(), [&](const Idle& i) { return i.key == key; });
      closing.push_back(std::move(oldest->conn));
      idle.erase(oldest);
    } else if (idle.size() >= kTotal) {
      closing.push_back(std::move(idle.front().conn));
      idle.erase(idle.begin());
    }
    idle.push_back({std::move(key), std::move(conn), Clock::now()});
  }

 private:
  void expire(int64_t idle_timeout_ms, std::vector<std::unique_ptr<Conn>>& closing) {
    const Clock::time_point cutoff = Clock::now() - std::chrono::milliseconds(idle_timeout_ms);
    while (!idle.empty() && idle.front().since <= cutoff) {  // oldest first
      closing.push_back(std::move(idle.front().conn));
      idle.erase(idle.begin());
    }
  }
};

namespace {

Result<std::unique_ptr<ClientTls>> make_tls(const TlsClientOptions& o) {
  auto t = std::make_unique<ClientTls>();
  t->ctx = SSL_CTX_new(TLS_client_method());
  if (t->ctx == nullptr) return internal_error("TLS: " + openssl_error());
  SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  SSL_CTX_set_verify(t->ctx, o.insecure_skip_verify ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, nullptr);
  if (!o.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(t->ctx, o.ca_file.c_str(), nullptr) != 1) {
      return invalid_argument("tls_config.ca_file: cannot load " + o.ca_file + ": " + openssl_error());
    }
  } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
    return internal_error("TLS: cannot load the system's CAs: " + openssl_error());
  }
  if (!o.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(t->ctx, o.cert_file.c_str()) != 1) {
      return invalid_argument("tls_config.cert_file: cannot load " + o.cert_file + ": " + openssl_error());
    }
    if (SSL_CTX_use_PrivateKey_file(t->ctx, o.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return invalid_argument("tls_config.key_file: cannot load " + o.key_file + ": " + openssl_error());
    }
    if (SSL_CTX_check_private_key(t->ctx) != 1) {
      return invalid_argument("tls_config.key_file: " + o.key_file + " does not match " + o.cert_file);
    }
  }
  return t;
}

}  // namespace

Status check_http_client_options(const HttpClientOptions& o, const std::string& what) {
  const HttpAuthOptions& a = o.auth;
  const TlsClientOptions& t = o.tls;
  auto bad = [&](const std::string& m) { return invalid_argument(what + ": " + m); };
  if (t.cert_file.empty() != t.key_file.empty()) {
    return bad("tls_config.cert_file and tls_config.key_file go together (both or neither)");
  }
  const bool basic = !a.username.empty() || !a.password.empty() || !a.password_file.empty();
  const bool authz = !a.credentials.empty() || !a.credentials_file.empty();
  if (basic && authz) return bad("at most one of basic_auth and authorization (or bearer_token) may be set");
  if (basic && a.username.empty()) return bad("basic_auth needs a username");
  if (!a.password.empty() && !a.password_file.empty()) {
    return bad("basic_auth: at most one of password and password_file may be set");
  }
  if (!a.credentials.empty() && !a.credentials_file.empty()) {
    return bad("authorization: at most one of credentials and credentials_file may be set");
  }
  if (lower(a.authorization_type) == "basic") return bad("authorization.type Basic: use basic_auth instead");
  for (const auto& [k, v] : a.headers) {
    const std::string l = lower(k);
    if (l == "authorization" || l == "host" || l == "content-length" || l == "content-encoding" ||
        l == "content-type" || l == "connection" || l == "transfer-encoding" || l == "user-agent" ||
        l.starts_with("x-prometheus-remote-write")) {
      return bad("headers: \"" + k + "\" is set by the client itself and cannot be overridden");
    }
    if (k.empty() || k.find_first_of(" :\r\n\t") != std::string::npos || v.find_first_of("\r\n") != std::string::npos) {
      return bad("headers: \"" + k + "\" is not a valid header");
    }
  }
  for (const auto& [path, key] : {std::pair{a.password_file, "basic_auth.password_file"},
                                  std::pair{a.credentials_file, "authorization.credentials_file"}}) {
    if (path.empty()) continue;
    if (Result<std::string> r = read_secret(path, key); !r) return bad(r.status().message());
  }
  if (!t.ca_file.empty() || !t.cert_file.empty()) {  // loads them as a request would
    Result<std::unique_ptr<ClientTls>> tls = make_tls(t);
    if (!tls) return bad(tls.status().message());
  }
  return Status::ok();
}

int64_t retry_after_ms(std::string_view v) {
  v = trim(v);
  if (v.empty()) return -1;
  if (v.find_first_not_of("0123456789") == std::string_view::npos) {
    if (v.size() > 9) return -1;
    return static_cast<int64_t>(std::stoll(std::string(v))) * 1000;
  }
  std::tm tm{};  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
  std::istringstream in{std::string(v)};
  in >> std::get_time(&tm, "%a, %d %b %Y %H:%M:%S GMT");
  if (in.fail()) return -1;
  const int64_t at = static_cast<int64_t>(::timegm(&tm)) * 1000;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  return std::max<int64_t>(0, at - now);
}

HttpClient::HttpClient(HttpClientOptions options)
    : options_(std::move(options)), tls_(std::make_unique<LazyTls>()), pool_(std::make_unique<Pool>()) {
  if (!options_.proxy) options_.proxy = proxy_from_environment();
}

HttpClient::~HttpClient() = default;

Status HttpClient::check() const {
  if (Status s = check_http_client_options(options_, "client"); !s.is_ok()) return s;
  for (const std::string* p : {&options_.proxy->http_proxy, &options_.proxy->https_proxy}) {
    if (Result<std::optional<ProxyUrl>> r = parse_proxy(*p); !r) return r.status();
  }
  return Status::ok();
}

ProxyOptions proxy_from_environment() {
  auto env = [](const char* upper, const char* lower_case) {
    const char* v = std::getenv(upper);
    if (v == nullptr || *v == '\0') v = std::getenv(lower_case);
    return std::string(v == nullptr ? "" : v);
  };
  return {.http_proxy = env("HTTP_PROXY", "http_proxy"),
          .https_proxy = env("HTTPS_PROXY", "https_proxy"),
          .no_proxy = env("NO_PROXY", "no_proxy")};
}

bool bypasses_proxy(std::string_view no_proxy, std::string_view host_in, std::string_view port) {
  const std::string host = lower(host_in);
  std::array<uint8_t, 16> ip{};
  bool v4 = false;
  const bool is_ip = parse_ip(host, ip, v4);
  if (host == "localhost" || (is_ip && v4 && ip[12] == 127)) return true;
  if (is_ip && !v4 && ip == std::array<uint8_t, 16>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}) return true;
  while (!no_proxy.empty()) {
    const size_t comma = no_proxy.find(',');
    std::string entry = lower(trim(no_proxy.substr(0, comma)));
    no_proxy.remove_prefix(comma == std::string_view::npos ? no_proxy.size() : comma + 1);
    if (entry.empty()) continue;
    if (entry == "*") return true;
    std::string entry_port;  // "[v6]:port", "name:port", "v4:port"; a bare v6 address has several colons
    if (entry.front() == '[') {
      const size_t close = entry.find(']');
      if (close == std::string::npos) continue;
      if (close + 1 < entry.size() && entry[close + 1] == ':') entry_port = entry.substr(close + 2);
      entry = entry.substr(1, close - 1);
    } else if (std::count(entry.begin(), entry.end(), ':') == 1) {
      entry_port = entry.substr(entry.find(':') + 1);
      entry.resize(entry.find(':'));
    }
    if (!entry_port.empty() && entry_port != port) continue;
    if (const size_t slash = entry.find('/'); slash != std::string::npos) {  // CIDR: matches IP hosts
      std::array<uint8_t, 16> net{};
      bool net_v4 = false;
      const std::string bits_text = entry.substr(slash + 1);
      if (!is_ip || bits_text.empty() || bits_text.size() > 3 ||
          bits_text.find_first_not_of("0123456789") != std::string::npos ||
          !parse_ip(entry.substr(0, slash), net, net_v4) || net_v4 != v4) {
        continue;
      }
      const int bits = std::stoi(bits_text) + (v4 ? 96 : 0);
      if (bits > 128) continue;
      bool in = true;
      for (int b = 0; b < bits && in; ++b) in = ((ip[b / 8] ^ net[b / 8]) & (0x80 >> (b % 8))) == 0;
      if (in) return true;
      continue;
    }
    std::array<uint8_t, 16> addr{};
    bool addr_v4 = false;
    if (parse_ip(entry, addr, addr_v4)) {
      if (is_ip && addr == ip) return true;
      continue;
    }
    // A name: "example.com" is itself and its subdomains; ".example.com"
    // and "*.example.com" only its subdomains (as Go's net/http reads it).
    if (entry.starts_with("*.")) entry.erase(0, 1);
    if (entry.front() == '.') {
      if (host.ends_with(entry)) return true;
    } else if (host == entry || host.ends_with("." + entry)) {
      return true;
    }
  }
  return false;
}

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

namespace {

// Sends one request on `conn` and reads its answer. `answered`: some byte of
// the answer arrived (a kept-alive connection that dies before that may be
// retried); `reusable`: the answer was delimited and the server keeps the
// connection open, so it may carry another request.
Result<HttpResponse> exchange(Conn& conn, std::string_view req, std::string_view body, std::string_view method,
                              size_t max, const std::string& what, bool& answered, bool& reusable) {
  answered = reusable = false;
  if (Status s = conn.send_all(req); !s.is_ok()) return s;
  if (Status s = conn.send_all(body); !s.is_ok()) return s;

  std::string buf;
  size_t head_end = std::string::npos;
  while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
    if (buf.size() > 64 * 1024) return io_error("response headers from " + what + " exceed 64 KiB");
    Result<bool> more = conn.recv_some(buf);
    if (!more) return more.status();
    answered = !buf.empty();
    if (!*more) return io_error("connection closed by " + what + " before a complete response header");
  }
  HttpResponse r;
  if (Status s = parse_head(std::string_view(buf).substr(0, head_end), r, what); !s.is_ok()) return s;
  // HTTP/1.1 keeps the connection unless the server says close; 1.0 closes it.
  const bool keep = buf.starts_with("HTTP/1.1 ") && !has_token(r.header("connection"), "close");
  buf.erase(0, head_end + 4);

  const std::string too_big = "response body from " + what + " exceeds " + std::to_string(max) + " bytes";
  bool chunked = lower(r.header("transfer-encoding")).find("chunked") != std::string::npos;
  std::string_view cl = r.header("content-length");
  bool no_body = method == "HEAD" || r.status == 204 || r.status == 304 || r.status / 100 == 1;
  if (no_body) {
    reusable = keep && buf.empty() && r.status / 100 != 1;
    return r;
  }
  if (chunked) {
    size_t pos = 0;
    for (;;) {
      Result<bool> done = dechunk(buf, pos, r.body, max, what);
      if (!done) return done.status();
      if (*done) {
        reusable = keep && pos == buf.size();
        return r;
      }
      buf.erase(0, pos);  // what is left: at most one chunk not yet complete
      pos = 0;
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
    reusable = keep && buf.size() == n;
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

}  // namespace

Result<HttpResponse> HttpClient::request(std::string_view method, std::string_view url, std::string_view body,
                                         const std::vector<std::pair<std::string, std::string>>& headers) const {
  Result<ParsedUrl> pu = parse_url(url);
  if (!pu) return pu.status();
  const ParsedUrl& u = *pu;
  std::string what = u.authority + u.target.substr(0, u.target.find('?'));
  if (options_.cancel && options_.cancel->cancelled()) return Status(Code::kDeadline, "cancelled: " + what);
  Result<std::string> authz = authorization(options_.auth);
  if (!authz) return authz.status();
  Result<Route> route = route_for(*options_.proxy, u);
  if (!route) return route.status();

  std::string req;
  req.reserve(256 + body.size());
  req.append(method).append(" ");
  if (route->absolute_form) req.append("http://").append(u.authority);
  req.append(u.target).append(" HTTP/1.1\r\nHost: ").append(u.authority).append("\r\n");
  if (!options_.keep_alive) req.append("Connection: close\r\n");
  if (route->absolute_form && !route->proxy_authorization.empty()) {
    req.append("Proxy-Authorization: ").append(route->proxy_authorization).append("\r\n");
  }
  bool own_agent = false;
  for (const auto& [k, v] : headers) {
    req.append(k).append(": ").append(v).append("\r\n");
    own_agent |= lower(k) == "user-agent";
  }
  if (!own_agent) req.append("User-Agent: gpulens\r\n");
  for (const auto& [k, v] : options_.auth.headers) req.append(k).append(": ").append(v).append("\r\n");
  if (!authz->empty()) req.append("Authorization: ").append(*authz).append("\r\n");
  if (method == "POST" || !body.empty()) req.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  req.append("\r\n");
  // Small bodies go in one segment with the head; large ones avoid a copy.
  if (body.size() <= 64 * 1024) {
    req.append(body);
    body = {};
  }

  const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  auto open = [&](Conn& conn) -> Status {
    if (Status s = conn.connect(route->host, route->port, route->label); !s.is_ok()) return s;
    if (route->tunnel) {
      const std::string hostport = (u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host) + ":" + u.port;
      if (Status s = conn.tunnel(hostport, route->proxy_authorization, route->label); !s.is_ok()) return s;
    }
    if (!u.tls) return Status::ok();
    std::call_once(tls_->once, [&] {
      Result<std::unique_ptr<ClientTls>> t = make_tls(options_.tls);
      if (t) {
        tls_->tls = std::move(*t);
      } else {
        tls_->status = t.status();
      }
    });
    if (!tls_->tls) return tls_->status;
    return conn.start_tls(tls_->tls->ctx, options_.tls, u.host);
  };
  // A kept-alive connection the server closed under us (its idle timeout
  // raced the request) is not the server's answer: a request safe to repeat
  // goes once more on a fresh connection, within the same deadline.
  const bool repeatable = method == "GET" || method == "HEAD" || (method == "POST" && options_.resend_post);
  for (bool fresh_only = !options_.keep_alive;; fresh_only = true) {
    std::unique_ptr<Conn> conn = fresh_only ? nullptr : pool_->take(route->key, options_.idle_timeout_ms);
    const bool reused = conn != nullptr;
    if (!reused) conn = std::make_unique<Conn>(options_.cancel);
    conn->begin(what, deadline, options_.timeout_ms);
    if (!reused) {
      if (Status s = open(*conn); !s.is_ok()) return s;
    }
    bool answered = false, reusable = false;
    Result<HttpResponse> r = exchange(*conn, req, body, method, options_.max_body_bytes, what, answered, reusable);
    if (!r && reused && !answered && repeatable && r.status().code() != Code::kDeadline) continue;
    if (r && reusable && options_.keep_alive) pool_->put(route->key, std::move(conn), options_.idle_timeout_ms);
    return r;
  }
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
