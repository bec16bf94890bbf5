// Tests for the HTTP client against loopback servers in threads: a one-shot
// server, a keep-alive server counting connections, an HTTP proxy.
#include "util/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "util/testing/http_test_server.h"
#include "util/testing/loopback.h"
#include "util/testing/temp_dir.h"

namespace gpulens {
namespace {

// Listens on 127.0.0.1:<ephemeral>; serves one connection with `reply`
// after reading the request head (and body, by Content-Length).
// An empty `reply` means: accept, read, then never answer.
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = testing::listen_loopback(4, port_);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneShotServer() {
    ::shutdown(fd_, SHUT_RDWR);
    if (client_ >= 0) ::shutdown(client_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  const std::string& request() const { return request_; }  // valid after the client returned

 private:
  void serve() {
    int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    client_ = c;
    char buf[4096];
    size_t want = std::string::npos;
    for (;;) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      request_.append(buf, static_cast<size_t>(n));
      size_t head = request_.find("\r\n\r\n");
      if (head != std::string::npos && want == std::string::npos) {
        size_t cl = request_.find("Content-Length: ");
        want = head + 4 + (cl == std::string::npos ? 0 : std::stoul(request_.substr(cl + 16)));
      }
      if (request_.size() >= want) break;
    }
    if (reply_.empty()) {  // hang until the destructor shuts us down
      while (::recv(c, buf, sizeof buf, 0) > 0) {
      }
    } else {
      ::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
    }
    ::close(c);
  }

  std::string reply_;
  std::string request_;
  int fd_ = -1;
  std::atomic<int> client_{-1};
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(HttpClient, ContentLengthResponse) {
  OneShotServer srv("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello");
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000}).get(srv.url("/api/v1/query?query=up"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
  EXPECT_EQ(r->header("Content-Type"), "text/plain");
  EXPECT_EQ(r->header("x-absent"), "");
  EXPECT_EQ(srv.request().rfind("GET /api/v1/query?query=up HTTP/1.1\r\n", 0), 0u);
  EXPECT_EQ(srv.request().find("Connection:"), std::string::npos);  // HTTP/1.1: kept alive
}

TEST(HttpClient, ChunkedResponseIsDechunked) {
  OneShotServer srv(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\nWiki\r\n6;ext=1\r\npedia \r\nE\r\nin \r\n\r\nchunks.\r\n0\r\n\r\n");
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000}).get(srv.url("/"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body, "Wikipedia in \r\n\r\nchunks.");
}

TEST(HttpClient, LargeChunkedBodyReadInManyPiecesIsDechunkedWhole) {
  // 3 MB in chunks of 1 byte to 200 kB, so that chunk sizes, data and CRLFs
  // fall across the client's reads.
  std::string body, wire = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  size_t sizes[] = {1, 4095, 65536, 65537, 200000, 17, 131071};
  for (size_t i = 0; body.size() < 3'000'000; ++i) {
    const size_t n = sizes[i % 7];
    std::string part(n, static_cast<char>('a' + i % 26));
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx", n);
    wire += std::string(hex) + "\r\n" + part + "\r\n";
    body += part;
  }
  wire += "0\r\n\r\n";
  OneShotServer srv(wire);
  Result<HttpResponse> r = HttpClient({.timeout_ms = 5000}).get(srv.url("/"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->body.size(), body.size());
  EXPECT_TRUE(r->body == body);
}

TEST(HttpClient, PostSendsBodyAndHeaders) {
  OneShotServer srv("HTTP/1.1 204 No Content\r\n\r\n");
  std::string body(200000, 'x');  // larger than one segment
  Result<HttpResponse> r =
      HttpClient({.timeout_ms = 2000}).post(srv.url("/api/v1/write"), body, {{"Content-Encoding", "snappy"}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 204);
  EXPECT_NE(srv.request().find("Content-Encoding: snappy\r\n"), std::string::npos);
  EXPECT_NE(srv.request().find("Content-Length: 200000\r\n"), std::string::npos);
  EXPECT_EQ(srv.request().substr(srv.request().size() - body.size()), body);
}

TEST(HttpClient, BodyUntilCloseWithoutLength) {
  OneShotServer srv("HTTP/1.0 500 Internal Server Error\r\n\r\nboom");
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000}).get(srv.url("/"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, "boom");
}

TEST(HttpClient, RefusedPortNamesTheAddress) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), len), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  std::string port = std::to_string(ntohs(a.sin_port));
  ::close(fd);  // bound, never listened: now refused
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000}).get("http://127.0.0.1:" + port + "/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kUnavailable);
  EXPECT_EQ(r.status().message(), "connect 127.0.0.1:" + port + ": Connection refused");
}

