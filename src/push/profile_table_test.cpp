// The capture table: every state change, bound and error.
#include "push/profile_table.h"

#include <gtest/gtest.h>

namespace gpulens::push {
namespace {

ProfileRequest req(int64_t pid, std::string kind = "stacks", double d = 1, uint64_t max = 1000) {
  ProfileRequest r;
  r.pid = pid;
  r.kind = std::move(kind);
  r.duration_s = d;
  r.max_bytes = max;
  return r;
}

TEST(ProfileTable, RequestTakeFinish) {
  ProfileTable t;
  std::string id;
  ASSERT_FALSE(t.request(req(42), 0, id));
  EXPECT_FALSE(t.take(43, 10));  // another process
  auto job = t.take(42, 10);
  ASSERT_TRUE(job);
  EXPECT_EQ(job->id, id);
  EXPECT_FALSE(t.take(42, 11));  // taken once
  EXPECT_EQ(t.upload_limit(id), 1000u);
  ASSERT_FALSE(t.finish(id, true, "{\"x\":1}", "application/json", 20));
  auto e = t.get(id, 30);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->state, ProfileState::kDone);
  EXPECT_EQ(e->result, "{\"x\":1}");
  EXPECT_EQ(t.finish(id, true, "again", "", 40)->http, 409);
  EXPECT_EQ(t.upload_limit(id), 0u);
}

TEST(ProfileTable, PollsMarkClientsForAWhile) {
  ProfileLimits l;
  l.client_ms = 100;
  l.max_clients = 2;
  ProfileTable t(l);
  EXPECT_TRUE(t.clients(0).empty());
  t.take(9, 0);
  t.take(3, 50);
  EXPECT_EQ(t.clients(60), (std::vector<int64_t>{3, 9}));
  EXPECT_EQ(t.clients(120), (std::vector<int64_t>{3}));  // 9 polled 120 ms ago
  t.take(9, 130);
  t.take(5, 140);  // a third pid: the oldest poll (3 at 50) is forgotten
  EXPECT_EQ(t.clients(140), (std::vector<int64_t>{5, 9}));
}

TEST(ProfileTable, RefusesBadRequests) {
  ProfileTable t;
  std::string id;
  EXPECT_EQ(t.request(req(1, "perf"), 0, id)->http, 400);
  EXPECT_EQ(t.request(req(1, "stacks", 0), 0, id)->http, 400);
  EXPECT_EQ(t.request(req(1, "stacks", 1e9), 0, id)->http, 400);
  EXPECT_EQ(t.request(req(0), 0, id)->http, 400);
  EXPECT_EQ(t.request(req(1, "stacks", 1, 0), 0, id)->http, 400);
  EXPECT_EQ(t.request(req(1, "stacks", 1, uint64_t{1} << 40), 0, id)->http, 400);
  ProfileRequest many = req(1);
  many.steps = 2'000'000;
  auto e = t.request(many, 0, id);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "steps must be at most 1000000");
}

TEST(ProfileTable, OneOpenCapturePerProcess) {
  ProfileTable t;
  std::string a, b;
  ASSERT_FALSE(t.request(req(7), 0, a));
  auto e = t.request(req(7), 1, b);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http, 409);
  EXPECT_NE(e->message.find(a), std::string::npos);
  EXPECT_FALSE(t.request(req(8), 1, b));
}

TEST(ProfileTable, TooLargeResultFailsTheCapture) {
  ProfileTable t;
  std::string id;
  ASSERT_FALSE(t.request(req(5, "torch", 1, 4), 0, id));
  ASSERT_TRUE(t.take(5, 1));
  EXPECT_EQ(t.finish(id, true, "12345", "application/gzip", 2)->http, 413);
  EXPECT_EQ(t.get(id, 3)->state, ProfileState::kFailed);
  EXPECT_NE(t.get(id, 3)->error.find("larger than max_bytes"), std::string::npos);
}

TEST(ProfileTable, ClientErrorAndExpiry) {
  ProfileLimits l;
  l.pickup_ms = 100;
  l.grace_ms = 100;
  l.keep_ms = 1000;
  ProfileTable t(l);
  std::string a, b, c;
  ASSERT_FALSE(t.request(req(1), 0, a));
  ASSERT_FALSE(t.request(req(2, "stacks", 1), 0, b));
  ASSERT_FALSE(t.request(req(3), 0, c));
  ASSERT_TRUE(t.take(2, 50));
  ASSERT_TRUE(t.take(3, 50));
  ASSERT_FALSE(t.finish(c, false, "torch is not imported", "", 60));
  EXPECT_EQ(t.get(c, 61)->error, "torch is not imported");
  EXPECT_EQ(t.get(a, 101)->state, ProfileState::kExpired);       // never taken
  EXPECT_EQ(t.get(b, 1000)->state, ProfileState::kRunning);      // within 1 s + grace
  EXPECT_EQ(t.get(b, 1200)->state, ProfileState::kExpired);      // the process went away
  EXPECT_EQ(t.finish(b, true, "late", "", 1201)->http, 409);
  EXPECT_FALSE(t.get(a, 5000));                                   // forgotten
  EXPECT_EQ(t.finish("nope", true, "", "", 5000)->http, 404);
}

TEST(ProfileTable, BoundedDropsFinishedFirst) {
  ProfileLimits l;
  l.max_entries = 2;
  ProfileTable t(l);
  std::string a, b, c;
  ASSERT_FALSE(t.request(req(1), 0, a));
  ASSERT_FALSE(t.request(req(2), 0, b));
  EXPECT_EQ(t.request(req(3), 0, c)->http, 503);  // both open
  ASSERT_TRUE(t.take(1, 1));
  ASSERT_FALSE(t.finish(a, true, "r", "application/json", 2));
  ASSERT_FALSE(t.request(req(3), 3, c));           // a is dropped for it
  EXPECT_FALSE(t.get(a, 4));
  EXPECT_TRUE(t.get(b, 4));
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace gpulens::push
