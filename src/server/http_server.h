// A small, bounded HTTP/1.1 server for /metrics, the JSON API and pushes.
//
// One thread, epoll, non-blocking sockets, keep-alive. It is built for
// scrapers on a node exposed to the cluster network, so every resource a
// client can make it hold is bounded (defaults in HttpServerOptions):
//
//   - the request head: 16 KiB (431), 100 header lines (431), an 8 KiB
//     target (414), malformed (400), a transfer coding (501);
//   - deadlines per connection: the head must be complete 10 s after its
//     first byte (a byte does not extend it), a body 30 s after its head
//     (408 either way); a keep-alive connection idle 30 s is closed;
//   - bodies: a limit per route (body_limit; 4 KiB for GET/HEAD/DELETE,
//     1 MiB otherwise by default) answered 413 before a byte of the body is
//     read, and at most 32 MiB of bodies announced at once across all
//     connections (503 beyond);
//   - pipelining: a connection with 16 responses or 1 MiB of response bytes
//     queued is not read until its client reads; a client that reads nothing
//     for 30 s is dropped;
//   - connections: at most 512. When full, a new connection takes the place
//     of the one that has waited longest without sending a complete request
//     (connections that never sent one first, then slow heads, and only then
//     kept-alive connections between requests they completed, so a
//     scraper's connection survives a flood of slow clients), so a scraper
//     always gets through; at most 512 - 64 connections may be uploading bodies at once
//     (the reserved 64 are for scrapes). A connection that finds every slot
//     busy with requests in progress gets "503 Service Unavailable", never a
//     silent close.
//
//   HttpServer server({.listen = "127.0.0.1:9400"}, [](const ServerRequest& req, ServerResponse& res) {
//     res.body = "ok\n";
//   });
//   if (Status s = server.start(); !s) ...;   // "listen 127.0.0.1:9400: Address already in use"
//   ...
//   server.stop();
//
// With a web config (options.security, see web_security.h) the listener
// speaks TLS (handshake within the head deadline; a failed one is closed
// and counted), every request of every route needs basic auth when users
// are set (401 with WWW-Authenticate: Basic before any body is read; bcrypt
// runs off this thread, basic_auth.h), and rate_limit answers 429 before
// auth. Every response carries the security headers (security_headers()).
// A refusal at accept (503) cannot be spoken before a TLS handshake: such a
// connection is closed.
//
// Responses are written with writev(2) from the connection's queue: a body
// the handler shares (ServerResponse::shared_body, the cached /metrics page)
// is sent from the cache's own buffer, and the response head is built once
// per distinct (status, type, encoding, length, headers, keep-alive) and
// reused, so a scrape of an unchanged page allocates nothing and copies only
// its head.
//
// Requests for which options.offload says so (work that grows with the
// history) are answered by the handler on worker threads (work_queue.h):
// the event loop goes on serving every other connection meanwhile. At most
// worker_threads run at once and max_worker_queue wait; beyond that the
// request is answered "503 Service Unavailable" with Retry-After: 1. A
// connection with a request on a worker reads nothing more until it is
// answered (responses stay in request order).
//
// Thread-safety: start()/stop() from the owning thread; body_limit and
// offload run on the server thread, the handler on the server thread or, for
// offloaded requests, on a worker thread (at the same time as other calls).
// stats() may be called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "server/basic_auth.h"
#include "server/http_request.h"
#include "server/web_security.h"
#include "server/work_queue.h"
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
  bool tls = false;  // arrived over TLS
  const std::vector<std::pair<std::string_view, std::string_view>>* headers = nullptr;

  // The first header of that name (case-insensitive), "" if absent.
  std::string_view header(std::string_view name) const;
};

struct ServerResponse {
  int status = 200;
  std::string_view content_type = "text/plain; charset=utf-8";
  std::string_view content_encoding;  // "" or "gzip"
  std::string headers;                // extra header lines, each "Name: value\r\n"
  std::string body;                   // owned, reused between requests
  std::string_view body_view;         // if set, sent instead of body (copied once into the connection)
  // If set, sent instead of both, from this buffer (not copied), which the
  // connection holds until written: the handler must not change the string
  // while another owner holds it (replace it, or change it when use_count() == 1).
  std::shared_ptr<const std::string> shared_body;
};

