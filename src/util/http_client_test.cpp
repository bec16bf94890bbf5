// Tests for the HTTP client against a one-shot loopback server in a thread.
#include "util/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

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
  EXPECT_NE(srv.request().find("Connection: close\r\n"), std::string::npos);
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

}  // namespace
}  // namespace gpulens
