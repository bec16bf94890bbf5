// Per-device network links: each Ethernet interface judged against its own
// speed and each InfiniBand/RoCE port against its own rate, from node_exporter
// and gpulens names, with the device named in the evidence.
#include <gtest/gtest.h>

#include "diagnose/engine.h"
#include "diagnose/mapping.h"
#include "diagnose/report.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 61;  // 15 min at 15 s
constexpr int64_t kStep = 15'000;

Series flat(double v) { return testing::flat(v, kPoints, kStep); }
Series counter(double rate) { return testing::ramp(rate, kPoints, kStep); }

// A busy-looking GPU whose SMs wait (the shape of a communication-bound job).
void add_gpu(SignalSetBuilder& b) {
  const LabelPair gpu[] = {{"gpu", "0"}, {"Hostname", "n1"}, {"modelName", "NVIDIA H100 80GB HBM3"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", gpu, flat(95));
  b.add("DCGM_FI_PROF_SM_ACTIVE", gpu, flat(0.25));
}

void add_nic(SignalSetBuilder& b, const char* prefix, const char* dev, double bps, double speed) {
  const LabelPair l[] = {{"instance", "n1:9100"}, {"device", dev}};
  b.add(std::string(prefix) + "network_receive_bytes_total", l, counter(bps));
  b.add(std::string(prefix) + "network_transmit_bytes_total", l, counter(bps / 10));
  if (speed > 0) b.add(std::string(prefix) + "network_speed_bytes", l, flat(speed));
}

const Finding* find(const Report& r, std::string_view cause) {
  for (const Finding& f : r.hosts.at(0).gpus.at(0).findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}

const Evidence* evidence(const Finding& f, std::string_view signal) {
  for (const Evidence& e : f.evidence) {
    if (e.signal == signal) return &e;
  }
  return nullptr;
}

TEST(Links, EachNicAgainstItsOwnSpeed) {
  SignalSetBuilder b;
  add_gpu(b);
  add_nic(b, "node_", "eth0", 3.0e9, 3.125e9);  // 25 GbE at 96 %
  add_nic(b, "node_", "bond0", 1e8, 25e9);      // 200 Gb bond, idle
  add_nic(b, "node_", "eth9", 5e9, 0);          // no speed: not judged
  SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  const HostSignals& h = set.hosts[0];
  ASSERT_EQ(h.links.size(), 2u);
  EXPECT_EQ(h.links[0].device, "bond0");
  EXPECT_EQ(h.links[1].device, "eth0");
  EXPECT_DOUBLE_EQ(h.links[1].speed, 3.125e9);
  const Series& u = h.sig(HostSig::kNicUtil);
  ASSERT_FALSE(u.empty());
  // The saturated 25 GbE NIC, not the busiest bytes (eth9) over the fastest speed (bond0): 12 %.
  EXPECT_NEAR(u.back().v, 0.96, 1e-9);
}

TEST(Links, FallbackNamesTheSaturatedNic) {
  SignalSetBuilder b;
  add_gpu(b);
  add_nic(b, "node_", "eth0", 3.0e9, 3.125e9);
  add_nic(b, "node_", "bond0", 1e8, 25e9);
  const LabelPair ib[] = {{"instance", "n1:9100"}, {"device", "mlx5_0"}, {"port", "1"}};
  b.add("node_infiniband_port_data_received_bytes_total", ib, counter(1e3));
  b.add("node_infiniband_port_data_transmitted_bytes_total", ib, counter(1e3));
  b.add("node_infiniband_rate_bytes_per_second", ib, flat(50e9));
  const Report r = diagnose(b.build(), {});
  const Finding* f = find(r, "network_fallback");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  const Evidence* e = evidence(*f, "nic_util");
  ASSERT_NE(e, nullptr);
  EXPECT_NEAR(e->value, 0.96, 1e-6);
  EXPECT_EQ(e->detail, "eth0 at 96 % of its 25 Gb/s");
}

TEST(Links, IdleNicBesideBusyOneIsNotSaturation) {
  // The same bytes on the bond alone: 12 % of its speed, no fallback.
  SignalSetBuilder b;
  add_gpu(b);
  add_nic(b, "node_", "bond0", 3.0e9, 25e9);
  const LabelPair ib[] = {{"instance", "n1:9100"}, {"device", "mlx5_0"}, {"port", "1"}};
  b.add("node_infiniband_port_data_received_bytes_total", ib, counter(1e3));
  const Report r = diagnose(b.build(), {});
  EXPECT_EQ(find(r, "network_fallback"), nullptr) << report_text(r, false);
}

TEST(Links, BusyInfinibandPortAgainstItsOwnRate) {
  // gpulens names: one of two HCAs near its 400 Gb/s while the other idles;
  // the sum over ports against the fastest rate would read 47 %.
  SignalSetBuilder b;
  add_gpu(b);
  const LabelPair p0[] = {{"instance", "n1:9400"}, {"device", "mlx5_0"}, {"port", "1"}};
  const LabelPair p1[] = {{"instance", "n1:9400"}, {"device", "mlx5_1"}, {"port", "1"}};
  b.add("host_infiniband_receive_bytes_total", p0, counter(47e9));
  b.add("host_infiniband_rate_bytes", p0, flat(50e9));
  b.add("host_infiniband_receive_bytes_total", p1, counter(1e6));
  b.add("host_infiniband_rate_bytes", p1, flat(50e9));
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.at(0).links.size(), 2u);
  EXPECT_TRUE(set.hosts[0].links[0].infiniband);
  EXPECT_EQ(set.hosts[0].links[0].device, "mlx5_0/1");
  const Report r = diagnose(set, {});
  const Finding* f = find(r, "communication");
  ASSERT_NE(f, nullptr) << report_text(r, false);
  const Evidence* e = evidence(*f, "ib_util");
  ASSERT_NE(e, nullptr);
  EXPECT_NEAR(e->value, 0.94, 1e-6);
  EXPECT_EQ(e->detail, "mlx5_0/1 at 94 % of its 400 Gb/s");
}

}  // namespace
}  // namespace gpulens::diagnose