struct HttpServerOptions {
  std::string listen = "127.0.0.1:9400";  // host:port; ":9400" or "0.0.0.0:9400" for all
  int64_t idle_timeout_ms = 30000;        // keep-alive connection with no request started
  int64_t header_timeout_ms = 10000;      // first byte of a request to the end of its head
  int64_t body_timeout_ms = 30000;        // end of the head to the end of the body
  int64_t write_timeout_ms = 30000;       // queued response bytes with no progress
  size_t max_connections = 512;
  size_t reserved_connections = 64;       // never given to body uploads
  RequestLimits request;                  // head size, header count, target length
  size_t max_get_body_bytes = 4 * 1024;   // default limit for GET, HEAD, DELETE
  size_t max_body_bytes = 1 << 20;        // default limit for POST, PUT, and the cap of body_limit
  size_t max_total_body_bytes = 32 << 20; // announced bodies in progress, all connections
  size_t max_pipelined = 16;              // responses queued per connection before reading stops
  size_t max_queued_response_bytes = 1 << 20;
  // Body limit per route, in bytes, capped at max_body_bytes; unset: the two
  // defaults above by method. Called on the server thread.
  std::function<size_t(std::string_view method, std::string_view path)> body_limit;
  // TLS, basic auth, headers, rate limit (serve --web-config-file); null: plain HTTP, no auth.
  std::shared_ptr<WebSecurity> security;
  size_t max_auth_queue = 8;              // logins waiting for bcrypt; 429 beyond
  // Requests answered on worker threads instead of the event loop; null: none.
  std::function<bool(std::string_view method, std::string_view path)> offload;
  size_t worker_threads = 2;
  size_t max_worker_queue = 16;           // offloaded requests waiting for a worker; 503 beyond
};

// Counters for tests and self-metrics. Monotonic unless noted.
struct HttpServerStats {
  uint64_t accepted = 0;
  uint64_t evicted = 0;           // dropped to make room for a new connection
  uint64_t refused_busy = 0;      // answered 503 at accept
  uint64_t timed_out = 0;         // 408 or idle/write deadline
  uint64_t open = 0;              // current
  uint64_t tls_failed = 0;        // handshakes that failed (or peers refused by client_allowed_sans)
  uint64_t unauthorized = 0;      // answered 401
  uint64_t too_many = 0;          // answered 429: rate limit or too many logins being checked
  uint64_t bcrypt_runs = 0;       // passwords hashed (cache misses)
  uint64_t workers_busy = 0;      // answered 503: the worker queue was full
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
  HttpServerStats stats() const;

 private:
  // The event loop, in pieces (accept, read, route, write, expire); the
  // rules it applies are in conn_policy.h.
  class Loop;
  void run();

  HttpServerOptions options_;
  Handler handler_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> accepted_{0}, evicted_{0}, refused_busy_{0}, timed_out_{0}, open_{0};
  std::atomic<uint64_t> tls_failed_{0}, unauthorized_{0}, too_many_{0}, workers_busy_{0};
  std::unique_ptr<BasicAuthVerifier> verifier_;
  // Offloaded requests: the raw request in, the response out (to the event
  // loop through done_fd_).
  struct Job {
    uint64_t conn = 0;
    bool tls = false;
    bool head_only = false;  // HEAD: the head alone is sent
    std::string raw;  // head and body as received
    int status = 200;
    std::string content_type, content_encoding, headers;
    std::shared_ptr<const std::string> body;
  };
  void run_job(Job& job);
  std::unique_ptr<WorkQueue> workers_;
  int done_fd_ = -1;
  std::mutex done_mu_;
  std::vector<std::shared_ptr<Job>> done_;
  std::thread thread_;
};

// Splits "host:port" ("[::1]:9400", ":9400"); port 0 picks a free one.
Result<std::pair<std::string, int>> parse_listen_address(std::string_view address);

}  // namespace gpulens
