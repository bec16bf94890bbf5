// Tests for the channel/ring line parser across NCCL versions.
#include "analyze/nccl/channel.h"

#include <gtest/gtest.h>

namespace gpulens::nccl {
namespace {

TEST(ParseChannel, ModernConnection) {
  ChannelLine c;
  ASSERT_TRUE(parse_channel("Channel 03/0 : 8[0] -> 0[0] [send] via NET/Socket/3", c));
  EXPECT_EQ(c.kind, ChannelKind::kConnection);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.src, 8);
  EXPECT_EQ(c.dst, 0);
  EXPECT_EQ(c.dir, Dir::kSend);
  EXPECT_EQ(c.via, "NET/Socket/3");
}

TEST(ParseChannel, OldFormsWithBusIdsAndBareRanks) {
  ChannelLine c;
  ASSERT_TRUE(parse_channel("Channel 01 : 2[c7000] -> 0[87000] [receive] via NET/IB/5/GDRDMA", c));
  EXPECT_EQ(c.dir, Dir::kReceive);
  EXPECT_EQ(c.src, 2);
  ASSERT_TRUE(parse_channel("Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0", c));
  EXPECT_TRUE(c.ring_word);
  EXPECT_EQ(c.via, "NET/AWS Libfabric/0");
  ASSERT_TRUE(parse_channel("Channel 00 : 15[7] -> 14[6] via SHM/direct/direct", c));
  EXPECT_EQ(c.via, "SHM/direct/direct");
}

TEST(ParseChannel, ListingCarriesTheChannelCount) {
  ChannelLine c;
  ASSERT_TRUE(parse_channel("Channel 01/02 :    0   1", c));
  EXPECT_EQ(c.kind, ChannelKind::kListing);
  EXPECT_EQ(c.total, 2);
  EXPECT_EQ(c.max_rank, 1);
}

TEST(ParseChannel, GraphRingIsNotAConnection) {
  ChannelLine c;
  ASSERT_TRUE(parse_channel("Ring 01 : 5 -> 6 -> 7", c));
  EXPECT_EQ(c.kind, ChannelKind::kGraphRing);
  EXPECT_EQ(c.max_rank, 7);
}

TEST(ParseChannel, DamagedLinesAreRejected) {
  ChannelLine c;
  EXPECT_FALSE(parse_channel("Channel 00/0 : 8[0] -> 0[", c));
  EXPECT_FALSE(parse_channel("Channel", c));
  EXPECT_FALSE(parse_channel("Channel 00/0 : 8[0] -> 0[0] [send] via ", c));
  EXPECT_FALSE(parse_channel("Channel 99999999999 : 1 -> 2 via P2P/IPC", c));
}

TEST(ParseNetPath, NameMayContainSpaces) {
  NetPath p;
  ASSERT_TRUE(parse_net_path("NET/AWS Libfabric/0", p));
  EXPECT_EQ(p.name, "AWS Libfabric");
  EXPECT_EQ(p.dev, 0);
  ASSERT_TRUE(parse_net_path("NET/IBext_v8/1(9)/GDRDMA", p));
  EXPECT_EQ(p.name, "IBext_v8");
  EXPECT_TRUE(p.gdr);
  EXPECT_FALSE(parse_net_path("P2P/IPC", p));
}

TEST(ShortPath, IndirectLosesItsRank) {
  EXPECT_EQ(short_path("P2P/indirect/3[3]"), "P2P/indirect");
  EXPECT_EQ(short_path("P2P/IPC/read"), "P2P/IPC/read");
}

}  // namespace
}  // namespace gpulens::nccl
