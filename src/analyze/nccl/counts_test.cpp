// Counts (ranks, nodes, processes) from every kind of evidence a log holds,
// each saying where it came from (Report::*_from, JSON "counts_from").
#include <gtest/gtest.h>

#include "analyze/nccl/analyzer.h"
#include "analyze/nccl/reader.h"
#include "analyze/nccl/render.h"

namespace gpulens::nccl {
namespace {

Report analyze(std::string_view text) {
  auto r = analyze_text(text);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : Report{};
}

TEST(Counts, InitLineNranksAndNnodes) {
  const Report r = analyze(
      "node1:100:100 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
      "node2:200:200 [0] NCCL INFO comm 0x6 rank 8 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n");
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.ranks_from, "nranks");
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.nodes_from, "nNodes");
  EXPECT_EQ(r.processes, 2);
  EXPECT_EQ(r.processes_from, "line_prefixes");
  EXPECT_NE(render_json(r).find("\"counts_from\": {\"ranks\": \"nranks\", \"nodes\": \"nNodes\", "
                                "\"processes\": \"line_prefixes\"}"),
            std::string::npos)
      << render_json(r);
}

TEST(Counts, TreeListingNamesRanks) {
  // Only a tree line: ranks 0..11 appear as children, self and parent.
  const Report r = analyze("NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] 9/3/-1->11->10\n");
  EXPECT_EQ(r.ranks, 12);
  EXPECT_EQ(r.ranks_from, "tree_listing");
  EXPECT_FALSE(r.nodes);
  EXPECT_EQ(r.nodes_from, "");
  EXPECT_EQ(r.processes, 0);
  EXPECT_NE(render_json(r).find("\"processes\": null"), std::string::npos);
}

TEST(Counts, RingListingAndHostnames) {
  const Report r = analyze(
      "a1:10:10 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n"
      "b7:20:20 [0] NCCL INFO Channel 00/02 :    0   1   2   3\n");
  EXPECT_EQ(r.ranks, 4);
  EXPECT_EQ(r.ranks_from, "ring_listing");
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.nodes_from, "hostnames");
}

TEST(Counts, OneHostHoldingEveryRank) {
  const Report r = analyze(
      "box:10:10 [0] NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/CUMEM\n"
      "box:11:11 [1] NCCL INFO Channel 00 : 1[1] -> 0[0] via P2P/CUMEM\n");
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.ranks_from, "connection_lines");
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.nodes_from, "hostname_holds_all_ranks");
}

TEST(Counts, AbsurdTreeNumbersAreNotRanksAndDoNotHang) {
  const Report r = analyze("NCCL INFO Trees [0] 99999999999999999999/-1/-1->2->-1\n");
  EXPECT_EQ(r.ranks, 3);
}

}  // namespace
}  // namespace gpulens::nccl
