// The server answers scrapers and refuses garbage without falling over.
#include "server/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include <atomic>
#include <string>
#include <vector>

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
  std::string r = exchange(s.server.port(), "HEAD /x HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_NE(r.find("Content-Length: 4"), std::string::npos);
  EXPECT_EQ(r.find("/x|"), std::string::npos);
}

TEST(HttpServer, RefusesGarbage) {
  Server s;
  EXPECT_NE(exchange(s.server.port(), "\x01\x02garbage\r\n\r\n").find("400"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "GET / HTTP/1.1\r\nHost: t\r\nno colon here\r\n\r\n").find("400"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "PATCH / HTTP/1.1\r\nHost: t\r\n\r\n").find("405"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999\r\n\r\n").find("413"), std::string::npos);
  EXPECT_NE(exchange(s.server.port(), "GET / HTTP/1.1\r\nHost: t\r\nX: " + std::string(40000, 'a')).find("431"),
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
                           "PUT /metrics/job/a HTTP/1.1\r\nHost: t\r\nContent-Type: text/plain; version=0.0.4\r\n"
                           "Content-Encoding: gzip\r\nAuthorization: Bearer s3cret\r\nContent-Length: 4\r\n"
                           "Connection: close\r\n\r\nx 1\n");
  EXPECT_NE(r.find("PUT|text/plain; version=0.0.4|gzip|Bearer s3cret|x 1\n"), std::string::npos) << r;
  r = exchange(server.port(), "DELETE /metrics/job/a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
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
  std::string r = exchange(server.port(), "POST /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: " +
                                              std::to_string(two_mib.size()) + "\r\n\r\n" + two_mib);
  EXPECT_NE(r.find("\r\n\r\n2097152"), std::string::npos) << r.substr(0, 200);
  r = exchange(server.port(), "POST /small HTTP/1.1\r\nHost: t\r\nContent-Length: 17\r\n\r\n" + std::string(17, 'a'));
  EXPECT_NE(r.find("413"), std::string::npos) << r;
  EXPECT_NE(r.find("limit of 16 bytes for /small"), std::string::npos) << r;
  r = exchange(server.port(), "POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 9000000\r\n\r\n");
  EXPECT_NE(r.find("limit of 4194304 bytes"), std::string::npos) << r;
}

// A raw client socket: connects, sends, reads with a deadline.
struct Client {
  int fd = -1;
  explicit Client(int port, int rcvbuf = 0) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      close(fd);
      fd = -1;
    }
  }
  ~Client() {
    if (fd >= 0) close(fd);
  }
  void send_all(const std::string& s) const { send(fd, s.data(), s.size(), MSG_NOSIGNAL); }
  // Reads until the peer closes, `until` appears or `ms` pass; `closed` says which.
  std::string read(int ms, const std::string& until = "", bool* closed = nullptr) const {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    std::string out;
    char buf[65536];
    if (closed) *closed = false;
    for (;;) {
      ssize_t n = recv(fd, buf, sizeof buf, 0);
      if (n == 0 && closed) *closed = true;
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
      if (!until.empty() && out.find(until) != std::string::npos) break;
    }
    return out;
  }
};

struct Bounded {
  std::atomic<int> calls{0};
  size_t body_size = 3;
  HttpServer server;
  explicit Bounded(HttpServerOptions o)
      : server(std::move(o), [this](const ServerRequest& req, ServerResponse& res) {
          ++calls;
          res.body.assign(body_size, 'x');
          if (req.path == "/echo") res.body = std::string(req.body) + "|" + std::string(req.header("x-scope-orgid"));
        }) {
    EXPECT_TRUE(server.start().is_ok());
  }
};

HttpServerOptions fast() {
  return {.listen = "127.0.0.1:0", .idle_timeout_ms = 400, .header_timeout_ms = 400, .body_timeout_ms = 400,
          .write_timeout_ms = 2000};
}

TEST(HttpServer, HeadersReachTheHandler) {
  Bounded b(fast());
  Client c(b.server.port());
  c.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nX-Scope-OrgID: tenant-1\r\nContent-Length: 2\r\n\r\nhi");
  EXPECT_NE(c.read(3000, "hi|tenant-1").find("hi|tenant-1"), std::string::npos);
}

// One header byte at a time must not keep a connection alive: the head's
// deadline runs from its first byte.
TEST(HttpServer, DrippedHeadIsDroppedWith408) {
  Bounded b(fast());
  Client c(b.server.port());
  const std::string head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Padding: " + std::string(200, 'a') + "\r\n\r\n";
  std::string got;
  bool closed = false;
  for (size_t i = 0; i < head.size() && !closed; ++i) {
    c.send_all(head.substr(i, 1));
    got += c.read(50, "", &closed);
  }
  got += c.read(1000, "", &closed);
  EXPECT_NE(got.find("408 Request Timeout"), std::string::npos) << got;
  EXPECT_TRUE(closed);
  EXPECT_EQ(b.calls, 0);
}

TEST(HttpServer, UnfinishedBodyIsDroppedWith408) {
  Bounded b(fast());
  Client c(b.server.port());
  c.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\nonly this");
  bool closed = false;
  std::string got = c.read(3000, "", &closed);
  EXPECT_NE(got.find("408"), std::string::npos) << got;
  EXPECT_TRUE(closed);
}

TEST(HttpServer, IdleKeepAliveIsClosed) {
  Bounded b(fast());
  Client c(b.server.port());
  c.send_all("GET / HTTP/1.1\r\nHost: t\r\n\r\n");
  bool closed = false;
  std::string got = c.read(3000, "", &closed);
  EXPECT_NE(got.find("200 OK"), std::string::npos);
  EXPECT_TRUE(closed);
}

TEST(HttpServer, BodyLimitDefaultsAndRoutes) {
  HttpServerOptions o = fast();
  o.body_limit = [](std::string_view method, std::string_view path) -> size_t {
    return method == "POST" && path == "/echo" ? 10 : 0;
  };
  Bounded b(o);
  EXPECT_NE(exchange(b.server.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 11\r\n\r\n").find("413"),
            std::string::npos);
  EXPECT_NE(exchange(b.server.port(), "POST /other HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx").find("413"),
            std::string::npos);
  EXPECT_NE(exchange(b.server.port(), "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                .find("ok|"),
            std::string::npos);
  // Defaults: 4 KiB for a GET, 1 MiB for a POST.
  Bounded d(fast());
  EXPECT_NE(exchange(d.server.port(), "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 4097\r\n\r\n").find("413"), std::string::npos);
  EXPECT_NE(exchange(d.server.port(), "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n").find("413"),
            std::string::npos);
}

TEST(HttpServer, AnnouncedBodiesShareOneBudget) {
  HttpServerOptions o = fast();
  o.body_timeout_ms = 5000;
  o.max_total_body_bytes = 100 * 1024;
  Bounded b(o);
  Client first(b.server.port());
  first.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 60000\r\n\r\nabc");
  first.read(200);  // let the server see it
  Client second(b.server.port());
  second.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 60000\r\n\r\nabc");
  EXPECT_NE(second.read(3000, "\n\n").find("503 Service Unavailable"), std::string::npos);
  // The first upload, finished, is still answered.
  first.send_all(std::string(60000 - 3, 'z'));
  EXPECT_NE(first.read(3000, "|").find("200 OK"), std::string::npos);
}

// 2,000 pipelined requests whose answers are never read: the server stops
// reading them instead of queueing answers without bound, and answers them
// all once the client reads.
TEST(HttpServer, PipelinedRequestsAreBackPressured) {
  HttpServerOptions o = fast();
  o.write_timeout_ms = 10000;
  o.idle_timeout_ms = 10000;
  o.header_timeout_ms = 10000;
  Bounded b(o);
  b.body_size = 16 * 1024;
  Client c(b.server.port(), 64 * 1024);
  std::string many;
  for (int i = 0; i < 2000; ++i) many += "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  std::thread writer([&] { c.send_all(many); });
  // Without reading, the answers stop once socket buffers and the
  // connection's queue are full: far fewer than 2,000.
  Client probe(b.server.port());
  for (int i = 0; i < 5; ++i) probe.read(100);
  const int stalled = b.calls;
  EXPECT_LT(stalled, 1000);
  EXPECT_GE(b.server.stats().open, 2u);
  size_t received = 0;
  const size_t expected = 2000 * (16 * 1024 + 60);
  while (received < expected) {
    std::string chunk = c.read(500);
    if (chunk.empty()) break;
    received += chunk.size();
  }
  writer.join();
  EXPECT_EQ(b.calls, 2000);
}

TEST(HttpServer, FullServerEvictsTheLongestWaitingHead) {
  HttpServerOptions o = fast();
  o.header_timeout_ms = 10000;
  o.max_connections = 8;
  o.reserved_connections = 2;
  Bounded b(o);
  std::vector<std::unique_ptr<Client>> slow;
  for (int i = 0; i < 20; ++i) {
    slow.push_back(std::make_unique<Client>(b.server.port()));
    slow.back()->send_all("GET /slow HT");
  }
  slow.back()->read(200);
  std::string got = exchange(b.server.port(), "GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_NE(got.find("200 OK"), std::string::npos) << got;
  EXPECT_GE(b.server.stats().evicted, 12u);
  EXPECT_LE(b.server.stats().open, 8u);
}

// A flood of slow and silent clients takes the places of one another, not
// that of a scraper's kept-alive connection between two scrapes.
TEST(HttpServer, FullServerKeepsAScrapersKeptAliveConnection) {
  HttpServerOptions o = fast();
  o.header_timeout_ms = 10000;
  o.idle_timeout_ms = 10000;
  o.max_connections = 8;
  o.reserved_connections = 2;
  Bounded b(o);
  Client scraper(b.server.port());
  scraper.send_all("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
  ASSERT_NE(scraper.read(3000, "xxx").find("200 OK"), std::string::npos);
  std::vector<std::unique_ptr<Client>> flood;
  for (int i = 0; i < 30; ++i) {
    flood.push_back(std::make_unique<Client>(b.server.port()));
    if (i % 2 == 0) flood.back()->send_all("GET /slow HT");  // the others send nothing
  }
  flood.back()->read(200);
  EXPECT_GE(b.server.stats().evicted, 20u);
  scraper.send_all("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
  std::string got = scraper.read(3000, "xxx");
  EXPECT_NE(got.find("200 OK"), std::string::npos) << "the scraper's connection was dropped: " << got;
}

TEST(HttpServer, FullOfWorkAnswers503WithAStatusLine) {
  HttpServerOptions o = fast();
  o.body_timeout_ms = 10000;
  o.max_connections = 4;
  o.reserved_connections = 1;
  Bounded b(o);
  std::vector<std::unique_ptr<Client>> up;
  for (int i = 0; i < 3; ++i) {
    up.push_back(std::make_unique<Client>(b.server.port()));
    up.back()->send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nx");
  }
  up.back()->read(200);
  // The fourth upload would take the reserved slot.
  Client fourth(b.server.port());
  fourth.send_all("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nx");
  EXPECT_NE(fourth.read(3000, "\n\n").find("503 Service Unavailable"), std::string::npos);
  // A scrape still gets the reserved slot...
  Client scrape(b.server.port());
  scrape.send_all("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
  EXPECT_NE(scrape.read(3000, "xxx").find("200 OK"), std::string::npos);
  // ... and with every slot busy a further client gets a status line.
  b.body_size = 64 << 20;
  Client hog(b.server.port(), 4096);
  hog.send_all("GET /big HTTP/1.1\r\nHost: t\r\n\r\n");
  // Its big answer is queued once its first bytes arrive; the rest stays unread.
  ASSERT_NE(hog.read(10000, "200 OK").find("200 OK"), std::string::npos);
  Client late(b.server.port());
  std::string got = late.read(3000, "\n\n");
  EXPECT_NE(got.find("503 Service Unavailable"), std::string::npos) << got << " open=" << b.server.stats().open << " evicted=" << b.server.stats().evicted;
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
