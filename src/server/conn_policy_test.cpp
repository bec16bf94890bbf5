// The server's bounding rules, each on its own: a request read on partial
// input, the deadlines, which connection makes room, the upload budget and
// the rate limit.
#include "server/conn_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace gpulens {
namespace {

TEST(ReadRequest, HeadFedByteByByteIsIncompleteUntilItsBlankLine) {
  const std::string req = "POST /push HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello";
  const size_t head_end = req.find("\r\n\r\n") + 4;
  RequestHead head;
  for (size_t n = 0; n < head_end; ++n) {
    EXPECT_EQ(read_request_head(std::string_view(req).substr(0, n), {}, head).state, HeadParse::kIncomplete) << n;
  }
  ASSERT_EQ(read_request_head(std::string_view(req).substr(0, head_end), {}, head).state, HeadParse::kComplete);
  EXPECT_EQ(head.head_bytes, head_end);
  for (size_t n = head_end; n < req.size(); ++n) {
    const BodyRead b = read_request_body(head, n, 1024);
    EXPECT_EQ(b.state, BodyRead::kIncomplete) << n;
    EXPECT_EQ(b.need, req.size());
  }
  const BodyRead b = read_request_body(head, req.size(), 1024);
  EXPECT_EQ(b.state, BodyRead::kComplete);
  EXPECT_EQ(b.need, req.size());
  // A pipelined request after it does not change where this one ends.
  EXPECT_EQ(read_request_body(head, req.size() + 40, 1024).need, req.size());
}

TEST(ReadRequest, BodyOverTheLimitIsRefusedBeforeAByteOfItArrives) {
  const std::string req = "PUT /api/v1/import HTTP/1.1\r\nHost: a\r\nContent-Length: 2000000\r\n\r\n";
  RequestHead head;
  ASSERT_EQ(read_request_head(req, {}, head).state, HeadParse::kComplete);
  const BodyRead b = read_request_body(head, req.size(), 1 << 20);
  EXPECT_EQ(b.state, BodyRead::kTooLarge);
  EXPECT_EQ(b.message, "request body of 2000000 bytes is larger than the limit of 1048576 bytes for /api/v1/import");
  // At the limit exactly it is read.
  EXPECT_EQ(read_request_body(head, req.size(), 2000000).state, BodyRead::kIncomplete);
}

TEST(ReadRequest, OnlyFiveMethodsAreServed) {
  RequestHead head;
  for (const char* m : {"GET", "HEAD", "POST", "PUT", "DELETE"}) {
    EXPECT_EQ(read_request_head(std::string(m) + " / HTTP/1.1\r\nHost: a\r\n\r\n", {}, head).state,
              HeadParse::kComplete)
        << m;
  }
  for (const char* m : {"PATCH", "OPTIONS", "TRACE", "CONNECT", "get"}) {
    const HeadParse p = read_request_head(std::string(m) + " / HTTP/1.1\r\nHost: a\r\n\r\n", {}, head);
    EXPECT_EQ(p.state, HeadParse::kRefused) << m;
    EXPECT_EQ(p.status, 405) << m;
  }
  // The parser's own refusals come first and keep their status.
  const HeadParse p = read_request_head("GET / HTTP/1.1\r\n\r\n", {}, head);  // no Host
  EXPECT_EQ(p.state, HeadParse::kRefused);
  EXPECT_EQ(p.status, 400);
  RequestLimits small;
  small.max_head_bytes = 32;
  EXPECT_EQ(read_request_head("GET / HTTP/1.1\r\nHost: a\r\nX-Long: " + std::string(64, 'x'), small, head).status,
            431);
}

ConnView conn_in(ConnPhase phase, int64_t since) {
  ConnView c;
  c.phase = phase;
  c.since = since;
  return c;
}

TEST(ConnExpiry, EachPhaseHasItsOwnDeadlineFromItsStart) {
  const ConnTimeouts t{.idle_ms = 300, .header_ms = 100, .body_ms = 200, .write_ms = 400, .linger_ms = 50};
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kIdle, 1000), 1300, t), ConnExpiry::kNone);
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kIdle, 1000), 1301, t), ConnExpiry::kIdle);
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kHead, 1000), 1100, t), ConnExpiry::kNone);
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kHead, 1000), 1101, t), ConnExpiry::kHeadLate);
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kBody, 1000), 1200, t), ConnExpiry::kNone);
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kBody, 1000), 1201, t), ConnExpiry::kBodyLate);
  EXPECT_EQ(conn_expiry(conn_in(ConnPhase::kLinger, 1000), 1051, t), ConnExpiry::kLingerOver);
}

TEST(ConnExpiry, QueuedBytesHaveOnlyTheWriteDeadlineAndAWorkerNone) {
  const ConnTimeouts t{.idle_ms = 300, .header_ms = 100, .body_ms = 200, .write_ms = 400, .linger_ms = 50};
  ConnView c = conn_in(ConnPhase::kHead, 0);  // its head long late ...
  c.writing = true;
  c.write_progress = 1000;  // ... but its answer moved lately
  EXPECT_EQ(conn_expiry(c, 1400, t), ConnExpiry::kNone);
  EXPECT_EQ(conn_expiry(c, 1401, t), ConnExpiry::kWriteStalled);
  ConnView w = conn_in(ConnPhase::kIdle, 0);
  w.working = true;
  EXPECT_EQ(conn_expiry(w, 1000000, t), ConnExpiry::kNone);
}

