// The event loop of HttpServer, in pieces: accept (admission and eviction),
// read (TLS handshake, bytes in), route (a request through its limits, the
// rate limit and auth to the handler or a worker), write (queued answers
// out) and expire (deadlines). The rules themselves are in conn_policy.h.
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
#include <cerrno>
#include <climits>
#include <csignal>
#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "server/conn_policy.h"
#include "server/out_queue.h"
#include "server/response_head.h"
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

// Best effort on a socket we are about to close: one non-blocking send.
void send_and_forget(int fd, const std::string& bytes) {
  [[maybe_unused]] ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

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

// The server thread's state and its steps. One per run(); every member
// function runs on the server thread.
class HttpServer::Loop {
 public:
  explicit Loop(HttpServer& server);
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;
  void run();

 private:
  // Admission of the request at the head of c.in: rate limit, then basic auth.
  enum class Admit { kUnchecked, kPending, kGranted, kDenied };
  // What the admission of a request says: go on, wait (for bcrypt), or it
  // was answered already (429, 401).
  enum class Gate { kPass, kWait, kAnswered };

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
    ConnPhase phase = ConnPhase::kIdle;
    int64_t since = 0;           // start of the current phase (steady ms)
    int64_t write_progress = 0;  // last time queued bytes moved
    size_t queued = 0;           // responses queued since out was last empty
    size_t body_reserved = 0;    // announced body bytes counted in the server's BodyBudget
    size_t linger_discarded = 0;
    bool close_after = false;    // close once out is flushed
    bool linger = false;         // ... after reading what the client still sends
    bool peer_closed = false;
    bool served = false;         // answered at least one request
    bool working = false;        // a request of it is on a worker thread
    bool working_keep_alive = false;
    uint32_t events = 0;         // registered epoll mask

    size_t pending() const { return out.pending(); }
    ConnView view() const {
      return {.phase = phase, .since = since, .write_progress = write_progress, .writing = pending() > 0,
              .working = working, .close_after = close_after, .served = served};
    }
    // Bytes read: > 0; 0 at the end of the stream; -1 try later; -2 broken.
    ssize_t receive(char* buf, size_t n);
    // Bytes written: >= 0; -1 try later; -2 broken.
    ssize_t transmit(const char* p, size_t n);
    // One best-effort answer to a connection about to be closed.
    void say_and_forget(const std::string& bytes);
  };

  // ---- accept: admission and eviction
  void accept_all(int64_t now);
  // Makes room for one more connection; false when none can be dropped.
  bool evict_one();
  void add_conn(int cfd, const std::shared_ptr<const WebSecurity::State>& current, int64_t now);
  void close_conn(int fd);

  // ---- read
  bool wants_read(const Conn& c) const;
  void update_events(Conn& c);
  bool on_readable(Conn& c, int64_t now);
  // Drives a TLS handshake: 1 done, 0 in progress, -1 failed.
  int handshake(Conn& c, int64_t now);
  bool resume(Conn& c, int64_t now);

  // ---- route
  bool queue_full(const Conn& c) const {
    return c.pending() >= o_.max_queued_response_bytes || c.queued >= o_.max_pipelined;
  }
  void process(Conn& c, int64_t now);
  bool answer_next(Conn& c, int64_t now);
  Gate gate(Conn& c, const WebSecurity::State* st, int64_t now);
  void start_body(Conn& c, int64_t now);
  bool offload(Conn& c, size_t need, int64_t now);
  size_t body_limit(std::string_view method, std::string_view path) const;
  void set_phase(Conn& c, ConnPhase p, int64_t now);
  void release_body(Conn& c);

  // ---- write
  const std::string& sec_headers(const WebSecurity::State* st) const { return st ? st->headers : default_headers_; }
  void queue_error(Conn& c, int status, std::string_view msg, std::string_view extra = {});
  void answer_early(Conn& c, int status, std::string_view msg, std::string_view extra, int64_t now);
  void queue_response(Conn& c, const ServerResponse& r, bool keep_alive, bool head_only,
                      const std::shared_ptr<const WebSecurity::State>& st, int64_t now);
  bool flush(Conn& c, int64_t now);
  bool pump(Conn& c, int64_t now);

  // ---- expire
  void expire(int64_t now);

  // ---- answers from other threads
  void on_auth_done(int64_t now);
  void on_jobs_done(int64_t now);

  HttpServer& s_;
  const HttpServerOptions& o_;
  WebSecurity* const security_;
  const std::string default_headers_;  // the security headers without a web config
  const ConnTimeouts timeouts_;
  uint64_t next_id_ = 1;
  RateBucket rate_;
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;
  BodyBudget bodies_;
  // A spare descriptor: when accept() fails for lack of descriptors, freeing
  // it lets us accept, answer 503 and close instead of spinning on the
  // readable listen socket.
  int spare_fd_ = -1;
  ServerResponse res_;
  RequestHead head_;  // the request being answered; reused: its header list keeps its capacity
  ResponseHeadCache heads_;
  std::string tls_gather_;  // reused: the first record of a TLS response
  std::vector<epoll_event> events_;
};

