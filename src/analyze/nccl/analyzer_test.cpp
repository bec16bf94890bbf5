// Tests for the Analyzer's decisions and findings on small synthetic logs.
#include "analyze/nccl/analyzer.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>

#include "analyze/nccl/reader.h"
#include "analyze/nccl/render.h"

namespace gpulens::nccl {
namespace {

Report analyze(std::string_view text) {
  auto r = analyze_text(text);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : Report{};
}

const Finding* finding(const Report& r, std::string_view check) {
  for (const auto& f : r.findings) {
    if (f.check == check) return &f;
  }
  return nullptr;
}

constexpr std::string_view kTwoNodeSocket =
    "a:100:101 [0] NCCL INFO NET/IB : No device found.\n"
    "a:100:101 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
    "a:100:101 [0] NCCL INFO Using network Socket\n"
    "b:200:201 [0] NCCL INFO Using network Socket\n"
    "a:100:102 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/Socket/0\n"
    "b:200:202 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0\n"
    "a:100:101 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n";

TEST(Analyzer, TwoNodesOverSocketsIsACriticalFallback) {
  Report r = analyze(kTwoNodeSocket);
  EXPECT_EQ(r.inter_node_transport, "Socket");
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.ranks, 2);
  EXPECT_EQ(r.gdr, "no");
  const Finding* f = finding(r, "socket_transport");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->cause, "network_fallback");
  EXPECT_EQ(f->severity, "critical");
  EXPECT_EQ(r.findings.front().check, "socket_transport");
}

TEST(Analyzer, IbDisableZeroIsNotADisable) {
  Report r = analyze(
      "m:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
      "m:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:192.168.11.1<0>\n");
  EXPECT_EQ(r.environment.at("NCCL_IB_DISABLE"), "0");
  EXPECT_EQ(finding(r, "ib_disabled"), nullptr);
  EXPECT_EQ(r.inter_node_transport, "IB");
}

TEST(Analyzer, IbDisabledByEnvironmentIsReported) {
  Report r = analyze(
      "m:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\n"
      "m:1:2 [0] NCCL INFO Using network IB\n");
  ASSERT_NE(finding(r, "ib_disabled"), nullptr);
  EXPECT_EQ(finding(r, "ib_disabled")->cause, "network_fallback");
}

TEST(Analyzer, NodesThatChoseDifferentNetworksAreMixed) {
  Report r = analyze(
      "a:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:1.1.1.1<0>\n"
      "a:10:11 [0] NCCL INFO Using network IB\n"
      "b:20:21 [0] NCCL INFO NET/IB : No device found.\n"
      "b:20:21 [0] NCCL INFO Using network Socket\n");
  EXPECT_EQ(r.inter_node_transport, "mixed:IB+Socket");
  EXPECT_EQ(r.transport_by_node.at("a"), "IB");
  EXPECT_EQ(r.transport_by_node.at("b"), "Socket");
  ASSERT_NE(finding(r, "transport_mismatch"), nullptr);
  EXPECT_EQ(finding(r, "transport_mismatch")->severity, "critical");
}

TEST(Analyzer, RoceIsToldApartFromIbByLinkLayer) {
  Report r = analyze(
      "a:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_10:1/RoCE [1]mlx5_11:1/RoCE [RO]; OOB e:1<0>\n"
      "a:10:11 [0] NCCL INFO Using network IB\n"
      "b:10:11 [0] NCCL INFO Using network IB\n");
  EXPECT_EQ(r.inter_node_transport, "RoCE");
  EXPECT_EQ(r.gdr, "unknown");
}

TEST(Analyzer, NetLinesWithoutGdrGiveAFinding) {
  Report r = analyze(
      "a:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0\n"
      "b:90:91 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/0\n");
  EXPECT_EQ(r.inter_node_transport, "IB");
  EXPECT_EQ(r.gdr, "no");
  ASSERT_NE(finding(r, "gdr_unavailable"), nullptr);
}

TEST(Analyzer, SameHostNetTrafficIsIntraNodeAndP2pDisabled) {
  Report r = analyze(
      "#  Rank  0 Group  0 Pid  5 on h device  0 [0x87] A100\n"
      "#  Rank  1 Group  0 Pid  5 on h device  1 [0x8d] A100\n"
      "h:5:5 [0] NCCL INFO NCCL_P2P_LEVEL set by environment to LOC\n"
      "h:5:6 [0] NCCL INFO Channel 00 : 1[8d000] -> 0[87000] [receive] via NET/IB/0/GDRDMA\n"
      "h:5:7 [1] NCCL INFO Channel 00 : 0[87000] -> 1[8d000] [receive] via NET/IB/1/GDRDMA\n");
  EXPECT_EQ(r.nodes, 1);
  EXPECT_EQ(r.gdr, "yes");
  EXPECT_EQ(r.intra_node, std::vector<std::string>{"NET/IB/GDRDMA"});
  ASSERT_NE(finding(r, "p2p_disabled"), nullptr);
  EXPECT_EQ(finding(r, "p2p_disabled")->cause, "topology");
}

