// Basic auth and the rate limit in front of every route, and the security
// headers on every answer (TLS itself: tests/integration/web_config_test.sh).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "server/http_server.h"
#include "util/testing/temp_dir.h"

namespace gpulens {
namespace {

// bcrypt("fakepassword"), cost 4.
constexpr const char* kHash = "$2b$04$abcdefghijklmnopqrstuuBQnHgpqTvGwW5nyIPXIaIQpu5QBGVRy";
constexpr const char* kGood = "Authorization: Basic cHJvbTpmYWtlcGFzc3dvcmQ=\r\n";  // prom:fakepassword
constexpr const char* kBad = "Authorization: Basic cHJvbTp3cm9uZw==\r\n";          // prom:wrong

std::string roundtrip(int port, const std::string& raw) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "connect failed";
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

struct AuthServer {
  testing::TestDir dir;
  std::string path = dir.file("web-auth.yml");
  std::unique_ptr<HttpServer> server;
  int calls = 0;
  explicit AuthServer(const std::string& extra = "") {
    std::ofstream(path) << "basic_auth_users:\n  prom: '" << kHash << "'\n" << extra;
    auto sec = WebSecurity::open(path);
    EXPECT_TRUE(sec.ok()) << sec.status().message();
    server = std::make_unique<HttpServer>(HttpServerOptions{.listen = "127.0.0.1:0", .security = *sec},
                                          [this](const ServerRequest& req, ServerResponse& res) {
                                            ++calls;
                                            res.body = "hello " + std::string(req.path);
                                          });
    EXPECT_TRUE(server->start().is_ok());
  }
};

TEST(HttpServerAuth, EveryRouteNeedsTheRightPassword) {
  AuthServer s;
  const int port = s.server->port();
  std::string r = roundtrip(port, "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 401 Unauthorized"), std::string::npos) << r;
  EXPECT_NE(r.find("WWW-Authenticate: Basic\r\n"), std::string::npos);
  EXPECT_EQ(r.find("hello"), std::string::npos);
  r = roundtrip(port, std::string("GET /api/v1/current HTTP/1.1\r\nHost: t\r\n") + kBad + "Connection: close\r\n\r\n");
  EXPECT_NE(r.find("401"), std::string::npos);
  // An unknown user is refused too (and costs a bcrypt run like a known one).
  r = roundtrip(port, "GET / HTTP/1.1\r\nHost: t\r\nAuthorization: Basic bWFsbG9yeTpmYWtlcGFzc3dvcmQ=\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("401"), std::string::npos);
  r = roundtrip(port, std::string("GET /metrics HTTP/1.1\r\nHost: t\r\n") + kGood + "Connection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 200 OK"), std::string::npos) << r;
  EXPECT_NE(r.find("hello /metrics"), std::string::npos);
  EXPECT_EQ(s.calls, 1);  // the handler never saw a refused request
  EXPECT_EQ(s.server->stats().unauthorized, 3u);
}

TEST(HttpServerAuth, VerifiedCredentialsAreCachedSoRepeatsCostNoBcrypt) {
  AuthServer s;
  const int port = s.server->port();
  std::string pipelined;
  for (int i = 0; i < 5; ++i) pipelined += std::string("GET /metrics HTTP/1.1\r\nHost: t\r\n") + kGood + "\r\n";
  pipelined += std::string("GET /metrics HTTP/1.1\r\nHost: t\r\n") + kGood + "Connection: close\r\n\r\n";
  EXPECT_EQ(count(roundtrip(port, pipelined), "HTTP/1.1 200 OK"), 6u);
  for (int i = 0; i < 3; ++i) roundtrip(port, std::string("GET /x HTTP/1.1\r\nHost: t\r\n") + kBad + "Connection: close\r\n\r\n");
  const auto st = s.server->stats();
  EXPECT_EQ(st.bcrypt_runs, 2u);  // one for the right password, one for the wrong one
  EXPECT_EQ(st.unauthorized, 3u);
}

TEST(HttpServerAuth, A401KeepsTheConnectionAndABodyIsNeverRead) {
  AuthServer s;
  const int port = s.server->port();
  std::string r = roundtrip(port, "GET /a HTTP/1.1\r\nHost: t\r\n\r\n" + std::string("GET /b HTTP/1.1\r\nHost: t\r\n") + kGood +
                                     "Connection: close\r\n\r\n");
  EXPECT_NE(r.find("401"), std::string::npos);
  EXPECT_NE(r.find("hello /b"), std::string::npos) << r;
  r = roundtrip(port, "POST /push HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello");
  EXPECT_NE(r.find("401"), std::string::npos);
  EXPECT_NE(r.find("Connection: close"), std::string::npos);
  EXPECT_EQ(s.calls, 1);
}

TEST(HttpServerAuth, RateLimitAnswers429BeforeAuth) {
  AuthServer s("rate_limit: {interval: 1h, burst: 2}\n");
  const int port = s.server->port();
  std::string req = std::string("GET /m HTTP/1.1\r\nHost: t\r\n") + kGood + "\r\n";
  std::string r = roundtrip(port, req + req + req + std::string("GET /m HTTP/1.1\r\nHost: t\r\n") + kGood + "Connection: close\r\n\r\n");
  EXPECT_EQ(count(r, "HTTP/1.1 200 OK"), 2u) << r;
  EXPECT_EQ(count(r, "HTTP/1.1 429 Too Many Requests"), 2u);
  EXPECT_EQ(s.server->stats().too_many, 2u);
}

TEST(HttpServerAuth, EveryAnswerCarriesTheSecurityHeaders) {
  AuthServer s("http_server_config:\n  headers:\n    X-Frame-Options: sameorigin\n    Strict-Transport-Security: max-age=60\n");
  std::string r = roundtrip(s.server->port(), std::string("GET / HTTP/1.1\r\nHost: t\r\n") + kGood + "Connection: close\r\n\r\n");
  EXPECT_NE(r.find("X-Content-Type-Options: nosniff\r\n"), std::string::npos);
  EXPECT_NE(r.find("X-Frame-Options: sameorigin\r\n"), std::string::npos);  // the web config's value wins
  EXPECT_EQ(r.find("X-Frame-Options: DENY"), std::string::npos);
  EXPECT_NE(r.find("Strict-Transport-Security: max-age=60\r\n"), std::string::npos);
  EXPECT_NE(r.find("frame-ancestors 'none'"), std::string::npos);
  r = roundtrip(s.server->port(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n");
  EXPECT_NE(r.find("X-Content-Type-Options: nosniff"), std::string::npos) << r;  // errors too
}

TEST(HttpServerAuth, PlainServerSendsTheDefaultHeaders) {
  HttpServer server({.listen = "127.0.0.1:0"}, [](const ServerRequest&, ServerResponse& res) { res.body = "x"; });
  ASSERT_TRUE(server.start().is_ok());
  std::string r = roundtrip(server.port(), "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("X-Content-Type-Options: nosniff\r\n"), std::string::npos);
  EXPECT_NE(r.find("Referrer-Policy: no-referrer\r\n"), std::string::npos);
  EXPECT_EQ(r.find("Access-Control-Allow-Origin"), std::string::npos);
}

}  // namespace
}  // namespace gpulens
