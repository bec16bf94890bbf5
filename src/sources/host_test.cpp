// Host parsers on real-format text, and the source on a fixture tree.
#include "sources/host.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/live.h"
#include "util/testing/temp_dir.h"

namespace gpulens {
namespace {

namespace fs = std::filesystem;

TEST(HostParse, ProcStat) {
  auto t = host::parse_proc_stat(
      "cpu  1000 20 300 40000 50 6 7 8 0 0\ncpu0 500 10 150 20000 25 3 3 4 0 0\n"
      "cpu1 500 10 150 20000 25 3 4 4 0 0\nintr 1 2 3\n");
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(t->seconds[0], 10.0);   // user
  EXPECT_DOUBLE_EQ(t->seconds[3], 400.0);  // idle
  EXPECT_DOUBLE_EQ(t->seconds[4], 0.5);    // iowait
  EXPECT_EQ(t->cpus, 2);
  EXPECT_FALSE(host::parse_proc_stat("garbage\n").ok());
}

TEST(HostParse, Pressure) {
  auto p = host::parse_pressure(
      "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n");
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->some_seconds, 2.5);
  EXPECT_DOUBLE_EQ(p->full_seconds, 1.0);
  EXPECT_FALSE(host::parse_pressure("").ok());
}

TEST(HostParse, DiskstatsAndNetDev) {
  auto d = host::parse_diskstats(
      " 259       0 nvme0n1 100 0 2048 10 50 0 4096 20 0 1500 30 0 0 0 0\n 7 0 loop0 1 2\n");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].device, "nvme0n1");
  EXPECT_DOUBLE_EQ(d[0].read_bytes, 2048 * 512.0);
  EXPECT_DOUBLE_EQ(d[0].written_bytes, 4096 * 512.0);
  EXPECT_DOUBLE_EQ(d[0].io_seconds, 1.5);

  auto n = host::parse_net_dev(
      "Inter-|   Receive |  Transmit\n face |bytes packets\n"
      "    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n"
      "  eth0: 123456 10 0 0 0 0 0 0 654321 20 0 0 0 0 0 0\n");
  ASSERT_EQ(n.size(), 2u);
  EXPECT_EQ(n[1].device, "eth0");
  EXPECT_DOUBLE_EQ(n[1].rx_bytes, 123456);
  EXPECT_DOUBLE_EQ(n[1].tx_bytes, 654321);
  EXPECT_DOUBLE_EQ(host::parse_ib_rate("400 Gb/sec (4X NDR)\n"), 50e9);
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

