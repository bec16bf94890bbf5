// Tests for the NCCL line tokenizer: prefixes, damage, and missing prefixes.
#include "analyze/nccl/line.h"

#include <gtest/gtest.h>

namespace gpulens::nccl {
namespace {

TEST(Tokenize, PlainInfoLine) {
  LogLine l;
  ASSERT_TRUE(tokenize("gpu2:46654:46655 [1] NCCL INFO rank 1 nranks 8", l));
  EXPECT_EQ(l.level, Level::kInfo);
  EXPECT_EQ(l.host, "gpu2");
  EXPECT_EQ(l.pid, 46654);
  EXPECT_EQ(l.dev, 1);
  EXPECT_EQ(l.message, "rank 1 nranks 8");
}

TEST(Tokenize, WarnLineKeepsSourceLocation) {
  LogLine l;
  ASSERT_TRUE(tokenize("ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect failed", l));
  EXPECT_EQ(l.level, Level::kWarn);
  EXPECT_EQ(l.where, "misc/socket.cc:483");
  EXPECT_EQ(l.host, "ubuntu");
  EXPECT_EQ(l.message, "socketStartConnect: Connect failed");
}

TEST(Tokenize, MpirunTagIsNotPartOfTheHost) {
  LogLine l;
  ASSERT_TRUE(tokenize("[1,6]<stdout>:ip-172-31-12-129:1761:1772 [2] NCCL INFO Using network Socket", l));
  EXPECT_EQ(l.host, "ip-172-31-12-129");
  EXPECT_EQ(l.pid, 1761);
  EXPECT_EQ(l.message, "Using network Socket");
}

TEST(Tokenize, NumericAndRedactedHostnames) {
  LogLine l;
  ASSERT_TRUE(tokenize("64:215:576 [0] NCCL INFO Using network IB", l));
  EXPECT_EQ(l.host, "64");
  EXPECT_EQ(l.pid, 215);
  ASSERT_TRUE(tokenize("<cluster_name>:919:1150 [0] NCCL INFO Channel 01/0 : 8[0] -> 15[7] via P2P/IPC/read", l));
  EXPECT_EQ(l.host, "<cluster_name>");
}

TEST(Tokenize, CloudWatchRowKeepsFirstCopyAndDropsGluedTimestamp) {
  LogLine l;
  ASSERT_TRUE(tokenize("  | 2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using "
                       "eth0:10.36.29.253<0> | ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : Using eth0:10.36.29.253<0>",
                       l));
  EXPECT_EQ(l.host, "ip-10-36-29-253");
  EXPECT_EQ(l.message, "Bootstrap : Using eth0:10.36.29.253<0>");
}

TEST(Tokenize, LauncherTagAndTimestampPrefix) {
  LogLine l;
  ASSERT_TRUE(tokenize("[155] crow-19:5330:5330 [3] NCCL INFO Using network IB", l));
  EXPECT_EQ(l.host, "crow-19");
  ASSERT_TRUE(tokenize("[2025-10-16 22:16:08] node1:10:11 [0] NCCL INFO Using network IB", l));
  EXPECT_EQ(l.host, "node1");
  EXPECT_EQ(l.pid, 10);
}

TEST(Tokenize, MissingPrefixStillGivesTheMessage) {
  LogLine l;
  ASSERT_TRUE(tokenize("NCCL INFO Using network IB", l));
  EXPECT_TRUE(l.host.empty());
  EXPECT_EQ(l.pid, -1);
  EXPECT_EQ(l.message, "Using network IB");
}

TEST(Tokenize, LinesWithoutMarker) {
  LogLine l;
  EXPECT_FALSE(tokenize("", l));
  EXPECT_FALSE(tokenize("NCCL version 2.19.3+cuda11.5", l));
  EXPECT_FALSE(tokenize("NCCL INFORMATION is not a marker", l));
  EXPECT_FALSE(tokenize("Traceback (most recent call last):", l));
}

TEST(Tokenize, HugePidIsRejectedNotWrapped) {
  LogLine l;
  ASSERT_TRUE(tokenize("h:99999999999999999999999:1 [0] NCCL INFO x", l));
  EXPECT_EQ(l.pid, -1);
  EXPECT_TRUE(l.host.empty());
}

TEST(CleanHost, StripsTagsAndTimestamps) {
  EXPECT_EQ(clean_host("[1,23]<stderr>:node-a"), "node-a");
  EXPECT_EQ(clean_host("2025-05-16T16:39:51Zhost"), "host");
  EXPECT_EQ(clean_host("plain"), "plain");
}

}  // namespace
}  // namespace gpulens::nccl
