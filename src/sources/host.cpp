// procfs/sysfs readers for the host source.
#include "sources/host.h"

#include <array>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/catalog.h"

namespace gpulens {
namespace host {

constexpr const char* kModes[8] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};

std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

namespace {

bool to_double(std::string_view s, double& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

template <typename F>
void for_each_line(std::string_view text, F&& f) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    f(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace

Result<CpuTimes> parse_proc_stat(std::string_view text) {
  CpuTimes t;
  bool found = false;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.empty()) return;
    if (f[0] == "cpu") {
      for (size_t m = 0; m < 8 && m + 1 < f.size(); ++m) {
        double ticks = 0;
        if (to_double(f[m + 1], ticks)) t.seconds[m] = ticks / 100.0;
      }
      found = f.size() >= 5;
    } else if (f[0].starts_with("cpu")) {
      ++t.cpus;
    }
  });
  if (!found) return invalid_argument("no aggregate \"cpu\" line");
  return t;
}

Result<Pressure> parse_pressure(std::string_view text) {
  Pressure p;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.empty()) return;
    for (auto kv : f) {
      if (!kv.starts_with("total=")) continue;
      double us = 0;
      if (!to_double(kv.substr(6), us)) continue;
      (f[0] == "some" ? p.some_seconds : p.full_seconds) = us / 1e6;
    }
  });
  if (p.some_seconds < 0) return invalid_argument("no \"some ... total=\" line");
  return p;
}

std::vector<DiskStat> parse_diskstats(std::string_view text) {
  std::vector<DiskStat> out;
  for_each_line(text, [&](std::string_view line) {
    auto f = fields(line);
    if (f.size() < 14) return;
    double sectors_read = 0, sectors_written = 0, io_ms = 0;
    if (!to_double(f[5], sectors_read) || !to_double(f[9], sectors_written) || !to_double(f[12], io_ms)) return;
    out.push_back({std::string(f[2]), io_ms / 1000.0, sectors_read * 512, sectors_written * 512});
  });
  return out;
}

std::vector<NetDev> parse_net_dev(std::string_view text) {
  std::vector<NetDev> out;
  for_each_line(text, [&](std::string_view line) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) return;
    auto name = fields(line.substr(0, colon));
    auto f = fields(line.substr(colon + 1));
    if (name.size() != 1 || f.size() < 9) return;
    NetDev d{std::string(name[0]), 0, 0};
    if (!to_double(f[0], d.rx_bytes) || !to_double(f[8], d.tx_bytes)) return;
    out.push_back(std::move(d));
  });
  return out;
}

double parse_ib_rate(std::string_view text) {
  auto f = fields(text);
  double gbit = 0;
  if (f.empty() || !to_double(f[0], gbit)) return 0;
  return gbit * 1e9 / 8;
}

}  // namespace host

namespace {

namespace fs = std::filesystem;

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream s;
  s << in.rdbuf();
  out = s.str();
  return true;
}

class HostSource final : public Source {
 public:
  explicit HostSource(HostOptions o) : o_(std::move(o)) {}
  std::string_view name() const override { return "host"; }

  Status open(SeriesRegistry&) override {
    if (!fs::exists(o_.proc_root + "/stat")) return not_applicable("no procfs at " + o_.proc_root);
    return Status::ok();
  }