TEST(Eviction, RanksLingeringThenNeverAnsweredThenSlowHeadsThenKeptAlive) {
  ConnView linger = conn_in(ConnPhase::kLinger, 0);
  linger.close_after = true;
  ConnView fresh = conn_in(ConnPhase::kIdle, 0);
  ConnView head = conn_in(ConnPhase::kHead, 0);
  ConnView kept = conn_in(ConnPhase::kIdle, 0);
  kept.served = true;
  EXPECT_GT(eviction_rank(linger), eviction_rank(fresh));
  EXPECT_GT(eviction_rank(fresh), eviction_rank(head));
  EXPECT_GT(eviction_rank(head), eviction_rank(kept));
  EXPECT_GT(eviction_rank(kept), 0);
}

TEST(Eviction, NeverDropsAConnectionWithARequestInProgress) {
  ConnView body = conn_in(ConnPhase::kBody, 0);
  ConnView writing = conn_in(ConnPhase::kIdle, 0);
  writing.writing = true;
  ConnView working = conn_in(ConnPhase::kIdle, 0);
  working.working = true;
  ConnView closing = conn_in(ConnPhase::kHead, 0);  // an error answer written, not yet lingering
  closing.close_after = true;
  ConnView lingering_writing = conn_in(ConnPhase::kLinger, 0);
  lingering_writing.writing = true;
  for (const ConnView& c : {body, writing, working, closing, lingering_writing}) EXPECT_EQ(eviction_rank(c), 0);
  VictimPicker picker;
  picker.offer(body, 1);
  picker.offer(writing, 2);
  picker.offer(working, 3);
  EXPECT_FALSE(picker.found());
}

TEST(Eviction, AScrapersConnectionSurvivesAFloodOfSlowClients) {
  VictimPicker picker;
  ConnView scraper = conn_in(ConnPhase::kIdle, 10);  // kept alive since long ago
  scraper.served = true;
  picker.offer(scraper, 7);
  picker.offer(conn_in(ConnPhase::kHead, 500), 8);  // slow heads, newer
  picker.offer(conn_in(ConnPhase::kHead, 300), 9);
  picker.offer(conn_in(ConnPhase::kHead, 400), 10);
  ASSERT_TRUE(picker.found());
  EXPECT_EQ(picker.key(), 9);  // the head arriving longest
  picker.offer(conn_in(ConnPhase::kIdle, 900), 11);  // connected, never sent a byte
  EXPECT_EQ(picker.key(), 11);
}

TEST(Eviction, OfEqualRanksTheOldestGoesAndTheFirstOnATie) {
  VictimPicker picker;
  picker.offer(conn_in(ConnPhase::kHead, 200), 1);
  picker.offer(conn_in(ConnPhase::kHead, 100), 2);
  picker.offer(conn_in(ConnPhase::kHead, 100), 3);
  picker.offer(conn_in(ConnPhase::kHead, 150), 4);
  EXPECT_EQ(picker.key(), 2);
}

TEST(BodyBudget, KeepsConnectionsForScrapesAndBoundsTheBytes) {
  BodyBudget b(/*max_connections=*/4, /*reserved_connections=*/2, /*max_bytes=*/1000);
  EXPECT_EQ(b.reserve(100), BodyBudget::Verdict::kReserved);
  EXPECT_EQ(b.reserve(100), BodyBudget::Verdict::kReserved);
  EXPECT_EQ(b.reserve(100), BodyBudget::Verdict::kTooManyUploads);  // 2 of 4 kept for scrapes
  EXPECT_EQ(b.uploads(), 2u);
  EXPECT_EQ(b.bytes(), 200u);
  b.release(100);
  EXPECT_EQ(b.reserve(901), BodyBudget::Verdict::kTooManyBytes);  // 100 + 901 > 1000
  EXPECT_EQ(b.uploads(), 1u);                                      // nothing reserved by a refusal
  EXPECT_EQ(b.reserve(900), BodyBudget::Verdict::kReserved);       // exactly the limit
  b.release(900);
  b.release(100);
  EXPECT_EQ(b.uploads(), 0u);
  EXPECT_EQ(b.bytes(), 0u);
}

TEST(RateBucket, BurstThenOneRequestPerInterval) {
  RateBucket r;
  EXPECT_TRUE(r.take(1000, 2, 100));
  EXPECT_TRUE(r.take(1000, 2, 100));
  EXPECT_FALSE(r.take(1000, 2, 100));  // burst spent
  EXPECT_FALSE(r.take(1050, 2, 100));  // half a token back
  EXPECT_TRUE(r.take(1100, 2, 100));   // one
  EXPECT_FALSE(r.take(1100, 2, 100));
  // A long pause refills to the burst, never beyond.
  EXPECT_TRUE(r.take(100000, 2, 100));
  EXPECT_TRUE(r.take(100000, 2, 100));
  EXPECT_FALSE(r.take(100000, 2, 100));
}

}  // namespace
}  // namespace gpulens
