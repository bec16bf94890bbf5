// The request-head parser refuses what it must, early, with the right status.
#include "server/http_request.h"

#include <gtest/gtest.h>

#include <string>

namespace gpulens {
namespace {

HeadParse parse(const std::string& s, RequestHead& h, RequestLimits l = {}) { return parse_request_head(s, l, h); }

TEST(HttpRequest, CompleteHeadWithHeaders) {
  RequestHead h;
  std::string s = "POST /api/v1/push?job=a HTTP/1.1\r\nHost: x\r\nX-Scope-OrgID:  t1 \r\nContent-Length: 5\r\n\r\nhello";
  HeadParse p = parse(s, h);
  ASSERT_EQ(p.state, HeadParse::kComplete) << p.message;
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.path, "/api/v1/push");
  EXPECT_EQ(h.query, "job=a");
  EXPECT_EQ(h.header("x-scope-orgid"), "t1");
  EXPECT_EQ(h.content_length, 5u);
  EXPECT_EQ(h.head_bytes, s.size() - 5);
  EXPECT_TRUE(h.keep_alive);
}

TEST(HttpRequest, KeepAliveRules) {
  RequestHead h;
  ASSERT_EQ(parse("GET / HTTP/1.0\r\n\r\n", h).state, HeadParse::kComplete);
  EXPECT_FALSE(h.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", h).state, HeadParse::kComplete);
  EXPECT_TRUE(h.keep_alive);
  ASSERT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nConnection: TE, close\r\n\r\n", h).state, HeadParse::kComplete);
  EXPECT_FALSE(h.keep_alive);
}

TEST(HttpRequest, IncompleteUntilTheBlankLine) {
  RequestHead h;
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: x\r\n", h).state, HeadParse::kIncomplete);
  EXPECT_EQ(parse("G", h).state, HeadParse::kIncomplete);
}

TEST(HttpRequest, HugeHeaderLineIsRefusedBeforeItEnds) {
  RequestHead h;
  HeadParse p = parse("GET / HTTP/1.1\r\nHost: t\r\nX: " + std::string(20000, 'a'), h);
  EXPECT_EQ(p.state, HeadParse::kRefused);
  EXPECT_EQ(p.status, 431);
  EXPECT_NE(p.message.find("16 KiB"), std::string::npos) << p.message;
}

TEST(HttpRequest, LongUrlIs414EvenIncomplete) {
  RequestHead h;
  HeadParse p = parse("GET /" + std::string(100000, 'a'), h);
  EXPECT_EQ(p.status, 414);
  p = parse("GET /" + std::string(9000, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n", h);
  EXPECT_EQ(p.status, 414);
}

TEST(HttpRequest, TooManyHeaderLines) {
  RequestHead h;
  std::string s = "GET / HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 101; ++i) s += "A" + std::to_string(i) + ": b\r\n";
  EXPECT_EQ(parse(s + "\r\n", h).status, 431);
  EXPECT_EQ(parse(s, h).status, 431);  // refused before the head ends
}

TEST(HttpRequest, MalformedAndAmbiguousHeads) {
  RequestHead h;
  EXPECT_EQ(parse("\x01\x02garbage\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nno colon\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nHost : x\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/2.0\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET http://x/ HTTP/1.1\r\nHost: t\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 99999999999999999999999\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n", h).status, 501);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: t\r\nX: a\x01z\r\n\r\n", h).status, 400);
}

}  // namespace
}  // namespace gpulens

namespace gpulens {
namespace {

// RFC 9112 3.2: exactly one Host in HTTP/1.1; HTTP/1.0 may omit it.
TEST(HttpRequest, HostHeaderOnceInHttp11) {
  RequestHead h;
  HeadParse p = parse("GET / HTTP/1.1\r\n\r\n", h);
  EXPECT_EQ(p.status, 400);
  EXPECT_NE(p.message.find("no Host header"), std::string::npos) << p.message;
  p = parse("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", h);
  EXPECT_EQ(p.status, 400);
  EXPECT_NE(p.message.find("more than one Host"), std::string::npos) << p.message;
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n", h).status, 400);  // even when equal
  EXPECT_EQ(parse("GET / HTTP/1.0\r\n\r\n", h).state, HeadParse::kComplete);
  EXPECT_EQ(parse("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", h).status, 400);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nhOsT: 127.0.0.1:9400\r\n\r\n", h).state, HeadParse::kComplete);
  EXPECT_EQ(parse("GET / HTTP/1.1\r\nHost:\r\n\r\n", h).state, HeadParse::kComplete);  // empty is allowed (no authority)
}

}  // namespace
}  // namespace gpulens