TEST(HostSource, ReadsFixtureTree) {
  const testing::TestDir dir;
  const fs::path root = dir.path();
  write(root / "proc/stat", "cpu  100 0 100 800 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0\n");
  write(root / "proc/pressure/io", "some avg10=0 avg60=0 avg300=0 total=3000000\nfull avg10=0 avg60=0 avg300=0 total=1000000\n");
  write(root / "proc/diskstats", " 259 0 nvme0n1 1 0 8 0 1 0 8 0 0 2000 0\n 259 1 nvme0n1p1 1 0 8 0 1 0 8 0 0 2000 0\n");
  write(root / "proc/net/dev",
        "h\nh\n eth0: 10 0 0 0 0 0 0 0 20 0 0 0 0 0 0 0\n"
        " eth1: 10 0 0 0 0 0 0 0 20 0 0 0 0 0 0 0\n bond0: 10 0 0 0 0 0 0 0 20 0 0 0 0 0 0 0\n"
        " veth9: 10 0 0 0 0 0 0 0 20 0 0 0 0 0 0 0\n eth2: 10 0 0 0 0 0 0 0 20 0 0 0 0 0 0 0\n");
  write(root / "sys/block/nvme0n1/size", "1\n");
  write(root / "sys/class/net/eth0/speed", "100000\n");
  write(root / "sys/class/net/eth0/device/vendor", "0x15b3\n");
  // eth1 is bond0's slave: judged as the bond (speed: the bond's), not twice.
  write(root / "sys/class/net/eth1/speed", "100000\n");
  write(root / "sys/class/net/eth1/device/vendor", "0x15b3\n");
  write(root / "sys/class/net/eth1/bonding_slave/state", "active\n");
  write(root / "sys/class/net/bond0/speed", "200000\n");
  write(root / "sys/class/net/bond0/bonding/mode", "802.3ad 4\n");
  // A virtual interface has no device behind it.
  write(root / "sys/class/net/veth9/speed", "10000\n");
  // A link that is down reports speed -1: no speed, not judged.
  write(root / "sys/class/net/eth2/speed", "-1\n");
  write(root / "sys/class/net/eth2/device/vendor", "0x8086\n");
  write(root / "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "25\n");
  write(root / "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "50\n");
  write(root / "sys/class/infiniband/mlx5_0/ports/1/rate", "400 Gb/sec (4X NDR)\n");

  SourceOptions o;
  o.host.proc_root = (root / "proc").string();
  o.host.sys_root = (root / "sys").string();
  auto src = make_host_source(o);
  SeriesRegistry reg;
  ASSERT_TRUE(src->open(reg).is_ok());
  Frame f(reg);
  f.clear(1000);
  EXPECT_TRUE(src->sample(f).is_ok());
  LiveStore live;
  live.publish(live.add_source("host", false), f);
  auto value = [&](FieldId id, const Labels& extra) {
    uint32_t s = reg.slot(id, kNodeEntity, extra);
    return live.present(s) ? live.value(s) : -1.0;
  };
  EXPECT_DOUBLE_EQ(value(FieldId::kHostCpuSeconds, Labels{{"mode", "user"}}), 1.0);
  EXPECT_DOUBLE_EQ(value(FieldId::kHostPressureIoWaiting, Labels{}), 3.0);
  EXPECT_DOUBLE_EQ(value(FieldId::kHostPressureIoStalled, Labels{}), 1.0);
  EXPECT_DOUBLE_EQ(value(FieldId::kHostPressureCpuWaiting, Labels{}), -1.0);  // no file: absent
  EXPECT_DOUBLE_EQ(value(FieldId::kHostDiskIoTime, Labels{{"device", "nvme0n1"}}), 2.0);
  EXPECT_DOUBLE_EQ(value(FieldId::kHostDiskIoTime, Labels{{"device", "nvme0n1p1"}}), -1.0);  // partition skipped
  EXPECT_DOUBLE_EQ(value(FieldId::kHostNetworkSpeed, Labels{{"device", "eth0"}}), 12.5e9);
  EXPECT_DOUBLE_EQ(value(FieldId::kHostNetworkSpeed, Labels{{"device", "bond0"}}), 25e9);
  EXPECT_DOUBLE_EQ(value(FieldId::kHostNetworkSpeed, Labels{{"device", "eth1"}}), -1.0);   // bond slave
  EXPECT_DOUBLE_EQ(value(FieldId::kHostNetworkSpeed, Labels{{"device", "veth9"}}), -1.0);  // virtual
  EXPECT_DOUBLE_EQ(value(FieldId::kHostNetworkSpeed, Labels{{"device", "eth2"}}), -1.0);   // link down
  EXPECT_DOUBLE_EQ(value(FieldId::kHostNetworkReceiveBytes, Labels{{"device", "eth1"}}), 10);  // bytes still exported
  EXPECT_DOUBLE_EQ(value(FieldId::kHostInfinibandReceiveBytes, Labels{{"device", "mlx5_0"}, {"port", "1"}}), 100);

  // An unreadable file is an error naming it; the rest is still reported.
  fs::remove(root / "proc/diskstats");
  f.clear(2000);
  Status s = src->sample(f);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("diskstats"), std::string::npos);
  EXPECT_FALSE(f.values().empty());
  fs::remove_all(root);
}

TEST(HostSource, NotApplicableWithoutProcfs) {
  SourceOptions o;
  o.host.proc_root = "/nonexistent/proc";
  SeriesRegistry reg;
  EXPECT_EQ(make_host_source(o)->open(reg).code(), Code::kNotApplicable);
}

}  // namespace
}  // namespace gpulens
