// The kmsg source: NVIDIA driver XIDs, NVSwitch SXids, PCIe AER errors and
// "GPU fell off the bus" lines from the kernel log.
//
// NVML's event API misses the worst faults: a GPU that fell off the bus
// (XID 79) leaves no device to ask, GSP failures (119, 120) often arrive
// only in the kernel log. This source tails /dev/kmsg (or any file or FIFO
// given as --kmsg-path) and feeds the same per-XID counters and last-XID
// fields as the NVML events, through the agent's XidLedger (model/
// xid_ledger.h): an XID both paths see counts once. Each line is joined to
// its GPU by PCI bus id, also for a GPU NVML does not list (it gets an index
// of its own, gpu_up 0 once lost).
//
// The reader never blocks the other sources: the file is opened
// non-blocking and each sample() reads what is there (at most 8 MiB) and
// returns. It starts at the current end (no replay of old boots) unless
// KmsgOptions::replay; on /dev/kmsg an overrun (EPIPE: records overwritten
// before they were read) is counted and reading goes on; a regular file
// that is rotated or truncated is reopened from its start; a path that
// vanishes makes sample() return an error (the values already counted
// stay) until it is back. A line longer than max_line_bytes is skipped
// whole and logged. A kernel log the agent may not read (no root or
// CAP_SYSLOG while kernel.dmesg_restrict=1), or no /dev/kmsg at all, makes
// open() "not applicable": the agent says so once and runs without it.
//
//   auto line = kmsg::parse_line("NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.");
//   line.kind == kmsg::Kind::kXid && line.code == 79 && line.bus == "0000:3b:00"
//
// Thread-safety: as every source (sources/source.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sources/options.h"
#include "sources/source.h"

namespace gpulens {

std::unique_ptr<Source> make_kmsg_source(const SourceOptions& options);

namespace kmsg {

enum class Kind : uint8_t {
  kNone,     // not a line this source reads
  kXid,      // NVRM: Xid (PCI:…): <code>, …
  kSxid,     // nvidia-nvswitchN: SXid (PCI:…): <code>, Fatal|Non-fatal, …
  kAer,      // <driver> <bus>: [AER: ]PCIe Bus Error: severity=…
  kGpuLost,  // NVRM: GPU <bus>: GPU has fallen off the bus (and similar, without an XID)
};

struct Line {
  Kind kind = Kind::kNone;
  std::string bus;       // canonical_bus_id() of the GPU, NVSwitch or device
  long long code = 0;    // XID or SXid
  std::string severity;  // SXid: fatal, nonfatal; AER: corrected, nonfatal, fatal
  std::string driver;    // AER: the device's driver ("nvidia", "pcieport")
  std::string message;   // the text after the code, without pid=/name=; printable ASCII only
  int64_t usec = -1;     // /dev/kmsg record time (microseconds since boot); -1: none
};

// One kernel-log line in any of the forms the kernel and the tools around
// it write: a /dev/kmsg record ("6,1234,5678901,-;NVRM: …"), dmesg's
// "[ 5678.901] NVRM: …", syslog's "Dec  2 01:02:03 host kernel: NVRM: …", or
// the bare message. /dev/kmsg continuation lines (" SUBSYSTEM=pci") and
// anything else are kNone.
Line parse_line(std::string_view line);

}  // namespace kmsg
}  // namespace gpulens
