// The host source: CPU time by mode, PSI pressure, disk busy time and bytes,
// NIC bytes and speed, InfiniBand/RoCE port counters — the host-side evidence
// for "the GPU is waiting for data" and "NCCL went over TCP".
//
// Reads procfs and sysfs under overridable roots (HostOptions), so tests aim
// it at fixture trees. A NIC's speed (what diagnosis judges it against) is
// given only to interfaces that carry their own traffic: physical ones
// (sysfs `device`) that are not a bond's slave, and bonds; virtual
// interfaces and bond slaves keep their byte counters without a speed. Each file is parsed by a pure function below; a file
// that cannot be read makes sample() return an error naming it, while the
// values of the other files are still reported.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sources/options.h"
#include "sources/source.h"

namespace gpulens {

std::unique_ptr<Source> make_host_source(const SourceOptions& options);

namespace host {

struct CpuTimes {
  double seconds[8] = {};  // user nice system idle iowait irq softirq steal
  int cpus = 0;
};
struct Pressure {
  double some_seconds = -1, full_seconds = -1;  // -1: absent
};
struct DiskStat {
  std::string device;
  double io_seconds = 0, read_bytes = 0, written_bytes = 0;
};
struct NetDev {
  std::string device;
  double rx_bytes = 0, tx_bytes = 0;
};

// /proc/stat (USER_HZ = 100 ticks per second).
Result<CpuTimes> parse_proc_stat(std::string_view text);
// /proc/pressure/{cpu,io,memory}.
Result<Pressure> parse_pressure(std::string_view text);
// /proc/diskstats.
std::vector<DiskStat> parse_diskstats(std::string_view text);
// /proc/net/dev.
std::vector<NetDev> parse_net_dev(std::string_view text);
// /sys/class/infiniband/*/ports/*/rate, e.g. "400 Gb/sec (4X NDR)" -> bytes/s.
double parse_ib_rate(std::string_view text);

}  // namespace host
}  // namespace gpulens