void HttpServer::run() {
  // A TLS write to a peer that is gone raises SIGPIPE (OpenSSL writes with
  // write(2)): blocked on this thread, the write fails with EPIPE instead.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);
  Loop(*this).run();
  open_ = 0;
}

HttpServer::Loop::Loop(HttpServer& server)
    : s_(server),
      o_(server.options_),
      security_(server.options_.security.get()),
      default_headers_(security_headers(nullptr)),
      timeouts_{.idle_ms = o_.idle_timeout_ms, .header_ms = o_.header_timeout_ms, .body_ms = o_.body_timeout_ms,
                .write_ms = o_.write_timeout_ms, .linger_ms = kLingerMs},
      bodies_(o_.max_connections, o_.reserved_connections, o_.max_total_body_bytes),
      spare_fd_(open("/dev/null", O_RDONLY | O_CLOEXEC)),
      events_(64) {
  res_.body.reserve(1 << 16);
}

HttpServer::Loop::~Loop() {
  for (auto& [fd, c] : conns_) {
    if (c->ssl) SSL_free(c->ssl);
    close(fd);
  }
  if (spare_fd_ >= 0) close(spare_fd_);
}

void HttpServer::Loop::run() {
  int64_t last_expire = now_ms();
  while (!s_.stopping_) {
    const int n = epoll_wait(s_.epoll_fd_, events_.data(), static_cast<int>(events_.size()),
                             conns_.empty() ? 1000 : 100);
    const int64_t now = now_ms();
    for (int i = 0; i < n; ++i) {
      const int fd = events_[i].data.fd;
      if (fd == s_.wake_fd_) continue;
      if (s_.verifier_ && fd == s_.verifier_->notify_fd()) {
        on_auth_done(now);
        continue;
      }
      if (fd == s_.listen_fd_) {
        accept_all(now);
        continue;
      }
      if (fd == s_.done_fd_) {
        on_jobs_done(now);
        continue;
      }
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      Conn& c = *it->second;
      const uint32_t ev = events_[i].events;
      bool alive = !(ev & EPOLLERR);
      if (alive && (ev & (EPOLLIN | EPOLLHUP))) alive = on_readable(c, now);
      if (ev & EPOLLHUP) alive = false;  // both directions gone
      if (alive && (ev & EPOLLOUT)) {
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
}

// ---- accept ---------------------------------------------------------------

void HttpServer::Loop::accept_all(int64_t now) {
  std::shared_ptr<const WebSecurity::State> current;
  if (security_) {
    security_->refresh_if_changed(now);  // certificates rotated: new connections get them
    current = security_->current();
  }
  const bool can_speak = !current || !current->tls;  // over TLS nothing can be said before a handshake
  for (;;) {
    int cfd = accept4(s_.listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (cfd < 0) {
      if ((errno == EMFILE || errno == ENFILE) && spare_fd_ >= 0) {
        close(spare_fd_);
        cfd = accept4(s_.listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd >= 0) {
          if (can_speak) send_and_forget(cfd, error_response(503, "server out of file descriptors; retry later"));
          close(cfd);
          ++s_.refused_busy_;
        }
        spare_fd_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (cfd >= 0) continue;
      }
      return;
    }
    if (conns_.size() >= o_.max_connections && !evict_one()) {
      if (can_speak) send_and_forget(cfd, error_response(503, "every connection is busy with a request; retry later"));
      close(cfd);
      ++s_.refused_busy_;
      continue;
    }
    add_conn(cfd, current, now);
  }
}

bool HttpServer::Loop::evict_one() {
  VictimPicker picker;
  for (const auto& [fd, cp] : conns_) picker.offer(cp->view(), fd);
  if (!picker.found()) return false;
  Conn& victim = *conns_.at(picker.key());
  // A keep-alive connection between requests is closed quietly, as its idle
  // timeout would; one that never completed a request is told.
  if (victim.phase == ConnPhase::kHead || !victim.served) {
    victim.say_and_forget(error_response(503, "connection dropped for a newer one: server full"));
  }
  ++s_.evicted_;
  close_conn(victim.fd);
  return true;
}

void HttpServer::Loop::add_conn(int cfd, const std::shared_ptr<const WebSecurity::State>& current, int64_t now) {
  int one = 1;
  setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  auto c = std::make_unique<Conn>();
  c->fd = cfd;
  c->id = next_id_++;
  c->since = now;
  if (current && current->tls) {
    c->ssl = SSL_new(current->tls->get());
    if (c->ssl == nullptr || SSL_set_fd(c->ssl, cfd) != 1) {
      if (c->ssl) SSL_free(c->ssl);
      close(cfd);
      ++s_.tls_failed_;
      return;
    }
    SSL_set_accept_state(c->ssl);
    c->handshaking = true;
    c->tls_state = current;
    c->phase = ConnPhase::kHead;  // the handshake runs on the head's deadline
  }
  c->events = EPOLLIN;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = cfd;
  epoll_ctl(s_.epoll_fd_, EPOLL_CTL_ADD, cfd, &ev);
  conns_.emplace(cfd, std::move(c));
  ++s_.accepted_;
  s_.open_ = conns_.size();
}

void HttpServer::Loop::close_conn(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  release_body(*it->second);
  if (it->second->ssl) SSL_free(it->second->ssl);
  epoll_ctl(s_.epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(it);
  s_.open_ = conns_.size();
}

// ---- read -----------------------------------------------------------------

ssize_t HttpServer::Loop::Conn::receive(char* buf, size_t n) {
  if (!ssl) {
    ssize_t r = recv(fd, buf, n, 0);
    if (r >= 0) return r;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
  ERR_clear_error();
  const int r = SSL_read(ssl, buf, static_cast<int>(std::min<size_t>(n, INT_MAX)));
  if (r > 0) return r;
  switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ: return -1;
    case SSL_ERROR_WANT_WRITE: ssl_want_write = true; return -1;
    case SSL_ERROR_ZERO_RETURN: return 0;
    default: return -2;
  }
}

bool HttpServer::Loop::wants_read(const Conn& c) const {
  if (c.peer_closed) return false;
  if (c.phase == ConnPhase::kLinger || c.handshaking) return true;
  if (c.admit == Admit::kPending || c.working) return false;
  if (c.close_after) return false;
  if (queue_full(c)) return false;
  return c.in.size() < o_.request.max_head_bytes + 1 + c.body_reserved;
}

void HttpServer::Loop::update_events(Conn& c) {
  const uint32_t want = (wants_read(c) ? static_cast<uint32_t>(EPOLLIN) : 0u) |
                        (c.pending() > 0 || c.ssl_want_write ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  if (want == c.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.fd = c.fd;
  epoll_ctl(s_.epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  c.events = want;
}

int HttpServer::Loop::handshake(Conn& c, int64_t now) {
  ERR_clear_error();
  const int r = SSL_do_handshake(c.ssl);
  c.ssl_want_write = false;
  if (r == 1) {
    if (Status s = c.tls_state->tls->check_peer(c.ssl); !s) {
      ++s_.tls_failed_;
      log::debug("tls_refused", {{"reason", s.message()}});
      return -1;
    }
    c.handshaking = false;
    set_phase(c, ConnPhase::kIdle, now);
    return 1;
  }
  const int e = SSL_get_error(c.ssl, r);
  if (e == SSL_ERROR_WANT_READ) return 0;
  if (e == SSL_ERROR_WANT_WRITE) {
    c.ssl_want_write = true;
    return 0;
  }
  ++s_.tls_failed_;
  const unsigned long err = ERR_peek_last_error();
  const char* why = err ? ERR_reason_error_string(err) : nullptr;
  log::debug("tls_handshake_failed", {{"reason", why ? why : "connection closed"}});
  return -1;
}

// Reads what the socket has (bounded by wants_read), then answers; false
// when the connection should close now.
bool HttpServer::Loop::on_readable(Conn& c, int64_t now) {
  char buf[kReadChunk];
  if (c.handshaking) {
    const int h = handshake(c, now);
    if (h < 0) return false;
    if (h == 0) return true;
    // Done: the request may have come with the last handshake bytes.
  }
  c.ssl_want_write = false;
  if (c.phase == ConnPhase::kLinger) {
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
    ssize_t r = c.receive(buf, sizeof buf);
    if (r > 0) {
      c.in.append(buf, static_cast<size_t>(r));
      if (c.phase == ConnPhase::kIdle) set_phase(c, ConnPhase::kHead, now);
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
}

// After the connection could not be read for a while (queue full, login
// being checked, a worker answering): answer what is buffered, and read
// what TLS holds decrypted already (epoll does not see it).
bool HttpServer::Loop::resume(Conn& c, int64_t now) {
  if (!pump(c, now)) return false;
  if (c.ssl && !c.handshaking && wants_read(c) && SSL_has_pending(c.ssl)) return on_readable(c, now);
  return true;
}

// ---- route ----------------------------------------------------------------

size_t HttpServer::Loop::body_limit(std::string_view method, std::string_view path) const {
  if (o_.body_limit) return std::min(o_.body_limit(method, path), o_.max_body_bytes);
  return (method == "POST" || method == "PUT") ? o_.max_body_bytes : o_.max_get_body_bytes;
}

void HttpServer::Loop::release_body(Conn& c) {
  if (c.phase == ConnPhase::kBody) bodies_.release(c.body_reserved);
  c.body_reserved = 0;
}

void HttpServer::Loop::set_phase(Conn& c, ConnPhase p, int64_t now) {
  if (c.phase == ConnPhase::kBody && p != ConnPhase::kBody) release_body(c);
  c.phase = p;
  c.since = now;
}

// Answers every complete request in c.in while the connection's queue has room.
void HttpServer::Loop::process(Conn& c, int64_t now) {
  while (!c.close_after && c.phase != ConnPhase::kLinger && !c.working) {
    if (queue_full(c)) return;
    if (c.in.empty()) {
      if (c.phase != ConnPhase::kIdle) set_phase(c, ConnPhase::kIdle, now);
      return;
    }
    if (c.phase == ConnPhase::kIdle) set_phase(c, ConnPhase::kHead, now);  // first byte of a request
    if (!answer_next(c, now)) return;
  }
}

// The request at the front of c.in: answered (true: look at the next one)
// or not yet (false: more bytes, a login check, a worker, or the connection
// closes after an error answer).
bool HttpServer::Loop::answer_next(Conn& c, int64_t now) {
  const HeadParse p = read_request_head(c.in, o_.request, head_);
  if (p.state == HeadParse::kIncomplete) return false;
  if (p.state == HeadParse::kRefused) {
    queue_error(c, p.status, p.message);
    return false;
  }
  const std::shared_ptr<const WebSecurity::State> st = security_ ? security_->current() : nullptr;
  switch (gate(c, st.get(), now)) {
    case Gate::kPass: break;
    case Gate::kWait: return false;
    case Gate::kAnswered: return true;
  }
  const BodyRead body = read_request_body(head_, c.in.size(), body_limit(head_.method, head_.path));
  if (body.state == BodyRead::kTooLarge) {
    queue_error(c, 413, body.message);
    return false;
  }
  if (body.state == BodyRead::kIncomplete) {
    start_body(c, now);
    return false;
  }
  if (s_.workers_ && o_.offload(head_.method, head_.path)) return offload(c, body.need, now);
  reset_response(res_);
  s_.handler_(request_of(head_, c.in, c.ssl != nullptr), res_);
  queue_response(c, res_, head_.keep_alive, head_.method == "HEAD", st, now);
  res_.shared_body.reset();  // the connection holds it while it needs it
  c.in.erase(0, body.need);
  c.admit = Admit::kUnchecked;
  set_phase(c, c.in.empty() ? ConnPhase::kIdle : ConnPhase::kHead, now);
  return true;
}

// exporter-toolkit's order: the rate limit, then the credentials; once per
// request.
HttpServer::Loop::Gate HttpServer::Loop::gate(Conn& c, const WebSecurity::State* st, int64_t now) {
  if (st && c.admit == Admit::kUnchecked) {
    const WebConfig& w = st->config;
    if (w.rate_limit_interval_ms > 0 && !rate_.take(now, w.rate_limit_burst, w.rate_limit_interval_ms)) {
      ++s_.too_many_;
      answer_early(c, 429, "Too Many Requests", {}, now);
      return Gate::kAnswered;
    }
    if (w.users.empty()) {
      c.admit = Admit::kGranted;
    } else {
      switch (s_.verifier_->check(w.users, head_.header("authorization"), c.id)) {
        case BasicAuthVerifier::Verdict::kGranted: c.admit = Admit::kGranted; break;
        case BasicAuthVerifier::Verdict::kDenied: c.admit = Admit::kDenied; break;
        case BasicAuthVerifier::Verdict::kPending: c.admit = Admit::kPending; return Gate::kWait;
        case BasicAuthVerifier::Verdict::kBusy:
          ++s_.too_many_;
          answer_early(c, 429, "too many logins being checked; retry later", {}, now);
          return Gate::kAnswered;
      }
    }
  }
  if (c.admit == Admit::kPending) return Gate::kWait;
  if (c.admit == Admit::kDenied) {
    ++s_.unauthorized_;
    answer_early(c, 401, "Unauthorized", "WWW-Authenticate: Basic\r\n", now);
    return Gate::kAnswered;
  }
  return Gate::kPass;
}

// The head is in, its body is not: the connection enters its body phase if
// the budget of uploads allows (503 otherwise).
void HttpServer::Loop::start_body(Conn& c, int64_t now) {
  if (c.phase == ConnPhase::kBody) return;
  switch (bodies_.reserve(head_.content_length)) {
    case BodyBudget::Verdict::kTooManyUploads:
      queue_error(c, 503, "too many uploads in progress; retry later");
      return;
    case BodyBudget::Verdict::kTooManyBytes:
      queue_error(c, 503, "too many request bytes in progress; retry later");
      return;
    case BodyBudget::Verdict::kReserved: break;
  }
  set_phase(c, ConnPhase::kBody, now);
  c.body_reserved = head_.content_length;
}

// Hands the complete request (its first `need` bytes of c.in) to a worker;
// true when it was answered 503 instead (the queue full).
bool HttpServer::Loop::offload(Conn& c, size_t need, int64_t now) {
  auto job = std::make_shared<Job>();
  job->conn = c.id;
  job->tls = c.ssl != nullptr;
  job->raw.assign(c.in, 0, need);
  job->head_only = head_.method == "HEAD";
  HttpServer& server = s_;
  const bool queued = s_.workers_->submit([&server, job] {
    server.run_job(*job);
    {
      std::lock_guard lock(server.done_mu_);
      server.done_.push_back(job);
    }
    uint64_t one = 1;
    [[maybe_unused]] auto n = write(server.done_fd_, &one, sizeof one);
  });
  if (!queued) {
    ++s_.workers_busy_;
    answer_early(c, 503, "the server is busy with other API requests; retry later", {}, now);
    return true;
  }
  c.working = true;
  c.working_keep_alive = head_.keep_alive;
  c.in.erase(0, need);
  c.admit = Admit::kUnchecked;
  set_phase(c, ConnPhase::kIdle, now);
  return false;
}

// ---- write ----------------------------------------------------------------

void HttpServer::Loop::queue_error(Conn& c, int status, std::string_view msg, std::string_view extra) {
  std::string headers(extra);
  headers += sec_headers(security_ ? security_->current().get() : nullptr);
  c.out.append(error_response(status, msg, headers));
  c.close_after = true;
  c.linger = true;
  ++c.queued;
}

// Answers the request at the head of c.in (parsed into head_) without
// calling the handler (401, 429, 503); a request with a body is not read
// further: the connection closes.
void HttpServer::Loop::answer_early(Conn& c, int status, std::string_view msg, std::string_view extra,
                                    int64_t now) {
  if (head_.content_length > 0 || !head_.keep_alive) {
    queue_error(c, status, msg, extra);
    return;
  }
  std::string headers(extra);
  headers += sec_headers(security_ ? security_->current().get() : nullptr);
  std::string out = error_response(status, msg, headers);
  out.erase(out.find("Connection: close\r\n"), 19);  // keep-alive: the request is complete
  if (c.pending() == 0) c.write_progress = now;
  c.out.append(out);
  ++c.queued;
  c.in.erase(0, head_.head_bytes);
  c.admit = Admit::kUnchecked;
  set_phase(c, c.in.empty() ? ConnPhase::kIdle : ConnPhase::kHead, now);
}

// Queues a response: its head (built once per distinct inputs) and its
// body, which a shared body is sent from without a copy.
void HttpServer::Loop::queue_response(Conn& c, const ServerResponse& r, bool keep_alive, bool head_only,
                                      const std::shared_ptr<const WebSecurity::State>& st, int64_t now) {
  const size_t length = r.shared_body ? r.shared_body->size()
                        : r.body_view.data() ? r.body_view.size()
                                             : r.body.size();
  const std::string& head = heads_.head(r, length, sec_headers(st.get()), st, keep_alive);
  if (c.pending() == 0) c.write_progress = now;
  c.out.append(head);
  if (!head_only) {
    if (r.shared_body) c.out.append_shared(r.shared_body);
    else c.out.append(r.body_view.data() ? r.body_view : std::string_view(r.body));
  }
  ++c.queued;
  c.served = true;
  c.close_after = !keep_alive;
}

ssize_t HttpServer::Loop::Conn::transmit(const char* p, size_t n) {
  if (!ssl) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w >= 0) return w;
    return errno == EAGAIN || errno == EWOULDBLOCK ? -1 : -2;
  }
  ERR_clear_error();
  const int w = SSL_write(ssl, p, static_cast<int>(std::min<size_t>(n, INT_MAX)));
  if (w > 0) return w;
  const int e = SSL_get_error(ssl, w);
  return e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ ? -1 : -2;
}

void HttpServer::Loop::Conn::say_and_forget(const std::string& bytes) {
  if (!ssl) {
    send_and_forget(fd, bytes);
  } else if (!handshaking) {
    ERR_clear_error();
    SSL_write(ssl, bytes.data(), static_cast<int>(bytes.size()));
    SSL_shutdown(ssl);
  }
}

// Writes what the socket takes; false when the connection should close now.
bool HttpServer::Loop::flush(Conn& c, int64_t now) {
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
        tls_gather_.clear();
        for (int i = 0; i < n && tls_gather_.size() < kTlsRecord; ++i) {
          const size_t take = std::min(iov[i].iov_len, kTlsRecord - tls_gather_.size());
          tls_gather_.append(static_cast<const char*>(iov[i].iov_base), take);
        }
        f = tls_gather_;
      }
      w = c.transmit(f.data(), f.size());
    }
    if (w == -1) return true;
    if (w < 0) return false;
    c.out.consume(static_cast<size_t>(w));
    c.write_progress = now;
  }
  c.queued = 0;
  if (c.close_after) {
    if (!c.linger || c.peer_closed) return false;
    if (c.phase != ConnPhase::kLinger) {
      // Tell the client we are done, and read what it still sends for a
      // moment so that closing does not reset the connection before it
      // has read our answer.
      if (c.ssl) SSL_shutdown(c.ssl);  // close_notify
      shutdown(c.fd, SHUT_WR);
      set_phase(c, ConnPhase::kLinger, now);
    }
  }
  return true;
}

// Answers and writes until the socket is full or nothing more can be
// answered from what was read; false when the connection should close.
// Bounded: it never reads, so it ends once c.in is consumed.
bool HttpServer::Loop::pump(Conn& c, int64_t now) {
  for (;;) {
    const size_t before = c.in.size();
    process(c, now);
    if (!flush(c, now)) return false;
    if (c.pending() > 0 || c.in.size() == before) break;
  }
  // A client that closed its side and has nothing left to be answered.
  return !(c.peer_closed && c.pending() == 0 && !c.working);
}

// ---- expire ---------------------------------------------------------------

void HttpServer::Loop::expire(int64_t now) {
  std::vector<int> dead, done;
  for (auto& [fd, cp] : conns_) {
    Conn& c = *cp;
    switch (conn_expiry(c.view(), now, timeouts_)) {
      case ConnExpiry::kNone: break;
      case ConnExpiry::kWriteStalled:
      case ConnExpiry::kIdle: dead.push_back(fd); break;
      case ConnExpiry::kHeadLate:
        c.say_and_forget(error_response(408, "request head not complete within " +
                                                 std::to_string(o_.header_timeout_ms) + " ms"));
        dead.push_back(fd);
        break;
      case ConnExpiry::kBodyLate:
        c.say_and_forget(error_response(408, "request body not complete within " +
                                                 std::to_string(o_.body_timeout_ms) + " ms"));
        dead.push_back(fd);
        break;
      case ConnExpiry::kLingerOver: done.push_back(fd); break;
    }
  }
  for (int fd : dead) {
    ++s_.timed_out_;
    close_conn(fd);
  }
  for (int fd : done) close_conn(fd);
}

// ---- answers from other threads -------------------------------------------

void HttpServer::Loop::on_auth_done(int64_t now) {
  for (const auto& done : s_.verifier_->take_done()) {
    for (auto& [cfd, cp] : conns_) {
      Conn& c = *cp;
      if (c.id != done.ticket || c.admit != Admit::kPending) continue;
      c.admit = done.granted ? Admit::kGranted : Admit::kDenied;
      if (resume(c, now)) update_events(c);
      else close_conn(cfd);
      break;
    }
  }
}

void HttpServer::Loop::on_jobs_done(int64_t now) {
  uint64_t count;
  [[maybe_unused]] auto r = read(s_.done_fd_, &count, sizeof count);
  std::vector<std::shared_ptr<Job>> finished;
  {
    std::lock_guard lock(s_.done_mu_);
    finished.swap(s_.done_);
  }
  ServerResponse jr;
  for (const auto& job : finished) {
    for (auto& [cfd, cp] : conns_) {
      Conn& c = *cp;
      if (c.id != job->conn || !c.working) continue;
      jr.status = job->status;
      jr.content_type = job->content_type;
      jr.content_encoding = job->content_encoding;
      jr.headers = job->headers;
      jr.shared_body = job->body;
      c.working = false;
      queue_response(c, jr, c.working_keep_alive, job->head_only, security_ ? security_->current() : nullptr, now);
      set_phase(c, c.in.empty() ? ConnPhase::kIdle : ConnPhase::kHead, now);
      if (resume(c, now)) update_events(c);
      else close_conn(cfd);
      break;
    }
  }
}

}  // namespace gpulens