  Status sample(Frame& f) override {
    std::string failed;
    auto fail = [&](const std::string& what) { failed += (failed.empty() ? "" : "; ") + what; };

    if (read_file(o_.proc_root + "/stat", buf_)) {
      if (auto cpu = host::parse_proc_stat(buf_)) {
        static const std::array<Labels, 8> kModeLabels = [] {
          std::array<Labels, 8> out;
          for (int m = 0; m < 8; ++m) out[m] = Labels{{"mode", host::kModes[m]}};
          return out;
        }();
        for (int m = 0; m < 8; ++m) f.set_node(FieldId::kHostCpuSeconds, kModeLabels[m], cpu->seconds[m]);
        f.set_node(FieldId::kHostCpuCount, cpu->cpus);
      } else {
        fail(o_.proc_root + "/stat: " + cpu.status().message());
      }
    } else {
      fail("cannot read " + o_.proc_root + "/stat");
    }

    // PSI is optional (kernels without CONFIG_PSI): absent, not an error.
    static constexpr struct { const char* file; FieldId some; FieldId full; } kPsi[] = {
        {"cpu", FieldId::kHostPressureCpuWaiting, FieldId::kCount},
        {"io", FieldId::kHostPressureIoWaiting, FieldId::kHostPressureIoStalled},
        {"memory", FieldId::kHostPressureMemoryWaiting, FieldId::kCount},
    };
    for (const auto& p : kPsi) {
      if (!read_file(o_.proc_root + "/pressure/" + p.file, buf_)) continue;
      auto pr = host::parse_pressure(buf_);
      if (!pr) {
        fail(o_.proc_root + "/pressure/" + p.file + ": " + pr.status().message());
        continue;
      }
      f.set_node(p.some, pr->some_seconds);
      if (p.full != FieldId::kCount && pr->full_seconds >= 0) f.set_node(p.full, pr->full_seconds);
    }

    if (read_file(o_.proc_root + "/diskstats", buf_)) {
      for (const auto& d : host::parse_diskstats(buf_)) {
        // Whole disks only: partitions and virtual devices have no /sys/block entry.
        if (!fs::exists(o_.sys_root + "/block/" + d.device) || d.device.starts_with("loop") ||
            d.device.starts_with("ram")) {
          continue;
        }
        const Labels dev{{"device", d.device}};
        f.set_node(FieldId::kHostDiskIoTime, dev, d.io_seconds);
        f.set_node(FieldId::kHostDiskReadBytes, dev, d.read_bytes);
        f.set_node(FieldId::kHostDiskWrittenBytes, dev, d.written_bytes);
      }
    } else {
      fail("cannot read " + o_.proc_root + "/diskstats");
    }

    if (read_file(o_.proc_root + "/net/dev", buf_)) {
      for (const auto& d : host::parse_net_dev(buf_)) {
        if (d.device == "lo") continue;
        const Labels dev{{"device", d.device}};
        f.set_node(FieldId::kHostNetworkReceiveBytes, dev, d.rx_bytes);
        f.set_node(FieldId::kHostNetworkTransmitBytes, dev, d.tx_bytes);
        // The speed is what diagnosis judges an interface against, so only
        // interfaces that carry their own traffic get one: a virtual
        // interface (no device behind it: veth, bridge, tun) or a bond's slave
        // (its traffic is the bond's too) is left without.
        if (!judged_interface(d.device)) continue;
        double mbit = 0;
        if (read_file(o_.sys_root + "/class/net/" + d.device + "/speed", buf_) &&
            std::from_chars(buf_.data(), buf_.data() + buf_.size(), mbit).ec == std::errc() && mbit > 0) {
          f.set_node(FieldId::kHostNetworkSpeed, dev, mbit * 1e6 / 8);
        }
      }
    } else {
      fail("cannot read " + o_.proc_root + "/net/dev");
    }

    sample_infiniband(f);
    if (!failed.empty()) return io_error(failed);
    return Status::ok();
  }

 private:
  // A physical interface (sysfs `device` link) that is not a bond's slave,
  // or a bond (sysfs `bonding`, its speed the sum of its active slaves).
  bool judged_interface(const std::string& dev) const {
    const std::string dir = o_.sys_root + "/class/net/" + dev;
    std::error_code ec;
    if (fs::exists(dir + "/bonding", ec)) return true;
    return fs::exists(dir + "/device", ec) && !fs::exists(dir + "/bonding_slave", ec);
  }

  void sample_infiniband(Frame& f) {
    std::error_code ec;
    const fs::path root = o_.sys_root + "/class/infiniband";
    for (const auto& dev : fs::directory_iterator(root, ec)) {
      for (const auto& port : fs::directory_iterator(dev.path() / "ports", ec)) {
        const Labels labels{{"device", dev.path().filename().string()}, {"port", port.path().filename().string()}};
        double words = 0;
        // port_{rcv,xmit}_data count 4-byte words.
        if (read_file((port.path() / "counters/port_rcv_data").string(), buf_) &&
            std::from_chars(buf_.data(), buf_.data() + buf_.size(), words).ec == std::errc()) {
          f.set_node(FieldId::kHostInfinibandReceiveBytes, labels, words * 4);
        }
        if (read_file((port.path() / "counters/port_xmit_data").string(), buf_) &&
            std::from_chars(buf_.data(), buf_.data() + buf_.size(), words).ec == std::errc()) {
          f.set_node(FieldId::kHostInfinibandTransmitBytes, labels, words * 4);
        }
        if (read_file((port.path() / "rate").string(), buf_)) {
          if (double r = host::parse_ib_rate(buf_); r > 0) f.set_node(FieldId::kHostInfinibandRate, labels, r);
        }
      }
    }
  }

  HostOptions o_;
  std::string buf_;
};

}  // namespace

std::unique_ptr<Source> make_host_source(const SourceOptions& options) {
  return std::make_unique<HostSource>(options.host);
}

}  // namespace gpulens
