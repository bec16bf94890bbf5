// XidLedger: one count per XID, however many paths report it.
//
// The NVML event API and the kernel log both see most XIDs; some (79, a GPU
// that fell off the bus; 119/120, GSP failures) only reach the kernel log.
// Both paths record into one ledger per agent, keyed by the GPU's PCI bus
// id, so that a GPU NVML no longer lists still has its XIDs, and an XID
// both paths saw is counted once.
//
// The rule: an XID recorded by one path is the same event as an unmatched
// XID of the same code on the same GPU recorded by the other path at most
// `window` seconds before or after; it pairs with the oldest such event and
// is not counted again. A burst of three XID 13s seen by both paths counts
// three; two XID 79s a minute apart count two.
//
//   XidLedger l;
//   l.record("00000000:3B:00.0", 79, now, XidPath::kNvml);        // counted: true
//   l.record("0000:3b:00", 79, now + 1, XidPath::kKernelLog, "GPU has fallen off the bus.");  // false
//   l.get("0000:3b:00")->counts.at(79) == 1
//
// Thread-safety: every member takes the ledger's lock.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gpulens {

class Frame;

// "dddd:bb:dd" (lower case hex, no function) for the PCI addresses the
// driver and NVML write: "00000000:3B:00.0", "0000:3b:00.0", "PCI:0000:3b:00",
// "3b:00.0" (domain 0); "" when `s` is not one.
std::string canonical_bus_id(std::string_view s);

enum class XidPath : uint8_t { kNvml, kKernelLog };
std::string_view xid_path_name(XidPath path);  // "nvml", "kernel_log"

class XidLedger {
 public:
  explicit XidLedger(double window_seconds = 10) : window_(window_seconds) {}

  // Records one XID seen by `path` at unix time `time`; true when counted,
  // false when it is the other path's event seen again (its message then
  // fills in a missing one). `bus` in any form canonical_bus_id() reads; any
  // other text is a key as it is (a GPU without a known bus id).
  bool record(std::string_view bus, long long code, double time, XidPath path, std::string_view message = {});

  struct Gpu {
    std::map<long long, uint64_t> counts;  // XID code -> events
    long long last = 0;
    double last_time = 0;
    std::string last_message;
    XidPath last_path = XidPath::kNvml;
  };
  std::optional<Gpu> get(std::string_view bus) const;
  std::vector<std::string> buses() const;  // canonical, with at least one XID

  // The NVML source claims the GPUs it fills; the kernel-log source fills
  // the others (a GPU NVML does not list, or every GPU without NVML).
  void claim(std::string_view bus);
  bool claimed(std::string_view bus) const;

  // Sets gpu_xid_errors_total{xid}, gpu_last_xid, its timestamp and
  // gpu_last_xid_info of GPU `gpu` from `g`.
  static void fill(Frame& frame, int gpu, const Gpu& g);

 private:
  struct Key {
    std::string bus;
    long long code;
    auto operator<=>(const Key&) const = default;
  };
  double window_;
  mutable std::mutex mu_;
  std::map<std::string, Gpu> gpus_;
  std::map<Key, std::deque<double>> unmatched_[2];  // by path: times not yet paired
  std::set<std::string> claimed_;
};

}  // namespace gpulens
