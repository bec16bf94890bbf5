// Response heads are built once per distinct answer and reused; error
// answers close the connection and say when to retry.
#include "server/response_head.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace gpulens {
namespace {

TEST(ResponseHeadCache, BuildsTheHeadOfAnAnswer) {
  ResponseHeadCache heads;
  ServerResponse r;
  r.content_type = "text/plain; version=0.0.4";
  r.content_encoding = "gzip";
  r.headers = "Vary: Accept-Encoding\r\n";
  const std::string security = "X-Content-Type-Options: nosniff\r\n";
  EXPECT_EQ(heads.head(r, 1234, security, nullptr, true),
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Encoding: gzip\r\n"
            "Content-Length: 1234\r\nVary: Accept-Encoding\r\nX-Content-Type-Options: nosniff\r\n\r\n");
  r.status = 404;
  r.content_encoding = {};
  r.headers.clear();
  EXPECT_EQ(heads.head(r, 0, security, nullptr, false),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: 0\r\n"
            "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n");
}

TEST(ResponseHeadCache, ReusesTheHeadOfAnUnchangedAnswer) {
  ResponseHeadCache heads;
  ServerResponse r;
  const std::string security;
  const std::string* first = &heads.head(r, 100, security, nullptr, true);
  EXPECT_EQ(&heads.head(r, 100, security, nullptr, true), first);
  // Each input makes another head.
  EXPECT_NE(heads.head(r, 101, security, nullptr, true), *first);
  EXPECT_NE(heads.head(r, 100, security, nullptr, false), *first);
  ServerResponse gz = r;
  gz.content_encoding = "gzip";
  EXPECT_NE(heads.head(gz, 100, security, nullptr, true), *first);
  // Four are kept: the first is still there after three others.
  EXPECT_EQ(&heads.head(r, 100, security, nullptr, true), first);
}

TEST(ResponseHeadCache, TellsSecurityHeadersApartByTheirString) {
  // Another web config (a reload) brings other security headers.
  ResponseHeadCache heads;
  ServerResponse r;
  auto before = std::make_shared<const std::string>("X-Frame-Options: DENY\r\n");
  auto after = std::make_shared<const std::string>("X-Frame-Options: SAMEORIGIN\r\n");
  EXPECT_NE(heads.head(r, 1, *before, before, true).find("DENY"), std::string::npos);
  EXPECT_NE(heads.head(r, 1, *after, after, true).find("SAMEORIGIN"), std::string::npos);
  // The cache holds what it points at.
  std::weak_ptr<const std::string> held = before;
  before.reset();
  EXPECT_FALSE(held.expired());
}

TEST(ErrorResponse, ClosesAndAsksToRetryWhenBusy) {
  EXPECT_EQ(error_response(413, "too big"),
            "HTTP/1.1 413 Payload Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
            "Content-Length: 8\r\n\r\ntoo big\n");
  const std::string busy = error_response(503, "busy", "X-A: b\r\n");
  EXPECT_NE(busy.find("HTTP/1.1 503 Service Unavailable\r\n"), std::string::npos);
  EXPECT_NE(busy.find("Retry-After: 1\r\nX-A: b\r\n\r\nbusy\n"), std::string::npos);
  EXPECT_NE(error_response(429, "slow down").find("Retry-After: 1\r\n"), std::string::npos);
  EXPECT_EQ(error_response(408, "late").find("Retry-After"), std::string::npos);
  EXPECT_EQ(status_reason(299), "Status");
}

}  // namespace
}  // namespace gpulens