TEST(Analyzer, SingleNodeWithoutNetworkConnectionsIsNone) {
  Report r = analyze(
      "h:5:6 [0] NCCL INFO Using network Socket\n"
      "h:5:6 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
      "h:5:6 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM\n"
      "h:5:6 [0] NCCL INFO Connected NVLS tree\n");
  EXPECT_EQ(r.inter_node_transport, "none");
  EXPECT_EQ(r.gdr, "no");
  EXPECT_TRUE(r.nvls);
  EXPECT_EQ(r.intra_node, (std::vector<std::string>{"P2P/CUMEM", "NVLS"}));
  EXPECT_EQ(finding(r, "socket_transport"), nullptr);
}

TEST(Analyzer, PyTorchWatchdogTimeoutInsideInterleavedOutput) {
  Report r = analyze(
      "epoch 3 loss 0.12[rank3]:[E1016 10:00:00.000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog "
      "caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE) ran for 600010 ms\n");
  EXPECT_EQ(r.error_class, "timeout");
  ASSERT_NE(finding(r, "error:timeout"), nullptr);
  EXPECT_EQ(finding(r, "error:timeout")->severity, "critical");
}

TEST(Analyzer, ErrorChainCodeSplitsSocketFromRemoteErrors) {
  Report sys = analyze(
      "h:1:2 [0] NCCL INFO misc/socket.cc:567 -> 2\n"
      "h:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer x<1>\n");
  EXPECT_EQ(sys.error_class, "socket_error");
  Report remote = analyze(
      "h:1:2 [0] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.1<5> failed : Broken pipe\n"
      "h:1:2 [0] NCCL INFO misc/socket.cc:535 -> 6\n");
  EXPECT_EQ(remote.error_class, "remote_error");
}

TEST(Analyzer, VersionMismatchAcrossNodes) {
  Report r = analyze(
      "a:1:1 [0] NCCL INFO NCCL version 2.22.3+cuda12.4\n"
      "b:2:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\n");
  EXPECT_EQ(r.nccl_version, "2.22.3+cuda12.4");
  EXPECT_EQ(r.nccl_versions.size(), 2u);
  ASSERT_NE(finding(r, "version_mismatch"), nullptr);
}

TEST(Analyzer, SameHostnameFarApartPidsAreTwoNodes) {
  Report r = analyze(
      "ubuntu:9621:9694 [0] NCCL INFO Using network Socket\n"
      "ubuntu:9622:9695 [1] NCCL INFO Using network Socket\n"
      "ubuntu:39964:40044 [0] NCCL INFO Using network Socket\n");
  EXPECT_EQ(r.nodes, 2);
  EXPECT_EQ(r.hosts, std::vector<std::string>{"ubuntu"});
  EXPECT_EQ(r.processes, 3);
}

TEST(Analyzer, UnknownStaysUnknown) {
  Report r = analyze("h:1:2 [0] NCCL INFO cudaDriverVersion 12040\n");
  EXPECT_EQ(r.inter_node_transport, "unknown");
  EXPECT_EQ(r.gdr, "unknown");
  EXPECT_FALSE(r.ranks.has_value());
  EXPECT_FALSE(r.nodes.has_value());
  EXPECT_FALSE(r.channels.has_value());
  EXPECT_EQ(r.error_class, "none");
}

TEST(Render, JsonIsValidAndCarriesTheLabelFields) {
  Report r = analyze(std::string(kTwoNodeSocket) + "h\xff\xfe:1:2 [0] NCCL INFO \"quoted\" \\ line\n");
  std::string json = render_json(r);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  for (const char* key : {"nccl_version", "ranks", "nodes", "inter_node_transport", "gdr", "intra_node",
                          "channels", "error_class", "findings"}) {
    EXPECT_EQ(doc[key].error(), simdjson::SUCCESS) << key;
  }
  EXPECT_EQ(std::string_view(doc["inter_node_transport"].get_string()), "Socket");
  simdjson::dom::element f0 = doc["findings"].at(0);
  EXPECT_EQ(std::string_view(f0["cause"].get_string()), "network_fallback");
  EXPECT_EQ(std::string_view(f0["severity"].get_string()), "critical");
  EXPECT_GT(f0["evidence"].get_array().size(), 0u);
}

TEST(Render, TextHasColourOnlyWhenAsked) {
  Report r = analyze(kTwoNodeSocket);
  EXPECT_EQ(render_text(r, false).find('\033'), std::string::npos);
  EXPECT_NE(render_text(r, true).find('\033'), std::string::npos);
  EXPECT_NE(render_text(r, false).find("inter-node transport  Socket"), std::string::npos);
}

}  // namespace
}  // namespace gpulens::nccl
