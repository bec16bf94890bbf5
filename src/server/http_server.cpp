// epoll loop, request parsing, response writing.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <algorithm>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

namespace gpulens {
namespace {

constexpr size_t kMaxHead = 16 * 1024;
constexpr size_t kDefaultBodyLimit = 1 << 20;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

struct Conn {
  int fd;
  std::string in;
  std::string out;
  size_t out_off = 0;
  bool close_after = false;
  int64_t last_active = 0;
};

}  // namespace

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
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 128) != 0) {
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
  close(listen_fd_);
  close(epoll_fd_);
  close(wake_fd_);
  listen_fd_ = epoll_fd_ = wake_fd_ = -1;
}

void HttpServer::run() {
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  ServerResponse res;
  res.body.reserve(1 << 16);
  std::vector<epoll_event> events(64);

  auto close_conn = [&](int fd) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    conns.erase(fd);
  };
  auto want_write = [&](Conn& c, bool on) {
    epoll_event ev{};
    ev.events = EPOLLIN | (on ? static_cast<uint32_t>(EPOLLOUT) : 0u);
    ev.data.fd = c.fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  };
  // Writes what it can; returns false when the connection should close now.
  auto flush = [&](Conn& c) -> bool {
    while (c.out_off < c.out.size()) {
      ssize_t w = send(c.fd, c.out.data() + c.out_off, c.out.size() - c.out_off, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          want_write(c, true);
          return true;
        }
        return false;
      }
      c.out_off += static_cast<size_t>(w);
    }
    c.out.clear();
    c.out_off = 0;
    want_write(c, false);
    return !c.close_after;
  };
  auto respond_error = [&](Conn& c, int status, std::string_view msg) {
    c.out += "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason(status)) +
             "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: " +
             std::to_string(msg.size() + 1) + "\r\n\r\n" + std::string(msg) + "\n";
    c.close_after = true;
  };

  // Parses and answers every complete request in c.in. Returns false on a
  // protocol error after queueing the error response.
  auto handle = [&](Conn& c) {
    while (!c.close_after) {
      const size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (c.in.size() > kMaxHead) respond_error(c, 431, "request head larger than 16 KiB");
        return;
      }
      std::string_view head(c.in.data(), end);
      ServerRequest req;
      size_t line_end = head.find("\r\n");
      std::string_view line = head.substr(0, line_end);
      size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
      if (sp1 == std::string_view::npos || sp2 == sp1 || !line.substr(sp2 + 1).starts_with("HTTP/1.")) {
        respond_error(c, 400, "malformed request line");
        return;
      }
      req.method = line.substr(0, sp1);
      std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      const bool http10 = line.substr(sp2 + 1) == "HTTP/1.0";
      size_t q = target.find('?');
      req.path = target.substr(0, q);
      if (q != std::string_view::npos) req.query = target.substr(q + 1);
      size_t content_length = 0;
      bool keep_alive = !http10;
      std::string_view rest = line_end == std::string_view::npos ? std::string_view{} : head.substr(line_end + 2);
      while (!rest.empty()) {
        size_t e = rest.find("\r\n");
        std::string_view h = rest.substr(0, e);
        rest = e == std::string_view::npos ? std::string_view{} : rest.substr(e + 2);
        size_t colon = h.find(':');
        if (colon == std::string_view::npos) {
          respond_error(c, 400, "malformed header line");
          return;
        }
        std::string_view name = trim(h.substr(0, colon)), value = trim(h.substr(colon + 1));
        if (iequals(name, "accept")) req.accept = value;
        else if (iequals(name, "accept-encoding")) req.accept_encoding = value;
        else if (iequals(name, "content-type")) req.content_type = value;
        else if (iequals(name, "content-encoding")) req.content_encoding = value;
        else if (iequals(name, "authorization")) req.authorization = value;
        else if (iequals(name, "connection")) keep_alive = iequals(value, "keep-alive") || (!http10 && !iequals(value, "close"));
        else if (iequals(name, "content-length")) {
          auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), content_length);
          if (ec != std::errc() || p != value.data() + value.size()) {
            respond_error(c, 400, "invalid Content-Length");
            return;
          }
        } else if (iequals(name, "transfer-encoding")) {
          respond_error(c, 400, "chunked request bodies are not supported");
          return;
        }
      }
      size_t limit = options_.body_limit ? options_.body_limit(req.method, req.path) : kDefaultBodyLimit;
      limit = std::min(limit, options_.max_body_bytes);
      if (content_length > limit) {
        respond_error(c, 413, "request body of " + std::to_string(content_length) + " bytes is larger than the limit of " +
                                  std::to_string(limit) + " bytes for " + std::string(req.path));
        return;
      }
      if (c.in.size() < end + 4 + content_length) return;  // wait for the body
      req.body = std::string_view(c.in).substr(end + 4, content_length);
      if (req.method != "GET" && req.method != "HEAD" && req.method != "POST" && req.method != "PUT" &&
          req.method != "DELETE") {
        respond_error(c, 405, "method not allowed");
        return;
      }
      res.status = 200;
      res.content_type = "text/plain; charset=utf-8";
      res.content_encoding = {};
      res.body.clear();
      res.body_view = {};
      handler_(req, res);
      std::string_view body = res.body_view.data() ? res.body_view : std::string_view(res.body);
      char len[24];
      auto lp = std::to_chars(len, len + sizeof len, body.size()).ptr;
      c.out += "HTTP/1.1 ";
      c.out += std::to_string(res.status);
      c.out += ' ';
      c.out += reason(res.status);
      c.out += "\r\nContent-Type: ";
      c.out += res.content_type;
      if (!res.content_encoding.empty()) {
        c.out += "\r\nContent-Encoding: ";
        c.out += res.content_encoding;
      }
      c.out += "\r\nContent-Length: ";
      c.out.append(len, lp);
      c.out += keep_alive ? "\r\n\r\n" : "\r\nConnection: close\r\n\r\n";
      // Copied into the connection's reused buffer: the handler's view is
      // only valid until the next request.
      if (req.method != "HEAD") c.out += body;
      c.close_after = !keep_alive;
      c.in.erase(0, end + 4 + content_length);
    }
  };

  while (!stopping_) {
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 1000);
    const int64_t now = now_ms();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_fd_) continue;
      if (fd == listen_fd_) {
        for (;;) {
          int cfd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd < 0) break;
          if (conns.size() >= options_.max_connections) {
            close(cfd);
            continue;
          }
          int one = 1;
          setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          epoll_event ev{};
          ev.events = EPOLLIN;
          ev.data.fd = cfd;
          epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, cfd, &ev);
          auto c = std::make_unique<Conn>();
          c->fd = cfd;
          c->last_active = now;
          conns.emplace(cfd, std::move(c));
        }
        continue;
      }
      auto it = conns.find(fd);
      if (it == conns.end()) continue;
      Conn& c = *it->second;
      c.last_active = now;
      bool alive = true;
      if (events[i].events & (EPOLLHUP | EPOLLERR)) alive = false;
      if (alive && (events[i].events & EPOLLIN)) {
        char buf[16384];
        for (;;) {
          ssize_t r = recv(fd, buf, sizeof buf, 0);
          if (r > 0) {
            c.in.append(buf, static_cast<size_t>(r));
            if (c.in.size() > kMaxHead + options_.max_body_bytes + 4) break;
            continue;
          }
          if (r == 0) alive = false;
          else if (errno != EAGAIN && errno != EWOULDBLOCK) alive = false;
          break;
        }
        if (alive || !c.in.empty()) handle(c);
        if (!c.out.empty()) alive = flush(c) && alive;
        else if (c.close_after) alive = false;
      } else if (alive && (events[i].events & EPOLLOUT)) {
        alive = flush(c);
      }
      if (!alive) close_conn(fd);
    }
    // Close idle connections.
    for (auto it = conns.begin(); it != conns.end();) {
      if (now - it->second->last_active > options_.idle_timeout_ms) {
        epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->first, nullptr);
        close(it->first);
        it = conns.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& [fd, c] : conns) close(fd);
}

}  // namespace gpulens
