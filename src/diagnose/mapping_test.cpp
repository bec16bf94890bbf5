// Name mapping: host joins, CPU modes, throttle bits, latency quantiles.
#include "diagnose/mapping.h"
#include "diagnose/testing/series.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpulens::diagnose {
namespace {

using testing::flat;
using testing::ramp;

TEST(HostKey, InstanceHostnameAndDomains) {
  const LabelPair a[] = {{"instance", "gpu-7.cluster.local:9100"}};
  EXPECT_EQ(host_key(a), "gpu-7");
  const LabelPair b[] = {{"Hostname", "GPU-7"}, {"instance", "x:1"}};
  EXPECT_EQ(host_key(b), "gpu-7");
  const LabelPair c[] = {{"instance", "10.0.0.5:9100"}};
  EXPECT_EQ(host_key(c), "10.0.0.5");
}

TEST(Builder, OneGpuHostJoinsTheOnlyOtherHost) {
  SignalSetBuilder b;
  const LabelPair gpu[] = {{"gpu", "0"}, {"Hostname", "dgx1"}};
  const LabelPair idle[] = {{"instance", "10.0.0.5:9100"}, {"cpu", "0"}, {"mode", "idle"}};
  const LabelPair user[] = {{"instance", "10.0.0.5:9100"}, {"cpu", "0"}, {"mode", "user"}};
  const LabelPair iow[] = {{"instance", "10.0.0.5:9100"}, {"cpu", "0"}, {"mode", "iowait"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", gpu, flat(90));
  b.add("node_cpu_seconds_total", idle, ramp(0.2));
  b.add("node_cpu_seconds_total", user, ramp(0.7));
  b.add("node_cpu_seconds_total", iow, ramp(0.1));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  EXPECT_EQ(set.hosts[0].name, "dgx1");
  const Series& busy = set.hosts[0].sig(HostSig::kCpuBusy);
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_NEAR(busy[0].v, 0.7, 1e-9);
  EXPECT_NEAR(set.hosts[0].sig(HostSig::kIowait)[0].v, 0.1, 1e-9);
}

TEST(Builder, TwoHostsStaySeparate) {
  SignalSetBuilder b;
  const LabelPair g1[] = {{"gpu", "0"}, {"instance", "a:9400"}};
  const LabelPair g2[] = {{"gpu", "0"}, {"instance", "b:9400"}};
  const LabelPair n1[] = {{"instance", "a:9100"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", g1, flat(90));
  b.add("DCGM_FI_DEV_GPU_UTIL", g2, flat(10));
  b.add("node_pressure_io_waiting_seconds_total", n1, ramp(0.5));
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 2u);
  EXPECT_FALSE(set.hosts[0].sig(HostSig::kPsiIo).empty());
  EXPECT_TRUE(set.hosts[1].sig(HostSig::kPsiIo).empty());
}

TEST(Builder, ThrottleBitmaskSplitsThermalAndPower) {
  SignalSetBuilder b;
  const LabelPair g[] = {{"gpu", "3"}};
  b.add("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", g, flat(0x40 | 0x1));
  SignalSet set = b.build();
  const GpuSignals& gs = set.hosts[0].gpus[0];
  EXPECT_EQ(gs.sig(GpuSig::kThermalThrottle)[0].v, 1);
  EXPECT_EQ(gs.sig(GpuSig::kPowerThrottle)[0].v, 0);
}

TEST(Builder, UnknownNamesAndLoopbackAreNotSignals) {
  SignalSetBuilder b;
  const LabelPair lo[] = {{"device", "lo"}};
  EXPECT_FALSE(b.add("node_network_receive_bytes_total", lo, ramp(1e9)));
  EXPECT_FALSE(b.add("node_filesystem_avail_bytes", {}, flat(1)));
  EXPECT_EQ(b.unknown_series(), 2u);
}

TEST(HistogramQuantile, InterpolatesWithinTheBucket) {
  const std::pair<double, double> b[] = {{0.1, 50}, {0.2, 90}, {0.5, 100}, {INFINITY, 100}};
  EXPECT_NEAR(histogram_quantile(0.5, b), 0.1, 1e-9);
  EXPECT_NEAR(histogram_quantile(0.99, b), 0.2 + 0.3 * 0.9, 1e-9);
  const std::pair<double, double> empty[] = {{0.1, 0}, {INFINITY, 0}};
  EXPECT_TRUE(std::isnan(histogram_quantile(0.99, empty)));
}

TEST(Builder, TritonMeanLatencyFromDurationAndCount) {
  SignalSetBuilder b;
  const LabelPair g[] = {{"gpu", "0"}};
  const LabelPair m[] = {{"model", "m"}, {"version", "1"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", g, flat(50));
  b.add("nv_inference_request_duration_us", m, ramp(2e6));  // 2 s of latency per s
  b.add("nv_inference_request_success", m, ramp(20));       // 20 requests per s
  SignalSet set = b.build();
  ASSERT_FALSE(set.hosts[0].sig(HostSig::kLatencyMean).empty());
  EXPECT_NEAR(set.hosts[0].sig(HostSig::kLatencyMean)[0].v, 0.1, 1e-9);
}

}  // namespace
}  // namespace gpulens::diagnose
