// The server answers scrapers and refuses garbage without falling over.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

namespace gpulens {
namespace {

// Sends `raw` and reads until the peer closes or `until` appears.
std::string exchange(int port, const std::string& raw, const std::string& until = "") {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return "connect failed";
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (!until.empty() && out.find(until) != std::string::npos) break;
  }
  close(fd);
  return out;
}

struct Server {
  HttpServer server{{.listen = "127.0.0.1:0"}, [](const ServerRequest& req, ServerResponse& res) {
                      res.body = std::string(req.path) + "|" + std::string(req.query) + "|" + std::string(req.accept);
                    }};
  Server() { EXPECT_TRUE(server.start().is_ok()); }
};

TEST(HttpServer, AnswersGetWithKeepAlive) {
  Server s;
  std::string r = exchange(s.server.port(),
                           "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: text/plain\r\n\r\n"
                           "GET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 200 OK"), std::string::npos);
  EXPECT_NE(r.find("/metrics|x=1|text/plain"), std::string::npos);
  EXPECT_NE(r.find("/b||"), std::string::npos);
}

TEST(HttpServer, HeadHasNoBody) {
  Server s;
  std::string r = exchange(s.server.port(), "HEAD /x HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("Content-Length: 4"), std::string::npos);
  EXPECT_EQ(r.find("/x|"), std::string::npos);
}

TEST(HttpServer, RefusesGarbage) {
  Server s;
  EXPECT_NE(exchange(s.server.port(), "\x01\x02garbage\r\n\r\n").find("400"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "GET / HTTP/1.1\r\nno colon here\r\n\r\n").find("400"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "PATCH / HTTP/1.1\r\n\r\n").find("405"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "GET / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n").find("413"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "GET / HTTP/1.1\r\nX: " + std::string(40000, 'a')).find("431"),
            std::string::npos);
  // Still serving afterwards.
  EXPECT_NE(exchange(s.server.port(), "GET /ok HTTP/1.0\r\n\r\n").find("/ok"), std::string::npos);
}

TEST(HttpServer, PutAndDeleteSeeTheirHeadersAndBody) {
  HttpServer server({.listen = "127.0.0.1:0"}, [](const ServerRequest& req, ServerResponse& res) {
    res.status = req.method == "DELETE" ? 202 : 200;
    res.body = std::string(req.method) + "|" + std::string(req.content_type) + "|" + std::string(req.content_encoding) +
               "|" + std::string(req.authorization) + "|" + std::string(req.body);
  });
  ASSERT_TRUE(server.start().is_ok());
  std::string r = exchange(server.port(),
                           "PUT /metrics/job/a HTTP/1.1\r\nContent-Type: text/plain; version=0.0.4\r\n"
                           "Content-Encoding: gzip\r\nAuthorization: Bearer s3cret\r\nContent-Length: 4\r\n"
                           "Connection: close\r\n\r\nx 1\n");
  EXPECT_NE(r.find("PUT|text/plain; version=0.0.4|gzip|Bearer s3cret|x 1\n"), std::string::npos) << r;
  r = exchange(server.port(), "DELETE /metrics/job/a HTTP/1.1\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("HTTP/1.1 202 Accepted"), std::string::npos) << r;
  EXPECT_NE(r.find("DELETE||||"), std::string::npos) << r;
}

TEST(HttpServer, BodyLimitPerRoute) {
  HttpServer server({.listen = "127.0.0.1:0",
                     .max_body_bytes = 8 << 20,
                     .body_limit = [](std::string_view, std::string_view path) -> size_t {
                       return path.starts_with("/big") ? 4 << 20 : 16;
                     }},
                    [](const ServerRequest& req, ServerResponse& res) { res.body = std::to_string(req.body.size()); });
  ASSERT_TRUE(server.start().is_ok());
  const std::string two_mib(2 << 20, 'a');
  std::string r = exchange(server.port(), "POST /big HTTP/1.1\r\nConnection: close\r\nContent-Length: " +
                                              std::to_string(two_mib.size()) + "\r\n\r\n" + two_mib);
  EXPECT_NE(r.find("\r\n\r\n2097152"), std::string::npos) << r.substr(0, 200);
  r = exchange(server.port(), "POST /small HTTP/1.1\r\nContent-Length: 17\r\n\r\n" + std::string(17, 'a'));
  EXPECT_NE(r.find("413"), std::string::npos) << r;
  EXPECT_NE(r.find("limit of 16 bytes for /small"), std::string::npos) << r;
  r = exchange(server.port(), "POST /big HTTP/1.1\r\nContent-Length: 9000000\r\n\r\n");
  EXPECT_NE(r.find("limit of 4194304 bytes"), std::string::npos) << r;
}

TEST(HttpServer, PortInUseIsAClearError) {
  Server s;
  HttpServer second({.listen = "127.0.0.1:" + std::to_string(s.server.port())}, [](auto&, auto&) {});
  Status st = second.start();
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("Address already in use"), std::string::npos) << st.message();
}

TEST(HttpServer, ListenAddressParsing) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:9400")->second, 9400);
  EXPECT_EQ(parse_listen_address("[::1]:80")->first, "::1");
  EXPECT_EQ(parse_listen_address(":9400")->first, "");
  EXPECT_FALSE(parse_listen_address("localhost").ok());
  EXPECT_FALSE(parse_listen_address("a:99999").ok());
  EXPECT_FALSE(parse_listen_address("a:x").ok());
}

}  // namespace
}  // namespace gpulens
