// The mapping on dcgm-exporter's two generations of names (classic and
// DCGM 4.6/4.7's, written by dcgm-exporter 4.9/4.10), DCGM 4.6.x's percent
// under a _RATIO name, node_exporter's unknown link speed, and one machine
// named twice (gpulens' native names under instance, its --dcgm-names under
// Hostname) joined by GPU UUID.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "diagnose/mapping.h"
#include "diagnose/prometheus_input.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

using testing::flat;
using testing::ramp;

const GpuSignals& only_gpu(const SignalSet& set) {
  EXPECT_EQ(set.hosts.size(), 1u);
  EXPECT_EQ(set.hosts.at(0).gpus.size(), 1u);
  return set.hosts.at(0).gpus.at(0);
}

TEST(DcgmNames, BothGenerationsGiveTheSameSignals) {
  const LabelPair g[] = {{"gpu", "0"}, {"UUID", "GPU-a"}, {"Hostname", "n1"}};
  struct Pair {
    const char* classic;
    double classic_value;
    const char* renamed;
    double renamed_value;
    GpuSig sig;
    double want;
  };
  const Pair pairs[] = {
      {"DCGM_FI_DEV_GPU_UTIL", 97, "DCGM_FI_DEV_GPU_UTIL_RATIO", 0.97, GpuSig::kGpuUtil, 0.97},
      {"DCGM_FI_DEV_FB_USED", 2048, "DCGM_FI_DEV_FB_USED_BYTES", 2048.0 * 1048576, GpuSig::kFbUsed,
       2048.0 * 1048576},
      {"DCGM_FI_DEV_FB_FREE", 10, "DCGM_FI_DEV_FB_FREE_BYTES", 10.0 * 1048576, GpuSig::kFbFree, 10.0 * 1048576},
      {"DCGM_FI_DEV_SM_CLOCK", 1980, "DCGM_FI_DEV_SM_CLOCK_HERTZ", 1980e6, GpuSig::kSmClock, 1980e6},
      {"DCGM_FI_DEV_GPU_TEMP", 81, "DCGM_FI_DEV_GPU_TEMP_CELSIUS", 81, GpuSig::kTemperature, 81},
      {"DCGM_FI_DEV_POWER_USAGE", 612.5, "DCGM_FI_DEV_BOARD_POWER_WATTS", 612.5, GpuSig::kPower, 612.5},
      {"DCGM_FI_DEV_XID_ERRORS", 79, "DCGM_FI_DEV_XID_ERROR", 79, GpuSig::kLastXid, 79},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", 1, "DCGM_FI_DEV_ROW_REMAP_FAILED", 1, GpuSig::kRowRemapFailure, 1},
      {"DCGM_FI_PROF_SM_ACTIVE", 0.5, "DCGM_FI_PROF_SM_UTIL_RATIO", 0.5, GpuSig::kSmActive, 0.5},
      {"DCGM_FI_PROF_SM_OCCUPANCY", 0.25, "DCGM_FI_PROF_SM_OCCUPANCY_RATIO", 0.25, GpuSig::kSmOccupancy, 0.25},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.9, "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", 0.9, GpuSig::kGrActive, 0.9},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 0.4, "DCGM_FI_PROF_TENSOR_UTIL_RATIO", 0.4, GpuSig::kTensorActive, 0.4},
      {"DCGM_FI_PROF_DRAM_ACTIVE", 0.6, "DCGM_FI_PROF_DRAM_UTIL_RATIO", 0.6, GpuSig::kDramActive, 0.6},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", 5e9, "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", 5e9, GpuSig::kPcieRxBps, 5e9},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES", 7e9, "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", 7e9, GpuSig::kNvlinkTxBps,
       7e9},
  };
  for (const Pair& p : pairs) {
    SignalSetBuilder classic, renamed;
    ASSERT_TRUE(classic.add(p.classic, g, flat(p.classic_value))) << p.classic;
    ASSERT_TRUE(renamed.add(p.renamed, g, flat(p.renamed_value))) << p.renamed;
    EXPECT_TRUE(known_name(p.renamed)) << p.renamed;
    const SignalSet a = classic.build(), b = renamed.build();
    const Series& sa = only_gpu(a).sig(p.sig);
    const Series& sb = only_gpu(b).sig(p.sig);
    ASSERT_EQ(sa.size(), 3u) << p.classic;
    ASSERT_EQ(sb.size(), 3u) << p.renamed;
    EXPECT_NEAR(sa[0].v, p.want, 1e-9 * std::max(1.0, p.want)) << p.classic;
    EXPECT_NEAR(sb[0].v, p.want, 1e-9 * std::max(1.0, p.want)) << p.renamed;
  }
}

TEST(DcgmNames, AUtilRatioSeriesAboveOneIsPercent) {
  const LabelPair g[] = {{"gpu", "0"}, {"UUID", "GPU-a"}};
  Series percent = flat(0, 3);  // DCGM 4.6.x: field 203 under the new name
  percent[1].v = 45;
  percent[2].v = 1;  // 1 %, not a full ratio: the series decides
  SignalSetBuilder a;
  a.add("DCGM_FI_DEV_GPU_UTIL_RATIO", g, percent);
  const SignalSet set = a.build();
  const Series& pa = only_gpu(set).sig(GpuSig::kGpuUtil);
  ASSERT_EQ(pa.size(), 3u);
  EXPECT_DOUBLE_EQ(pa[1].v, 0.45);
  EXPECT_DOUBLE_EQ(pa[2].v, 0.01);
  SignalSetBuilder b;  // DCGM 4.7: field 1613, a ratio
  b.add("DCGM_FI_DEV_GPU_UTIL_RATIO", g, flat(1));
  EXPECT_DOUBLE_EQ(only_gpu(b.build()).sig(GpuSig::kGpuUtil)[0].v, 1);
}