TEST(HttpClient, SilentServerTimesOut) {
  OneShotServer srv("");
  auto t0 = std::chrono::steady_clock::now();
  Result<HttpResponse> r = HttpClient({.timeout_ms = 200}).get(srv.url("/slow?x=1"));
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadline);
  EXPECT_EQ(r.status().message(), "timeout after 200 ms reading response from 127.0.0.1:" +
                                      srv.url("").substr(17) + "/slow");
  EXPECT_LT(took, std::chrono::seconds(2));  // bounded, not hung
}

TEST(HttpClient, OversizedBodyIsAnError) {
  OneShotServer srv("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'a'));
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000, .max_body_bytes = 10}).get(srv.url("/big"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceeds 10 bytes"), std::string::npos) << r.status().message();
}

TEST(HttpClient, OversizedChunkedBodyIsAnError) {
  OneShotServer srv("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n");
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000, .max_body_bytes = 10}).get(srv.url("/big"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exceeds 10 bytes"), std::string::npos) << r.status().message();
}

TEST(HttpClient, RejectsNonHttpUrls) {
  Result<HttpResponse> r = HttpClient().get("ftp://example.com/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("only http:// and https://"), std::string::npos);
}

TEST(UrlEncode, EscapesReservedBytes) {
  EXPECT_EQ(url_encode("rate(x{a=\"b c\"}[5m])"), "rate%28x%7Ba%3D%22b%20c%22%7D%5B5m%5D%29");
  EXPECT_EQ(url_encode("AZaz09-_.~"), "AZaz09-_.~");
}

TEST(HttpClient, CancelCutsAHungRequestShort) {
  OneShotServer srv("");  // accepts, reads, never answers
  HttpCancel cancel;
  EXPECT_FALSE(cancel.cancelled());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.cancel();
  });
  // Without the cancel this request would wait out its ten minutes.
  Result<HttpResponse> r = HttpClient({.timeout_ms = 600'000, .cancel = &cancel}).post(srv.url("/api/v1/write"), "x");
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadline);
  EXPECT_NE(r.status().message().find("cancelled"), std::string::npos) << r.status().message();
  EXPECT_TRUE(cancel.cancelled());
  // It stays cancelled: the next request fails before connecting.
  Result<HttpResponse> again = HttpClient({.timeout_ms = 600'000, .cancel = &cancel}).get(srv.url("/"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().message().rfind("cancelled: 127.0.0.1:", 0), 0u) << again.status().message();
}

TEST(HttpClient, BasicAuthAndExtraHeaders) {
  OneShotServer srv("HTTP/1.1 204 No Content\r\n\r\n");
  HttpClientOptions o{.timeout_ms = 2000};
  o.auth.username = "Aladdin";
  o.auth.password = "open sesame";
  o.auth.headers = {{"X-Scope-OrgID", "tenant-a"}};
  ASSERT_TRUE(HttpClient(o).post(srv.url("/api/v1/write"), "x").ok());
  EXPECT_NE(srv.request().find("Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==\r\n"), std::string::npos)
      << srv.request();
  EXPECT_NE(srv.request().find("X-Scope-OrgID: tenant-a\r\n"), std::string::npos);
}

TEST(HttpClient, BearerTokenFromAFileReReadOnEveryRequest) {
  const testing::TestDir dir;
  const std::string path = dir.file("token");
  { std::ofstream(path) << "first\n"; }
  HttpClientOptions o{.timeout_ms = 2000};
  o.auth.credentials_file = path;
  HttpClient client(o);
  {
    OneShotServer srv("HTTP/1.1 204 No Content\r\n\r\n");
    ASSERT_TRUE(client.get(srv.url("/")).ok());
    EXPECT_NE(srv.request().find("Authorization: Bearer first\r\n"), std::string::npos) << srv.request();
  }
  { std::ofstream(path) << "second"; }
  OneShotServer srv("HTTP/1.1 204 No Content\r\n\r\n");
  ASSERT_TRUE(client.get(srv.url("/")).ok());
  EXPECT_NE(srv.request().find("Authorization: Bearer second\r\n"), std::string::npos) << srv.request();
  ::unlink(path.c_str());
  Result<HttpResponse> gone = client.get(srv.url("/"));
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find("authorization.credentials_file: cannot read"), std::string::npos);
}

TEST(HttpClient, OptionCombinationsAreChecked) {
  auto problem = [](HttpClientOptions o) { return check_http_client_options(o, "remote_write").message(); };
  HttpClientOptions o;
  o.tls.cert_file = "c.pem";
  EXPECT_EQ(problem(o), "remote_write: tls_config.cert_file and tls_config.key_file go together (both or neither)");
  o = {};
  o.auth.username = "u";
  o.auth.credentials = "t";
  EXPECT_NE(problem(o).find("at most one of basic_auth and authorization"), std::string::npos);
  o = {};
  o.auth.headers = {{"Authorization", "x"}};
  EXPECT_NE(problem(o).find("\"Authorization\" is set by the client itself"), std::string::npos);
  o = {};
  o.tls.ca_file = "/nonexistent/ca.pem";
  EXPECT_NE(problem(o).find("tls_config.ca_file: cannot load /nonexistent/ca.pem"), std::string::npos);
  o = {};
  o.auth.password_file = "/nonexistent/pw";
  o.auth.username = "u";
  EXPECT_NE(problem(o).find("basic_auth.password_file: cannot read /nonexistent/pw"), std::string::npos);
  EXPECT_TRUE(check_http_client_options({}, "remote_write").is_ok());
}

TEST(HttpClient, HttpsToAPlainServerFailsTheHandshake) {
  OneShotServer srv("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  std::string url = srv.url("/");
  url.replace(0, 4, "https");
  Result<HttpResponse> r = HttpClient({.timeout_ms = 2000}).get(url);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS handshake with 127.0.0.1:"), std::string::npos) << r.status().message();
}

TEST(HttpClient, RetryAfterSecondsAndDates) {
  EXPECT_EQ(retry_after_ms("120"), 120'000);
  EXPECT_EQ(retry_after_ms(" 0 "), 0);
  EXPECT_EQ(retry_after_ms(""), -1);
  EXPECT_EQ(retry_after_ms("soon"), -1);
  EXPECT_EQ(retry_after_ms("Sun, 06 Nov 1994 08:49:37 GMT"), 0);  // in the past: now
  EXPECT_GT(retry_after_ms("Fri, 31 Dec 2100 23:59:59 GMT"), 1'000'000'000);
}

// Waits (at most 10 s) until `done` holds; false if it never did.
template <typename F>
bool eventually(F done) {
  for (int i = 0; i < 1000 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return done();
}

TEST(HttpClientKeepAlive, SequentialRequestsShareOneConnection) {
  testing::KeepAliveServer srv({});
  HttpClient client({.timeout_ms = 5000});
  for (int i = 0; i < 10; ++i) {
    Result<HttpResponse> r = i % 2 == 0 ? client.get(srv.url("/metrics")) : client.post(srv.url("/api/v1/write"), "x");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->body, "ok");
  }
  EXPECT_EQ(srv.requests(), 10);
  EXPECT_EQ(srv.accepted(), 1);
  EXPECT_EQ(srv.first_request().find("Connection:"), std::string::npos) << srv.first_request();
}

TEST(HttpClientKeepAlive, ChunkedAnswersKeepTheConnectionToo) {
  testing::KeepAliveServer srv({.reply = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n"});
  HttpClient client({.timeout_ms = 5000});
  for (int i = 0; i < 3; ++i) {
    Result<HttpResponse> r = client.get(srv.url("/"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->body, "ok");
  }
  EXPECT_EQ(srv.accepted(), 1);
}

TEST(HttpClientKeepAlive, KeepAliveOffIsAConnectionPerRequest) {
  testing::KeepAliveServer srv({});
  HttpClient client({.timeout_ms = 5000, .keep_alive = false});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.get(srv.url("/")).ok());
  EXPECT_EQ(srv.accepted(), 3);
  EXPECT_NE(srv.first_request().find("Connection: close\r\n"), std::string::npos);
}

TEST(HttpClientKeepAlive, ConnectionCloseOrHttp10AnswersAreNotReused) {
  for (const char* reply : {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
                            "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"}) {
    testing::KeepAliveServer srv({.reply = reply});
    HttpClient client({.timeout_ms = 5000});
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.get(srv.url("/")).ok());
    EXPECT_EQ(srv.accepted(), 3) << reply;
  }
}

TEST(HttpClientKeepAlive, GetOnAConnectionTheServerDroppedIsRetriedOnce) {
  // The server answers one request per connection and hangs up on the next
  // without answering: each reused connection dies under its request.
  testing::KeepAliveServer srv({.answers_per_connection = 1});
  HttpClient client({.timeout_ms = 5000});
  for (int i = 0; i < 4; ++i) {
    Result<HttpResponse> r = client.get(srv.url("/metrics"));
    ASSERT_TRUE(r.ok()) << i << ": " << r.status().message();
    EXPECT_EQ(r->body, "ok");
  }
  EXPECT_EQ(srv.accepted(), 4);
  EXPECT_EQ(srv.requests(), 7);  // 4 answered + 3 sent on a dead connection
}

TEST(HttpClientKeepAlive, PostIsResentOnlyWhenTheOptionsSaySo) {
  testing::KeepAliveServer srv({.answers_per_connection = 1});
  HttpClient once({.timeout_ms = 5000});
  ASSERT_TRUE(once.post(srv.url("/api/v1/profile"), "x").ok());
  Result<HttpResponse> r = once.post(srv.url("/api/v1/profile"), "x");
  ASSERT_FALSE(r.ok());  // not safe to repeat: the error, not a second request
  EXPECT_NE(r.status().message().find("connection closed by 127.0.0.1:"), std::string::npos) << r.status().message();
  EXPECT_EQ(srv.accepted(), 1);

  HttpClient resend({.timeout_ms = 5000, .resend_post = true});
  ASSERT_TRUE(resend.post(srv.url("/api/v1/write"), "x").ok());
  Result<HttpResponse> again = resend.post(srv.url("/api/v1/write"), "x");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(srv.accepted(), 3);
}

TEST(HttpClientKeepAlive, IdleConnectionsExpire) {
  testing::KeepAliveServer srv({});
  HttpClient client({.timeout_ms = 5000, .idle_timeout_ms = 1});
  ASSERT_TRUE(client.get(srv.url("/")).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // longer than the idle timeout
  ASSERT_TRUE(client.get(srv.url("/")).ok());
  EXPECT_EQ(srv.accepted(), 2);
  EXPECT_TRUE(eventually([&] { return srv.closed_by_client() == 1; }));
}

TEST(HttpClientKeepAlive, AtMostFourIdleConnectionsPerTarget) {
  testing::KeepAliveServer srv({.hold_until = 6});  // six requests at once: six connections
  {
    HttpClient client({.timeout_ms = 15000});
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 6; ++i) threads.emplace_back([&] { ok += client.get(srv.url("/")).ok(); });
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(ok, 6);
    EXPECT_EQ(srv.accepted(), 6);
    EXPECT_TRUE(eventually([&] { return srv.closed_by_client() == 2; })) << srv.closed_by_client();
  }
  EXPECT_TRUE(eventually([&] { return srv.closed_by_client() == 6; })) << srv.closed_by_client();
}

// An HTTP proxy on loopback: CONNECT opens a tunnel, a request in absolute
// form is forwarded; either way to the backend on `backend_port`, whatever
// host the client named (the names in these tests do not resolve). Counts
// connections and keeps the first request head it saw.
class TestProxy {
 public:
  explicit TestProxy(uint16_t backend_port, std::string refuse = "")
      : backend_port_(backend_port), refuse_(std::move(refuse)) {
    fd_ = testing::listen_loopback(16, port_);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TestProxy() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    acceptor_.join();
    {
      std::lock_guard lock(mu_);
      for (int c : open_) ::shutdown(c, SHUT_RDWR);
    }
    for (std::thread& t : threads_) t.join();
    for (int c : open_) ::close(c);
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int accepted() const { return accepted_; }
  std::string first_head() {
    std::lock_guard lock(mu_);
    return first_head_;
  }

 private:
  void accept_loop() {
    for (;;) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0 || stopping_) {
        if (c >= 0) ::close(c);
        return;
      }
      ++accepted_;
      std::lock_guard lock(mu_);
      open_.push_back(c);
      threads_.emplace_back([this, c] { serve(c); });
    }
  }

  void serve(int c) {
    std::string head;
    char buf[65536];
    while (head.find("\r\n\r\n") == std::string::npos) {
      ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      head.append(buf, static_cast<size_t>(n));
    }
    {
      std::lock_guard lock(mu_);
      if (first_head_.empty()) first_head_ = head;
    }
    if (!refuse_.empty()) {
      ::send(c, refuse_.data(), refuse_.size(), MSG_NOSIGNAL);
      return;
    }
    int b = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(backend_port_);
    if (::connect(b, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return;
    {
      std::lock_guard lock(mu_);
      open_.push_back(b);
    }
    if (head.starts_with("CONNECT ")) {
      const std::string ok = "HTTP/1.1 200 Connection established\r\n\r\n";
      ::send(c, ok.data(), ok.size(), MSG_NOSIGNAL);
    } else {
      ::send(b, head.data(), head.size(), MSG_NOSIGNAL);
    }
    pollfd p[2] = {{c, POLLIN, 0}, {b, POLLIN, 0}};
    for (;;) {  // relay both ways until either side closes
      if (::poll(p, 2, -1) <= 0) break;
      bool done = false;
      for (int i = 0; i < 2 && !done; ++i) {
        if (p[i].revents == 0) continue;
        ssize_t n = ::recv(p[i].fd, buf, sizeof buf, 0);
        done = n <= 0 || ::send(p[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n;
      }
      if (done) break;
    }
    ::shutdown(b, SHUT_RDWR);
    ::shutdown(c, SHUT_RDWR);
  }

  uint16_t backend_port_;
  std::string refuse_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> accepted_{0};
  std::mutex mu_;
  std::vector<int> open_;
  std::vector<std::thread> threads_;
  std::string first_head_;
  std::thread acceptor_;
};

TEST(HttpClientProxy, HttpsGoesThroughAConnectTunnelAndStaysAlive) {
  const testing::TestDir dir;
  const testing::TestCert cert = testing::make_test_cert(dir.path());
  testing::KeepAliveServer backend({.cert = &cert});
  TestProxy proxy(backend.port());
  HttpClientOptions o{.timeout_ms = 5000};
  o.tls.ca_file = cert.cert_file;  // verified: the name is the URL's, not the proxy's
  o.proxy = ProxyOptions{.https_proxy = "http://user:p%40ss@127.0.0.1:" + proxy.url().substr(17)};
  HttpClient client(o);
  const std::string url = "https://backend.invalid:" + std::to_string(backend.port()) + "/metrics";
  for (int i = 0; i < 3; ++i) {
    Result<HttpResponse> r = client.get(url);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->body, "ok");
  }
  EXPECT_EQ(proxy.accepted(), 1);
  EXPECT_EQ(backend.accepted(), 1);
  const std::string head = proxy.first_head();
  const std::string hostport = "backend.invalid:" + std::to_string(backend.port());
  EXPECT_EQ(head.rfind("CONNECT " + hostport + " HTTP/1.1\r\nHost: " + hostport + "\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("Proxy-Authorization: Basic dXNlcjpwQHNz\r\n"), std::string::npos) << head;  // user:p@ss
  EXPECT_EQ(backend.first_request().rfind("GET /metrics HTTP/1.1\r\n", 0), 0u);
}

TEST(HttpClientProxy, HttpGoesToTheProxyInAbsoluteForm) {
  testing::KeepAliveServer backend({});
  TestProxy proxy(backend.port());
  HttpClientOptions o{.timeout_ms = 5000};
  o.proxy = ProxyOptions{.http_proxy = proxy.url().substr(7)};  // host:port alone means http://
  HttpClient client(o);
  const std::string url = "http://backend.invalid:9400/metrics?x=1";
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.get(url).ok());
  EXPECT_EQ(proxy.accepted(), 1);
  EXPECT_EQ(backend.first_request().rfind("GET http://backend.invalid:9400/metrics?x=1 HTTP/1.1\r\n"
                                          "Host: backend.invalid:9400\r\n", 0), 0u)
      << backend.first_request();
}

TEST(HttpClientProxy, NoProxyHostsGoDirect) {
  testing::KeepAliveServer backend({});
  TestProxy proxy(backend.port());
  HttpClientOptions o{.timeout_ms = 5000};
  o.proxy = ProxyOptions{.http_proxy = proxy.url(), .no_proxy = "example.com, .invalid"};
  Result<HttpResponse> r = HttpClient(o).get("http://backend.invalid:9400/");
  ASSERT_FALSE(r.ok());  // direct: the name does not resolve
  EXPECT_EQ(r.status().message().rfind("resolve backend.invalid:9400: ", 0), 0u) << r.status().message();
  EXPECT_EQ(proxy.accepted(), 0);
  // Loopback never goes through the proxy.
  ASSERT_TRUE(HttpClient(o).get(backend.url("/")).ok());
  EXPECT_EQ(proxy.accepted(), 0);
  EXPECT_EQ(backend.accepted(), 1);
}

TEST(HttpClientProxy, TheEnvironmentNamesTheProxies) {
  testing::KeepAliveServer backend({});
  TestProxy proxy(backend.port());
  for (const char* v : {"HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"}) ::unsetenv(v);
  ::setenv("HTTP_PROXY", proxy.url().c_str(), 1);
  ::setenv("no_proxy", "other.invalid", 1);
  ASSERT_TRUE(HttpClient({.timeout_ms = 5000}).get("http://backend.invalid:9400/").ok());
  EXPECT_EQ(proxy.accepted(), 1);
  Result<HttpResponse> direct = HttpClient({.timeout_ms = 5000}).get("http://other.invalid:9400/");
  ::unsetenv("HTTP_PROXY");
  ::unsetenv("no_proxy");
  ASSERT_FALSE(direct.ok());
  EXPECT_EQ(direct.status().message().rfind("resolve other.invalid:9400", 0), 0u) << direct.status().message();
  EXPECT_EQ(proxy.accepted(), 1);
  const ProxyOptions none = proxy_from_environment();
  EXPECT_EQ(none.http_proxy, "");
  EXPECT_EQ(none.no_proxy, "");
}

TEST(HttpClientProxy, ARefusedConnectIsAnErrorNamingTheProxy) {
  TestProxy proxy(1, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n");
  HttpClientOptions o{.timeout_ms = 5000};
  o.proxy = ProxyOptions{.https_proxy = proxy.url()};
  Result<HttpResponse> r = HttpClient(o).get("https://backend.invalid/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "proxy " + proxy.url().substr(7) +
                                      " refused CONNECT backend.invalid:443: 407 Proxy Authentication Required");
}

TEST(HttpClientProxy, OnlyHttpProxiesAreSupported) {
  HttpClientOptions o;
  o.proxy = ProxyOptions{.https_proxy = "socks5://user:secret@10.0.0.1:1080"};
  HttpClient client(o);
  const Status s = client.check();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_EQ(s.message().rfind("proxy \"socks5://10.0.0.1:1080\": only http:// proxies are supported", 0), 0u)
      << s.message();  // the credentials are not shown
  Result<HttpResponse> r = client.get("https://example.com/");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), s.message());
  EXPECT_TRUE(client.get("http://127.0.0.1:1/").status().message().starts_with("connect 127.0.0.1:1"));
}

TEST(BypassesProxy, NoProxyRules) {
  EXPECT_TRUE(bypasses_proxy("", "localhost", "80"));
  EXPECT_TRUE(bypasses_proxy("", "127.0.0.2", "80"));
  EXPECT_TRUE(bypasses_proxy("", "::1", "80"));
  EXPECT_FALSE(bypasses_proxy("", "example.com", "80"));
  EXPECT_TRUE(bypasses_proxy("*", "example.com", "80"));
  EXPECT_TRUE(bypasses_proxy("a.org, example.com", "example.com", "80"));
  EXPECT_TRUE(bypasses_proxy("example.com", "api.Example.com", "80"));
  EXPECT_FALSE(bypasses_proxy("example.com", "badexample.com", "80"));
  EXPECT_FALSE(bypasses_proxy(".example.com", "example.com", "80"));
  EXPECT_TRUE(bypasses_proxy(".example.com", "a.example.com", "80"));
  EXPECT_TRUE(bypasses_proxy("*.example.com", "a.example.com", "80"));
  EXPECT_TRUE(bypasses_proxy("example.com:8443", "example.com", "8443"));
  EXPECT_FALSE(bypasses_proxy("example.com:8443", "example.com", "443"));
  EXPECT_TRUE(bypasses_proxy("10.0.0.0/8", "10.1.2.3", "80"));
  EXPECT_FALSE(bypasses_proxy("10.0.0.0/8", "11.1.2.3", "80"));
  EXPECT_FALSE(bypasses_proxy("10.0.0.0/8", "ten.example", "80"));  // names are not resolved
  EXPECT_TRUE(bypasses_proxy("192.168.1.7", "192.168.1.7", "80"));
  EXPECT_FALSE(bypasses_proxy("192.168.1.7", "192.168.1.8", "80"));
  EXPECT_TRUE(bypasses_proxy("fd00::/8", "fd12::1", "80"));
  EXPECT_TRUE(bypasses_proxy("[2001:db8::1]:80", "2001:db8::1", "80"));
  EXPECT_FALSE(bypasses_proxy("[2001:db8::1]:80", "2001:db8::1", "81"));
  EXPECT_FALSE(bypasses_proxy("10.0.0.0/x, 10.0.0.0/200", "10.0.0.1", "80"));  // bad entries match nothing
}

}  // namespace
}  // namespace gpulens
