// epoll loop, connection admission, deadlines and back-pressure.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <csignal>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "server/out_queue.h"
#include "util/ascii.h"
#include "util/log.h"

namespace gpulens {
namespace {

constexpr int64_t kLingerMs = 2000;          // reading and discarding after an error answer
constexpr size_t kLingerDiscardBytes = 1 << 20;
constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kTlsRecord = 16 * 1024;  // the largest TLS record's payload

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view reason(int status) {
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

std::string error_response(int status, std::string_view msg, std::string_view extra_headers = {}) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason(status)) +
                    "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(msg.size() + 1) + "\r\n";
  if (status == 503 || status == 429) out += "Retry-After: 1\r\n";
  out += extra_headers;
  out += "\r\n";
  out += msg;
  out += '\n';
  return out;
}

// Best effort on a socket we are about to close: one non-blocking send.
void send_and_forget(int fd, const std::string& bytes) {
  [[maybe_unused]] ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

enum class Phase { kIdle, kHead, kBody, kLinger };
// Admission of the request at the head of c.in: rate limit, then basic auth.
enum class Admit { kUnchecked, kPending, kGranted, kDenied };

struct Conn {
  int fd = -1;
  uint64_t id = 0;             // unique for the server's life (fds are reused)
  SSL* ssl = nullptr;          // TLS connections
  bool handshaking = false;
  bool ssl_want_write = false; // OpenSSL needs the socket writable to go on reading
  std::shared_ptr<const WebSecurity::State> tls_state;  // keeps the context of its handshake
  Admit admit = Admit::kUnchecked;
  std::string in;
  OutQueue out;
  Phase phase = Phase::kIdle;
  int64_t since = 0;           // start of the current phase (steady ms)
  int64_t write_progress = 0;  // last time queued bytes moved
  size_t queued = 0;           // responses queued since out was last empty
  size_t body_reserved = 0;    // announced body bytes counted in the server total
  size_t linger_discarded = 0;
  bool close_after = false;    // close once out is flushed
  bool linger = false;         // ... after reading what the client still sends
  bool peer_closed = false;
  bool served = false;         // answered at least one request
  bool working = false;        // a request of it is on a worker thread
  bool working_keep_alive = false;
  uint32_t events = 0;         // registered epoll mask
  size_t pending() const { return out.pending(); }
};

// The request the handler sees, its views into `in` (which holds the head
// parsed into `head` and the body after it).
ServerRequest request_of(const RequestHead& head, std::string_view in, bool tls) {
  return ServerRequest{.method = head.method,
                       .path = head.path,
                       .query = head.query,
                       .accept = head.header("accept"),
                       .accept_encoding = head.header("accept-encoding"),
                       .content_type = head.header("content-type"),
                       .content_encoding = head.header("content-encoding"),
                       .authorization = head.header("authorization"),
                       .body = in.substr(head.head_bytes, head.content_length),
                       .tls = tls,
                       .headers = &head.headers};
}

void reset_response(ServerResponse& res) {
  res.status = 200;
  res.content_type = "text/plain; charset=utf-8";
  res.content_encoding = {};
  res.headers.clear();
  res.body.clear();
  res.body_view = {};
  res.shared_body.reset();
}

// A response head, built once and reused while its inputs stay the same.
struct CachedHead {
  int status = 0;
  size_t length = 0;
  bool keep_alive = false;
  const std::string* security = nullptr;  // the security headers' string
  std::shared_ptr<const WebSecurity::State> security_hold;  // keeps that string
  std::string content_type, content_encoding, headers;
  std::string bytes;  // "" until built
};

void build_head(std::string& out, const ServerResponse& res, size_t length, const std::string& security,
                bool keep_alive) {
  char len[24];
  auto lp = std::to_chars(len, len + sizeof len, length).ptr;
  char st[16];
  auto sp = std::to_chars(st, st + sizeof st, res.status).ptr;
  out.clear();
  out += "HTTP/1.1 ";
  out.append(st, sp);
  out += ' ';
  out += reason(res.status);
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

std::string_view ServerRequest::header(std::string_view name) const {
  if (!headers) return {};
  for (const auto& [n, v] : *headers) {
    if (ascii_iequals(n, name)) return v;
  }
  return {};
}

Result<std::pair<std::string, int>> parse_listen_address(std::string_view a) {
  const std::string original(a);
  size_t colon = a.rfind(':');
  if (colon == std::string_view::npos) return invalid_argument("listen address \"" + original + "\" needs a port (HOST:PORT)");
  std::string host(a.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  int port = -1;
  auto ps = a.substr(colon + 1);
  auto [p, ec] = std::from_chars(ps.data(), ps.data() + ps.size(), port);
  if (ec != std::errc() || p != ps.data() + ps.size() || port < 0 || port > 65535) {
    return invalid_argument("listen address \"" + original + "\": invalid port");
  }
  return std::make_pair(host, port);
}

HttpServer::HttpServer(HttpServerOptions options, Handler handler)
    : options_(std::move(options)), handler_(std::move(handler)) {}

HttpServer::~HttpServer() { stop(); }

HttpServerStats HttpServer::stats() const {
  return {.accepted = accepted_, .evicted = evicted_, .refused_busy = refused_busy_, .timed_out = timed_out_,
          .open = open_, .tls_failed = tls_failed_, .unauthorized = unauthorized_, .too_many = too_many_,
          .bcrypt_runs = verifier_ ? verifier_->stats().bcrypt_runs : 0, .workers_busy = workers_busy_};
}

Status HttpServer::start() {
  auto addr = parse_listen_address(options_.listen);
  if (!addr) return addr.status();
  auto [host, port] = *addr;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_s = std::to_string(port);
  if (int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_s.c_str(), &hints, &res); rc != 0) {
    return invalid_argument("listen " + options_.listen + ": " + gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return io_error("listen " + options_.listen + ": socket: " + std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 512) != 0) {
    const std::string err = std::strerror(errno);
    close(fd);
    return unavailable("listen " + options_.listen + ": " + err);
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  listen_fd_ = fd;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.fd = wake_fd_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  if (options_.security) {
    verifier_ = std::make_unique<BasicAuthVerifier>(options_.max_auth_queue);
    ev.data.fd = verifier_->notify_fd();
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, verifier_->notify_fd(), &ev);
  }
  if (options_.offload && options_.worker_threads > 0) {
    done_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ev.data.fd = done_fd_;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, done_fd_, &ev);
    workers_ = std::make_unique<WorkQueue>(options_.worker_threads, options_.max_worker_queue);
  }
  stopping_ = false;
  thread_ = std::thread([this] { run(); });
  return Status::ok();
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  stopping_ = true;
  uint64_t one = 1;
  [[maybe_unused]] auto n = write(wake_fd_, &one, sizeof one);
  thread_.join();
  workers_.reset();  // lets running handlers finish
  done_.clear();
  if (done_fd_ >= 0) close(done_fd_);
  done_fd_ = -1;
  close(listen_fd_);
  close(epoll_fd_);
  close(wake_fd_);
  listen_fd_ = epoll_fd_ = wake_fd_ = -1;
  verifier_.reset();
}

void HttpServer::run_job(Job& job) {
  RequestHead head;
  ServerResponse res;
  // The event loop parsed these bytes already: the same parse succeeds.
  if (parse_request_head(job.raw, options_.request, head).state != HeadParse::kComplete) {
    job.status = 500;
    job.body = std::make_shared<const std::string>("request could not be parsed again\n");
    return;
  }
  reset_response(res);
  handler_(request_of(head, job.raw, job.tls), res);
  job.status = res.status;
  job.content_type = res.content_type;
  job.content_encoding = res.content_encoding;
  job.headers = std::move(res.headers);
  if (res.shared_body) {
    job.body = std::move(res.shared_body);
  } else if (res.body_view.data()) {
    job.body = std::make_shared<const std::string>(res.body_view);
  } else {
    job.body = std::make_shared<const std::string>(std::move(res.body));
  }
}

void HttpServer::run() {
  const HttpServerOptions& o = options_;
  // A TLS write to a peer that is gone raises SIGPIPE (OpenSSL writes with
  // write(2)): blocked on this thread, the write fails with EPIPE instead.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  WebSecurity* security = o.security.get();
  const std::string default_headers = security_headers(nullptr);
  uint64_t next_id = 1;
  double rate_tokens = -1;  // rate_limit bucket; < 0: not started
  int64_t rate_at = 0;
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  size_t total_body = 0;   // announced body bytes in progress, all connections
  size_t body_conns = 0;   // connections in the body phase
  // A spare descriptor: when accept() fails for lack of descriptors, freeing
  // it lets us accept, answer 503 and close instead of spinning on the
  // readable listen socket.
  int spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ServerResponse res;
  res.body.reserve(1 << 16);
  RequestHead head;  // the request being answered; reused: its header list keeps its capacity
  std::array<CachedHead, 4> heads;
  size_t next_head = 0;
  std::vector<epoll_event> events(64);

  auto body_limit = [&](std::string_view method, std::string_view path) -> size_t {
    if (o.body_limit) return std::min(o.body_limit(method, path), o.max_body_bytes);
    return (method == "POST" || method == "PUT") ? o.max_body_bytes : o.max_get_body_bytes;
  };
  auto release_body = [&](Conn& c) {
    if (c.phase == Phase::kBody) --body_conns;
    total_body -= c.body_reserved;
    c.body_reserved = 0;
  };
  auto set_phase = [&](Conn& c, Phase p, int64_t now) {
    if (c.phase == Phase::kBody && p != Phase::kBody) release_body(c);
    c.phase = p;
    c.since = now;
  };
  auto close_conn = [&](int fd) {
    auto it = conns.find(fd);
    if (it == conns.end()) return;
    release_body(*it->second);
    if (it->second->ssl) SSL_free(it->second->ssl);
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(it);
    open_ = conns.size();
  };
  auto wants_read = [&](const Conn& c) {
    if (c.peer_closed) return false;
    if (c.phase == Phase::kLinger || c.handshaking) return true;
    if (c.admit == Admit::kPending || c.working) return false;
    if (c.close_after) return false;
    if (c.pending() >= o.max_queued_response_bytes || c.queued >= o.max_pipelined) return false;
    return c.in.size() < o.request.max_head_bytes + 1 + c.body_reserved;
  };
  auto update_events = [&](Conn& c) {
    uint32_t want = (wants_read(c) ? static_cast<uint32_t>(EPOLLIN) : 0u) |
                    (c.pending() > 0 || c.ssl_want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
    if (want == c.events) return;
    epoll_event ev{};
    ev.events = want;
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
    c.events = want;
  };
  // The security headers of the running web config (defaults without one).
  auto sec_headers = [&](const WebSecurity::State* st) -> const std::string& {
    return st ? st->headers : default_headers;
  };
  auto queue_error = [&](Conn& c, int status, std::string_view msg, std::string_view extra = {}) {
    std::string headers(extra);
    headers += sec_headers(security ? security->current().get() : nullptr);
    c.out.append(error_response(status, msg, headers));
    c.close_after = true;
    c.linger = true;
    ++c.queued;
  };

  // Bytes read: > 0; 0 at the end of the stream; -1 try later; -2 broken.
  auto conn_recv = [&](Conn& c, char* buf, size_t n) -> ssize_t {
    if (!c.ssl) {
      ssize_t r = recv(c.fd, buf, n, 0);
      if (r >= 0) return r;
      return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
    }
    ERR_clear_error();
    const int r = SSL_read(c.ssl, buf, static_cast<int>(std::min<size_t>(n, INT_MAX)));
    if (r > 0) return r;
    switch (SSL_get_error(c.ssl, r)) {
      case SSL_ERROR_WANT_READ: return -1;
      case SSL_ERROR_WANT_WRITE: c.ssl_want_write = true; return -1;
      case SSL_ERROR_ZERO_RETURN: return 0;
      default: return -2;
    }
  };
  auto conn_send = [&](Conn& c, const char* p, size_t n) -> ssize_t {
    if (!c.ssl) {
      ssize_t w = send(c.fd, p, n, MSG_NOSIGNAL);
      if (w >= 0) return w;
      return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
    }
    ERR_clear_error();
    const int w = SSL_write(c.ssl, p, static_cast<int>(std::min<size_t>(n, INT_MAX)));
    if (w > 0) return w;
    const int e = SSL_get_error(c.ssl, w);
    return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? -1 : -2;
  };
  // One best-effort answer to a connection about to be closed.
  auto say_and_forget = [&](Conn& c, const std::string& bytes) {
    if (!c.ssl) {
      send_and_forget(c.fd, bytes);
    } else if (!c.handshaking) {
      ERR_clear_error();
      SSL_write(c.ssl, bytes.data(), static_cast<int>(bytes.size()));
      SSL_shutdown(c.ssl);
    }
  };
  // Drives a TLS handshake: 1 done, 0 in progress, -1 failed.
  auto handshake = [&](Conn& c, int64_t now) -> int {
    ERR_clear_error();
    const int r = SSL_do_handshake(c.ssl);
    c.ssl_want_write = false;
    if (r == 1) {
      if (Status s = c.tls_state->tls->check_peer(c.ssl); !s) {
        ++tls_failed_;
        log::debug("tls_refused", {{"reason", s.message()}});
        return -1;
      }
      c.handshaking = false;
      set_phase(c, Phase::kIdle, now);
      return 1;
    }
    const int e = SSL_get_error(c.ssl, r);
    if (e == SSL_ERROR_WANT_READ) return 0;
    if (e == SSL_ERROR_WANT_WRITE) {
      c.ssl_want_write = true;
      return 0;
    }
    ++tls_failed_;
    const unsigned long err = ERR_peek_last_error();
    const char* why = err ? ERR_reason_error_string(err) : nullptr;
    log::debug("tls_handshake_failed", {{"reason", why ? why : "connection closed"}});
    return -1;
  };
  // Answers the request at the head of c.in without calling the handler
  // (401, 429); a request with a body is not read further: the connection closes.
  auto answer_early = [&](Conn& c, const RequestHead& h, int status, std::string_view msg, std::string_view extra,
                          int64_t now) {
    if (h.content_length > 0 || !h.keep_alive) {
      queue_error(c, status, msg, extra);
      return;
    }
    std::string headers(extra);
    headers += sec_headers(security ? security->current().get() : nullptr);
    std::string out = error_response(status, msg, headers);
    out.erase(out.find("Connection: close\r\n"), 19);  // keep-alive: the request is complete
    if (c.pending() == 0) c.write_progress = now;
    c.out.append(out);
    ++c.queued;
    c.in.erase(0, h.head_bytes);
    c.admit = Admit::kUnchecked;
    set_phase(c, c.in.empty() ? Phase::kIdle : Phase::kHead, now);
  };

  // Queues a response: its head (built once per distinct inputs) and its
  // body, which a shared body is sent from without a copy.
  auto queue_response = [&](Conn& c, const ServerResponse& r, bool keep_alive, bool head_only,
                            const std::shared_ptr<const WebSecurity::State>& st, int64_t now) {
    const std::string& sec = sec_headers(st.get());
    const size_t length = r.shared_body ? r.shared_body->size()
                          : r.body_view.data() ? r.body_view.size()
                                               : r.body.size();
    const CachedHead* h = nullptr;
    for (const CachedHead& e : heads) {
      if (!e.bytes.empty() && e.status == r.status && e.length == length && e.keep_alive == keep_alive &&
          e.security == &sec && e.content_type == r.content_type && e.content_encoding == r.content_encoding &&
          e.headers == r.headers) {
        h = &e;
        break;
      }
    }
    if (!h) {
      CachedHead& e = heads[next_head++ % heads.size()];
      e.status = r.status;
      e.length = length;
      e.keep_alive = keep_alive;
      e.security = &sec;
      e.security_hold = st;
      e.content_type = r.content_type;
      e.content_encoding = r.content_encoding;
      e.headers = r.headers;
      build_head(e.bytes, r, length, sec, keep_alive);
      h = &e;
    }
    if (c.pending() == 0) c.write_progress = now;
    c.out.append(h->bytes);
    if (!head_only) {
      if (r.shared_body) c.out.append_shared(r.shared_body);
      else c.out.append(r.body_view.data() ? r.body_view : std::string_view(r.body));
    }
    ++c.queued;
    c.served = true;
    c.close_after = !keep_alive;
  };

  // Answers every complete request in c.in while the connection's queue has room.
  auto process = [&](Conn& c, int64_t now) {
    while (!c.close_after && c.phase != Phase::kLinger && !c.working) {
      if (c.pending() >= o.max_queued_response_bytes || c.queued >= o.max_pipelined) return;
      if (c.in.empty()) {
        if (c.phase != Phase::kIdle) set_phase(c, Phase::kIdle, now);
        return;
      }
      if (c.phase == Phase::kIdle) set_phase(c, Phase::kHead, now);  // first byte of a request
      HeadParse p = parse_request_head(c.in, o.request, head);
      if (p.state == HeadParse::kIncomplete) return;
      if (p.state == HeadParse::kRefused) {
        queue_error(c, p.status, p.message);
        return;
      }
      if (head.method != "GET" && head.method != "HEAD" && head.method != "POST" && head.method != "PUT" &&
          head.method != "DELETE") {
        queue_error(c, 405, "method not allowed");
        return;
      }
      const std::shared_ptr<const WebSecurity::State> st = security ? security->current() : nullptr;
      if (st && c.admit == Admit::kUnchecked) {
        // exporter-toolkit's order: the rate limit, then the credentials.
        const WebConfig& w = st->config;
        if (w.rate_limit_interval_ms > 0) {
          const double burst = static_cast<double>(w.rate_limit_burst);
          if (rate_tokens < 0) {
            rate_tokens = burst;
            rate_at = now;
          }
          rate_tokens = std::min(burst, rate_tokens + static_cast<double>(now - rate_at) /
                                                          static_cast<double>(w.rate_limit_interval_ms));
          rate_at = now;
          if (rate_tokens < 1) {
            ++too_many_;
            answer_early(c, head, 429, "Too Many Requests", {}, now);
            continue;
          }
          rate_tokens -= 1;
        }
        if (w.users.empty()) {
          c.admit = Admit::kGranted;
        } else {
          switch (verifier_->check(w.users, head.header("authorization"), c.id)) {
            case BasicAuthVerifier::Verdict::kGranted: c.admit = Admit::kGranted; break;
            case BasicAuthVerifier::Verdict::kDenied: c.admit = Admit::kDenied; break;
            case BasicAuthVerifier::Verdict::kPending: c.admit = Admit::kPending; return;
            case BasicAuthVerifier::Verdict::kBusy:
              ++too_many_;
              answer_early(c, head, 429, "too many logins being checked; retry later", {}, now);
              continue;
          }
        }
      }
      if (c.admit == Admit::kPending) return;
      if (c.admit == Admit::kDenied) {
        ++unauthorized_;
        answer_early(c, head, 401, "Unauthorized", "WWW-Authenticate: Basic\r\n", now);
        continue;
      }
      const size_t limit = body_limit(head.method, head.path);
      if (head.content_length > limit) {
        queue_error(c, 413, "request body of " + std::to_string(head.content_length) +
                                " bytes is larger than the limit of " + std::to_string(limit) + " bytes for " +
                                std::string(head.path));
        return;
      }
      const size_t need = head.head_bytes + head.content_length;
      if (c.in.size() < need) {
        if (c.phase != Phase::kBody) {
          if (body_conns + o.reserved_connections >= o.max_connections) {
            queue_error(c, 503, "too many uploads in progress; retry later");
            return;
          }
          if (total_body + head.content_length > o.max_total_body_bytes) {
            queue_error(c, 503, "too many request bytes in progress; retry later");
            return;
          }
          set_phase(c, Phase::kBody, now);
          ++body_conns;
          c.body_reserved = head.content_length;
          total_body += c.body_reserved;
        }
        return;
      }
      if (workers_ && o.offload(head.method, head.path)) {
        auto job = std::make_shared<Job>();
        job->conn = c.id;
        job->tls = c.ssl != nullptr;
        job->raw.assign(c.in, 0, need);
        job->head_only = head.method == "HEAD";
        const bool queued = workers_->submit([this, job] {
          run_job(*job);
          {
            std::lock_guard lock(done_mu_);
            done_.push_back(job);
          }
          uint64_t one = 1;
          [[maybe_unused]] auto n = write(done_fd_, &one, sizeof one);
        });
        if (!queued) {
          ++workers_busy_;
          answer_early(c, head, 503, "the server is busy with other API requests; retry later", {}, now);
          continue;
        }
        c.working = true;
        c.working_keep_alive = head.keep_alive;
        c.in.erase(0, need);
        c.admit = Admit::kUnchecked;
        set_phase(c, Phase::kIdle, now);
        return;
      }
      reset_response(res);
      handler_(request_of(head, c.in, c.ssl != nullptr), res);
      queue_response(c, res, head.keep_alive, head.method == "HEAD", st, now);
      res.shared_body.reset();  // the connection holds it while it needs it
      c.in.erase(0, need);
      c.admit = Admit::kUnchecked;
      set_phase(c, c.in.empty() ? Phase::kIdle : Phase::kHead, now);
    }
  };

  std::string tls_gather;  // reused: the first record of a TLS response
  // Writes what the socket takes; false when the connection should close now.
  auto flush = [&](Conn& c, int64_t now) -> bool {
    while (c.pending() > 0) {
      ssize_t w;
      if (!c.ssl) {
        // Head and body (and pipelined responses) in one call.
        iovec iov[16];
        msghdr m{};
        m.msg_iov = iov;
        m.msg_iovlen = static_cast<size_t>(c.out.gather(iov, 16));
        w = sendmsg(c.fd, &m, MSG_NOSIGNAL);
        if (w < 0) w = errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
      } else {
        // A response head is its own small chunk: sent alone it would be a
        // TLS record and a write(2) of its own. The head and the start of
        // the body go out as one full record instead (a gzip page often
        // fits in it whole). A retry after WANT_WRITE gathers the same bytes.
        std::string_view f = c.out.front();
        if (f.size() < kTlsRecord && c.pending() > f.size()) {
          iovec iov[16];
          const int n = c.out.gather(iov, 16);
          tls_gather.clear();
          for (int i = 0; i < n && tls_gather.size() < kTlsRecord; ++i) {
            const size_t take = std::min(iov[i].iov_len, kTlsRecord - tls_gather.size());
            tls_gather.append(static_cast<const char*>(iov[i].iov_base), take);
          }
          f = tls_gather;
        }
        w = conn_send(c, f.data(), f.size());
      }
      if (w == -1) return true;
      if (w < 0) return false;
      c.out.consume(static_cast<size_t>(w));
      c.write_progress = now;
    }
    c.queued = 0;
    if (c.close_after) {
      if (!c.linger || c.peer_closed) return false;
      if (c.phase != Phase::kLinger) {
        // Tell the client we are done, and read what it still sends for a
        // moment so that closing does not reset the connection before it
        // has read our answer.
        if (c.ssl) SSL_shutdown(c.ssl);  // close_notify
        shutdown(c.fd, SHUT_WR);
        set_phase(c, Phase::kLinger, now);
      }
    }
    return true;
  };

  // Answers and writes until the socket is full or nothing more can be
  // answered from what was read; false when the connection should close.
  // Bounded: it never reads, so it ends once c.in is consumed.
  auto pump = [&](Conn& c, int64_t now) -> bool {
    for (;;) {
      const size_t before = c.in.size();
      process(c, now);
      if (!flush(c, now)) return false;
      if (c.pending() > 0 || c.in.size() == before) break;
    }
    // A client that closed its side and has nothing left to be answered.
    return !(c.peer_closed && c.pending() == 0 && !c.working);
  };

  auto on_readable = [&](Conn& c, int64_t now) -> bool {
    char buf[kReadChunk];
    if (c.handshaking) {
      const int h = handshake(c, now);
      if (h < 0) return false;
      if (h == 0) return true;
      // Done: the request may have come with the last handshake bytes.
    }
    c.ssl_want_write = false;
    if (c.phase == Phase::kLinger) {
      for (;;) {
        ssize_t r = recv(c.fd, buf, sizeof buf, 0);
        if (r > 0) {
          c.linger_discarded += static_cast<size_t>(r);
          if (c.linger_discarded > kLingerDiscardBytes) return false;
          continue;
        }
        return r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      }
    }
    while (wants_read(c)) {
      ssize_t r = conn_recv(c, buf, sizeof buf);
      if (r > 0) {
        c.in.append(buf, static_cast<size_t>(r));
        if (c.phase == Phase::kIdle) set_phase(c, Phase::kHead, now);
        continue;
      }
      if (r == 0) {
        c.peer_closed = true;
        break;
      }
      if (r == -1) break;
      return false;
    }
    return pump(c, now);
  };
  // After the connection could not be read for a while (queue full, login
  // being checked): answer what is buffered, and read what TLS holds
  // decrypted already (epoll does not see it).
  auto resume = [&](Conn& c, int64_t now) -> bool {
    if (!pump(c, now)) return false;
    if (c.ssl && !c.handshaking && wants_read(c) && SSL_has_pending(c.ssl)) return on_readable(c, now);
    return true;
  };

  // The connection to drop for a new one: one lingering after an error
  // answer, else the one idle longest that never completed a request, else
  // the one whose head has been arriving longest, and only then a kept-alive
  // connection between two requests it completed (a scraper's, which a flood
  // of slow clients must not cost its connection); null when every
  // connection has a request in progress.
  auto pick_victim = [&]() -> Conn* {
    Conn* best = nullptr;
    int best_rank = 0;
    for (auto& [fd, cp] : conns) {
      Conn& c = *cp;
      if (c.pending() > 0 || c.working) continue;
      int rank = c.phase == Phase::kLinger ? 4
                 : c.close_after          ? 0
                 : c.phase == Phase::kIdle ? (c.served ? 1 : 3)
                 : c.phase == Phase::kHead ? 2
                                           : 0;
      if (rank == 0) continue;
      if (!best || rank > best_rank || (rank == best_rank && c.since < best->since)) {
        best = &c;
        best_rank = rank;
      }
    }
    return best;
  };

  auto accept_all = [&](int64_t now) {
    std::shared_ptr<const WebSecurity::State> current;
    if (security) {
      security->refresh_if_changed(now);  // certificates rotated: new connections get them
      current = security->current();
    }
    for (;;) {
      int cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (cfd < 0) {
        if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
          close(spare_fd);
          cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd >= 0) {
            if (!current || !current->tls) {
              send_and_forget(cfd, error_response(503, "server out of file descriptors; retry later"));
            }
            close(cfd);
            ++refused_busy_;
          }
          spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
          if (cfd >= 0) continue;
        }
        return;
      }
      if (conns.size() >= o.max_connections) {
        if (Conn* victim = pick_victim()) {
          // A keep-alive connection between requests is closed quietly, as
          // its idle timeout would; one that never completed a request is told.
          if (victim->phase == Phase::kHead || !victim->served) {
            say_and_forget(*victim, error_response(503, "connection dropped for a newer one: server full"));
          }
          ++evicted_;
          close_conn(victim->fd);
        } else {
          // Over TLS nothing can be said before a handshake: closed.
          if (!current || !current->tls) {
            send_and_forget(cfd, error_response(503, "every connection is busy with a request; retry later"));
          }
          close(cfd);
          ++refused_busy_;
          continue;
        }
      }
      int one = 1;
      setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->fd = cfd;
      c->id = next_id++;
      c->since = now;
      if (current && current->tls) {
        c->ssl = SSL_new(current->tls->get());
        if (c->ssl == nullptr || SSL_set_fd(c->ssl, cfd) != 1) {
          if (c->ssl) SSL_free(c->ssl);
          close(cfd);
          ++tls_failed_;
          continue;
        }
        SSL_set_accept_state(c->ssl);
        c->handshaking = true;
        c->tls_state = current;
        c->phase = Phase::kHead;  // the handshake runs on the head's deadline
      }
      c->events = EPOLLIN;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = cfd;
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, cfd, &ev);
      conns.emplace(cfd, std::move(c));
      ++accepted_;
      open_ = conns.size();
    }
  };

  // Deadlines: each phase has its own clock, started when the phase began;
  // bytes arriving do not restart it.
  auto expire = [&](int64_t now) {
    std::vector<int> dead, done;
    for (auto& [fd, cp] : conns) {
      Conn& c = *cp;
      const int64_t age = now - c.since;
      if (c.pending() > 0) {
        if (now - c.write_progress > o.write_timeout_ms) dead.push_back(fd);
        continue;
      }
      if (c.working) continue;  // a worker answers it; the handler's work is bounded
      switch (c.phase) {
        case Phase::kIdle:
          if (age > o.idle_timeout_ms) dead.push_back(fd);
          break;
        case Phase::kHead:
          if (age > o.header_timeout_ms) {
            say_and_forget(c, error_response(408, "request head not complete within " +
                                                      std::to_string(o.header_timeout_ms) + " ms"));
            dead.push_back(fd);
          }
          break;
        case Phase::kBody:
          if (age > o.body_timeout_ms) {
            say_and_forget(c, error_response(408, "request body not complete within " +
                                                    std::to_string(o.body_timeout_ms) + " ms"));
            dead.push_back(fd);
          }
          break;
        case Phase::kLinger:
          if (age > kLingerMs) done.push_back(fd);
          break;
      }
    }
    for (int fd : dead) {
      ++timed_out_;
      close_conn(fd);
    }
    for (int fd : done) close_conn(fd);
  };

  int64_t last_expire = now_ms();
  while (!stopping_) {
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), conns.empty() ? 1000 : 100);
    const int64_t now = now_ms();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) continue;
      if (verifier_ && fd == verifier_->notify_fd()) {
        for (const auto& done : verifier_->take_done()) {
          for (auto& [cfd, cp] : conns) {
            Conn& c = *cp;
            if (c.id != done.ticket || c.admit != Admit::kPending) continue;
            c.admit = done.granted ? Admit::kGranted : Admit::kDenied;
            if (resume(c, now)) update_events(c);
            else close_conn(cfd);
            break;
          }
        }
        continue;
      }
      if (fd == listen_fd_) {
        accept_all(now);
        continue;
      }
      if (fd == done_fd_) {
        uint64_t count;
        [[maybe_unused]] auto r = read(done_fd_, &count, sizeof count);
        std::vector<std::shared_ptr<Job>> finished;
        {
          std::lock_guard lock(done_mu_);
          finished.swap(done_);
        }
        ServerResponse jr;
        for (const auto& job : finished) {
          for (auto& [cfd, cp] : conns) {
            Conn& c = *cp;
            if (c.id != job->conn || !c.working) continue;
            jr.status = job->status;
            jr.content_type = job->content_type;
            jr.content_encoding = job->content_encoding;
            jr.headers = job->headers;
            jr.shared_body = job->body;
            c.working = false;
            queue_response(c, jr, c.working_keep_alive, job->head_only, security ? security->current() : nullptr,
                           now);
            set_phase(c, c.in.empty() ? Phase::kIdle : Phase::kHead, now);
            if (resume(c, now)) update_events(c);
            else close_conn(cfd);
            break;
          }
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      bool alive = !(events[i].events & EPOLLERR);
      if (alive && (events[i].events & (EPOLLIN | EPOLLHUP))) alive = on_readable(c, now);
      if (events[i].events & EPOLLHUP) alive = false;  // both directions gone
      if (alive && (events[i].events & EPOLLOUT)) {
        if (c.handshaking || c.ssl_want_write) alive = on_readable(c, now);
        if (alive) alive = flush(c, now);
        // The client read: answer what it pipelined while we waited.
        if (alive && c.pending() == 0) alive = resume(c, now);
      }
      if (alive) update_events(c);
      else close_conn(fd);
    }
    if (now - last_expire >= 100) {
      expire(now);
      last_expire = now;
    }
  }
  for (auto& [fd, c] : conns) {
    if (c->ssl) SSL_free(c->ssl);
    close(fd);
  }
  if (spare_fd >= 0) close(spare_fd);
  open_ = 0;
}

}  // namespace gpulens