TEST(DcgmNames, LabelRowsAndLowercaseHostname) {
  const LabelPair g[] = {{"gpu", "0"}, {"hostname", "N1"}, {"DCGM_FI_DEV_UUID", "GPU-x"},
                         {"DCGM_FI_DEV_NAME", "NVIDIA H200"}, {"hpc_job", "42"}};
  SignalSetBuilder b;
  b.add("DCGM_FI_DEV_GPU_TEMP_CELSIUS", g, flat(50));
  const SignalSet set = b.build();
  const GpuSignals& gpu = only_gpu(set);
  EXPECT_EQ(set.hosts[0].name, "n1");
  EXPECT_EQ(gpu.uuid, "GPU-x");
  EXPECT_EQ(gpu.model, "NVIDIA H200");
}

TEST(NodeExporterNames, ANegativeLinkSpeedIsUnknown) {
  const LabelPair g[] = {{"gpu", "0"}, {"instance", "vm1:9400"}};
  const LabelPair eth0[] = {{"instance", "vm1:9100"}, {"device", "eth0"}};
  SignalSetBuilder b;
  b.add("DCGM_FI_DEV_GPU_UTIL", g, flat(50));
  b.add("node_network_speed_bytes", eth0, flat(-125000));
  b.add("node_network_transmit_bytes_total", eth0, ramp(1e8));
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  EXPECT_TRUE(set.hosts[0].sig(HostSig::kNicSpeed).empty());
  EXPECT_TRUE(set.hosts[0].sig(HostSig::kNicUtil).empty());  // no speed: not judged
}

// A gpulens agent with --dcgm-names, scraped by Prometheus: its native
// series carry the scrape's instance, its DCGM names dcgm-exporter's
// Hostname. One GPU, counted once, each signal from one naming (NVLink
// bytes are summed over series: taken twice they would double).
TEST(UuidJoin, OneMachineUnderTwoNamesIsOneHost) {
  SignalSetBuilder b;
  for (int g = 0; g < 2; ++g) {
    const std::string gpu = std::to_string(g), uuid = "GPU-" + gpu;
    const LabelPair native[] = {{"gpu", gpu}, {"gpu_uuid", uuid}, {"instance", "10.0.0.7:9400"}};
    const LabelPair dcgm[] = {{"gpu", gpu}, {"UUID", uuid}, {"Hostname", "node-7"}, {"instance", "10.0.0.7:9400"}};
    b.add("gpu_utilization_ratio", native, flat(0.5));
    b.add("gpu_nvlink_tx_bytes_per_second", native, flat(1e9));
    b.add("DCGM_FI_DEV_GPU_UTIL", dcgm, flat(50));
    b.add("DCGM_FI_PROF_NVLINK_TX_BYTES", dcgm, flat(1e9));
  }
  const LabelPair cpu[] = {{"instance", "10.0.0.7:9400"}, {"mode", "idle"}};
  b.add("host_cpu_seconds_total", cpu, ramp(0.5));
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  EXPECT_EQ(set.hosts[0].name, "node-7");  // the Hostname label names the machine
  ASSERT_EQ(set.hosts[0].gpus.size(), 2u);
  for (const GpuSignals& g : set.hosts[0].gpus) {
    ASSERT_FALSE(g.sig(GpuSig::kNvlinkTxBps).empty());
    EXPECT_DOUBLE_EQ(g.sig(GpuSig::kNvlinkTxBps)[0].v, 1e9) << g.index;
  }
  EXPECT_FALSE(set.hosts[0].sig(HostSig::kCpuTotal).empty());
}

TEST(UuidJoin, DifferentGpusStayDifferentHosts) {
  SignalSetBuilder b;
  const LabelPair a[] = {{"gpu", "0"}, {"UUID", "GPU-a"}, {"Hostname", "node-a"}};
  const LabelPair c[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-c"}, {"instance", "10.0.0.3:9400"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", a, flat(50));
  b.add("gpu_utilization_ratio", c, flat(0.5));
  EXPECT_EQ(b.build().hosts.size(), 2u);
}

TEST(RealSamples, EachStepReadsOnlyTheStepBeforeIt) {
  EXPECT_EQ(real_samples("{__name__=\"x\"}", 15000), "last_over_time({__name__=\"x\"}[14999ms])");
  EXPECT_EQ(real_samples("{__name__=\"x\"}", 0), "{__name__=\"x\"}");
  const std::string q = promql_for_label_values("x", "", {{.hostname = "a"}, {.Hostname = "b"}}, 15000);
  EXPECT_EQ(q, "last_over_time({__name__=\"x\",hostname=~\"a\"}[14999ms]) or "
               "last_over_time({__name__=\"x\",hostname=\"\",Hostname=~\"b\"}[14999ms])");
}

}  // namespace
}  // namespace gpulens::diagnose
