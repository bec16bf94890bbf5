// One host is one node, a plugin's probe is no error, and counts take every
// source: logs written in NCCL's own format (NCCL 2.18 under torchrun, 2.21
// under a tensor-parallel job, aws-ofi-nccl on a p4d).
#include <gtest/gtest.h>

#include <string>

#include "analyze/nccl/reader.h"

namespace gpulens::nccl {
namespace {

Report analyze(std::string_view text) {
  auto r = analyze_text(text);
  EXPECT_TRUE(r.ok());
  return r.ok() ? *r : Report{};
}

// Two ranks of one torchrun on one host, NCCL 2.18.3, no InfiniBand (so
// NCCL still selects the Socket network it will not use). `tag(rank)` is
// what the launcher puts before each line.
std::string torchrun_log(const std::string& tag0, const std::string& tag1) {
  const std::string a = tag0 + "gpu-box:4120:4164 [0] NCCL INFO ";
  const std::string b = tag1 + "gpu-box:4121:4165 [1] NCCL INFO ";
  return tag0 + "gpu-box:4120:4120 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.5<0>\n" +
         tag0 + "gpu-box:4120:4120 [0] NCCL INFO cudaDriverVersion 12020\n" +
         "NCCL version 2.18.3+cuda12.2\n" +
         a + "NET/IB : No device found.\n" +
         a + "NET/Socket : Using [0]eth0:10.1.0.5<0>\n" +
         a + "Using network Socket\n" +
         b + "NET/IB : No device found.\n" +
         b + "NET/Socket : Using [0]eth0:10.1.0.5<0>\n" +
         b + "Using network Socket\n" +
         a + "comm 0x55d0c4 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1bd6e2 - Init START\n" +
         b + "comm 0x55e0a8 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2000 commId 0x1bd6e2 - Init START\n" +
         a + "Channel 00/02 :    0   1\n" +
         a + "Channel 01/02 :    0   1\n" +
         a + "Trees [0] 1/-1/-1->0->-1 [1] 1/-1/-1->0->-1\n" +
         b + "Trees [0] -1/-1/-1->1->0 [1] -1/-1/-1->1->0\n" +
         a + "Channel 00/0 : 0[1000] -> 1[2000] via P2P/IPC\n" +
         b + "Channel 00/0 : 1[2000] -> 0[1000] via P2P/IPC\n" +
         a + "Connected all rings\n" +
         a + "comm 0x55d0c4 rank 0 nranks 2 cudaDev 0 busId 1000 commId 0x1bd6e2 - Init COMPLETE\n" +
         b + "comm 0x55e0a8 rank 1 nranks 2 cudaDev 1 busId 2000 commId 0x1bd6e2 - Init COMPLETE\n";
}

void expect_single_node(const Report& r) {
  EXPECT_EQ(r.hosts, std::vector<std::string>{"gpu-box"});
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.nodes_from, "hostname_holds_all_ranks");
  EXPECT_EQ(r.inter_node_transport, "none");  // "Using network Socket" carries nothing here
  EXPECT_EQ(r.error_class, "none");
  for (const Finding& f : r.findings) EXPECT_NE(f.cause, "network_fallback") << f.summary;
}

TEST(SingleNode, OneHostIsOneNodeWithNoInterNodeTransport) { expect_single_node(analyze(torchrun_log("", ""))); }

TEST(SingleNode, LauncherTagsBeforeTheHostAreNotHosts) {
  // torchrun --tee 3 tags each rank's lines "[default<local rank>]:",
  // PyTorch's own lines "[rank<rank>]:": one host still.
  expect_single_node(analyze(torchrun_log("[default0]:", "[default1]:")));
  expect_single_node(analyze(torchrun_log("[rank0]:", "[rank1]:")));
}

TEST(SingleNode, AwsOfiNoNicInfoIsNotASystemError) {
  // aws-ofi-nccl on one p4d: NCCL asks the plugin for a device's properties,
  // the plugin has none for it and says so; NCCL prints the call chain and
  // goes on.
  const std::string p = "ip-10-0-1-17:8800:9549 [7] NCCL INFO ";
  const Report r = analyze(
      "ip-10-0-1-17:8800:8800 [7] NCCL INFO NCCL version 2.18.5+cuda12.2\n" +
      p + "NET/OFI Initializing aws-ofi-nccl 1.7.4-aws\n" +
      p + "NET/OFI Selected Provider is efa (found 4 nics)\n" +
      p + "Using network AWS Libfabric\n" +
      p + "NET/OFI No NIC info for dev 0\n" +
      p + "include/net.h:24 -> 2\n" +
      p + "comm 0x7f3a rank 7 nranks 8 cudaDev 7 nvmlDev 7 busId a0000 commId 0x9c1e - Init COMPLETE\n");
  EXPECT_EQ(r.error_class, "none");
  EXPECT_TRUE(r.errors.empty());
  bool noted = false;
  for (const Event& w : r.warnings) noted = noted || (w.kind == "no_nic_info" && w.first == "NET/OFI No NIC info for dev 0");
  EXPECT_TRUE(noted);

  // The same return code without the plugin's probe before it is still one.
  const Report failing = analyze(p + "include/net.h:24 -> 2\n" + p + "init.cc:1400 -> 2\n");
  EXPECT_EQ(failing.error_class, "system_error");
}

TEST(SingleNode, ASubCommunicatorDoesNotShrinkTheJob) {
  // NCCL 2.21: the tensor-parallel group (2 ranks on node1, nNodes 1) printed
  // its init line; the world's ring listing and the second host's lines show
  // 16 ranks on two hosts.
  const Report r = analyze(
      "node1:300:310 [0] NCCL INFO comm 0x11 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
      "node1:300:320 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15\n"
      "node2:500:510 [0] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [receive] via NET/IB/0/GDRDMA\n"
      "node1:307:517 [7] NCCL INFO Channel 00/0 : 7[7] -> 8[0] [send] via NET/IB/0/GDRDMA\n");
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.ranks_from, "ring_listing");
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.nodes_from, "hostnames");
  EXPECT_EQ(r.inter_node_transport, "IB");
}

TEST(SingleNode, TheStrongestSourceSpeaksWhenTheyAgree) {
  const Report r = analyze(
      "node1:300:310 [0] NCCL INFO comm 0x11 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n"
      "node1:300:320 [0] NCCL INFO Channel 00/02 :    0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15\n"
      "node2:500:510 [0] NCCL INFO comm 0x12 rank 8 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0\n");
  EXPECT_EQ(r.ranks, 16);
  EXPECT_EQ(r.ranks_from, "nranks");
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.nodes_from, "nNodes");
}

}  // namespace
}  // namespace gpulens::nccl
