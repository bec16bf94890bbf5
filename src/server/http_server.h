// A small HTTP/1.1 server for /metrics and the JSON API.
//
// One thread, epoll, non-blocking sockets, keep-alive. It is built for
// scrapers: requests are small GETs, responses are produced by the handler
// into a reused buffer. Anything else is answered with a clear status and
// the connection closed: a request head over 16 KiB (431), a body over the
// route's limit (413; 1 MiB unless `body_limit` says otherwise for the
// route), garbage (400), a method other than GET/HEAD/POST/PUT/DELETE (405). A connection idle for more than the idle timeout is
// closed, so slow or stuck clients cannot exhaust the server.
//
//   HttpServer server({.listen = "127.0.0.1:9400"}, [](const ServerRequest& req, ServerResponse& res) {
//     res.body = "ok\n";
//   });
//   if (Status s = server.start(); !s) ...;   // "listen 127.0.0.1:9400: Address already in use"
//   ...
//   server.stop();
//
// Thread-safety: start()/stop() from the owning thread; the handler runs on
// the server thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "util/status.h"

namespace gpulens {

struct ServerRequest {
  std::string_view method;
  std::string_view path;   // without the query string
  std::string_view query;  // after '?', "" if none
  std::string_view accept;
  std::string_view accept_encoding;
  std::string_view content_type;      // "" if absent
  std::string_view content_encoding;  // "" if absent
  std::string_view authorization;     // "" if absent
  std::string_view body;
};

struct ServerResponse {
  int status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string_view content_encoding;  // "" or "gzip"
  std::string body;                   // owned, reused between requests
  std::string_view body_view;         // if set, sent instead of body (no copy into body)
};

struct HttpServerOptions {
  std::string listen = "127.0.0.1:9400";  // host:port; ":9400" or "0.0.0.0:9400" for all
  int64_t idle_timeout_ms = 30000;
  size_t max_connections = 512;
  // The largest body any route accepts (bytes); bounds each connection's buffer.
  size_t max_body_bytes = 1 << 20;
  // Per-route body limit (bytes), capped at max_body_bytes; absent: 1 MiB.
  // Called on the server thread with the method and the path.
  std::function<size_t(std::string_view method, std::string_view path)> body_limit;
};

class HttpServer {
 public:
  using Handler = std::function<void(const ServerRequest&, ServerResponse&)>;

  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts serving on a background thread.
  Status start();
  void stop();
  // The port actually bound (useful with port 0).
  int port() const { return port_; }

 private:
  void run();

  HttpServerOptions options_;
  Handler handler_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

// Splits "host:port" ("[::1]:9400", ":9400"); port 0 picks a free one.
Result<std::pair<std::string, int>> parse_listen_address(std::string_view address);

}  // namespace gpulens
