// The kernel-log source: parse_line, the non-blocking reader, the join to
// GPUs by bus id; see kmsg.h.
#include "sources/kmsg.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "model/xid_ledger.h"

namespace gpulens {
namespace kmsg {
namespace {

bool digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.remove_suffix(1);
  return s;
}

// Printable ASCII only: the text becomes a label value.
std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
  return out;
}

// Leading decimal number of `s`; advances past it.
bool number(std::string_view& s, long long& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || v < 0) return false;
  s.remove_prefix(static_cast<size_t>(r.ptr - s.data()));
  return true;
}

// Drops "pid=…, " and "name=…, " (each up to the next ", ") from the front.
std::string_view drop_process(std::string_view s) {
  for (std::string_view key : {"pid=", "name="}) {
    if (!s.starts_with(key)) continue;
    const size_t comma = s.find(", ");
    s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 2);
  }
  return s;
}

// "(PCI:0000:3b:00): 79, rest" -> bus, code, rest.
bool bus_and_code(std::string_view s, std::string& bus, long long& code, std::string_view& rest) {
  if (!s.starts_with("(")) return false;
  const size_t close = s.find(')');
  if (close == std::string_view::npos) return false;
  bus = canonical_bus_id(s.substr(1, close - 1));
  if (bus.empty()) return false;
  s.remove_prefix(close + 1);
  if (!s.starts_with(": ")) return false;
  s.remove_prefix(2);
  if (!number(s, code)) return false;
  if (s.starts_with(",")) s.remove_prefix(1);
  rest = trim(s);
  return true;
}

// The last word of `s` that is a PCI address ("0000:3b:00.0").
std::string last_bus(std::string_view s) {
  std::string found;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of(" \t(),", i);
    if (j == std::string_view::npos) j = s.size();
    std::string_view word = s.substr(i, j - i);
    if (word.ends_with(":")) word.remove_suffix(1);
    if (word.find('.') != std::string_view::npos && std::count(word.begin(), word.end(), ':') == 2) {
      if (std::string b = canonical_bus_id(word); !b.empty()) found = b;
    }
    i = j + 1;
  }
  return found;
}

}  // namespace

Line parse_line(std::string_view text) {
  Line out;
  if (text.empty() || text.front() == ' ' || text.front() == '\t') return out;  // kmsg continuation
  std::string_view msg = trim(text);
  // /dev/kmsg: "prio,seq,usec,flags[,…];message"
  if (const size_t semi = msg.find(';'); semi != std::string_view::npos && semi < 64) {
    std::string_view head = msg.substr(0, semi);
    std::string_view f[3];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= head.size() && n < 3; ++i) {
      if (i == head.size() || head[i] == ',') {
        f[n++] = head.substr(start, i - start);
        start = i + 1;
      }
    }
    if (n == 3 && digits(f[0]) && digits(f[1]) && digits(f[2]) && start <= head.size()) {
      long long usec = 0;
      std::string_view u = f[2];
      if (number(u, usec)) out.usec = usec;
      msg = msg.substr(semi + 1);
    }
  }
  std::string_view rest;
  if (size_t at = msg.find("NVRM: Xid "); at != std::string_view::npos) {
    if (!bus_and_code(msg.substr(at + 10), out.bus, out.code, rest)) return Line{};
    out.kind = Kind::kXid;
    out.message = printable(drop_process(rest));
    return out;
  }
  if (size_t at = msg.find("SXid "); at != std::string_view::npos) {
    if (!bus_and_code(msg.substr(at + 5), out.bus, out.code, rest)) return Line{};
    out.kind = Kind::kSxid;
    if (rest.starts_with("Fatal")) out.severity = "fatal";
    else if (rest.starts_with("Non-fatal")) out.severity = "nonfatal";
    else out.severity = "unknown";
    if (const size_t comma = rest.find(", "); comma != std::string_view::npos && out.severity != "unknown") {
      rest = rest.substr(comma + 2);
    }
    out.message = printable(rest);
    return out;
  }
  if (size_t at = msg.find("PCIe Bus Error: severity="); at != std::string_view::npos) {
    std::string_view prefix = msg.substr(0, at);
    std::string_view sev = msg.substr(at + 25);
    if (sev.starts_with("Corrected")) out.severity = "corrected";
    else if (sev.starts_with("Uncorrected (Non-Fatal)") || sev.starts_with("Uncorrectable (Non-Fatal)")) out.severity = "nonfatal";
    else if (sev.starts_with("Uncorrected (Fatal)") || sev.starts_with("Uncorrectable (Fatal)")) out.severity = "fatal";
    else return Line{};
    out.bus = last_bus(prefix);
    if (out.bus.empty()) return Line{};
    // "<driver> 0000:3b:00.0: " — the word before the address.
    std::string_view p = trim(prefix);
    if (p.ends_with("AER:")) p = trim(p.substr(0, p.size() - 4));
    if (const size_t sp = p.rfind(' '); sp != std::string_view::npos) {
      std::string_view before = trim(p.substr(0, sp));
      const size_t sp2 = before.rfind(' ');
      out.driver = printable(sp2 == std::string_view::npos ? before : before.substr(sp2 + 1));
    }
    out.kind = Kind::kAer;
    out.message = printable(trim(sev));
    return out;
  }
  if (size_t at = msg.find("NVRM: "); at != std::string_view::npos &&
                                      (msg.find("fallen off the bus") != std::string_view::npos ||
                                       msg.find("GPU is lost") != std::string_view::npos)) {
    std::string_view body = msg.substr(at + 6);
    // "GPU 0000:3b:00.0: …", "The NVIDIA GPU 0000:3b:00.0 (PCI ID: …)", "GPU at PCI:0000:3b:00: …"
    std::string bus = last_bus(body.substr(0, body.find(" has ") == std::string_view::npos ? body.size() : body.find(" has ")));
    if (bus.empty()) {
      if (size_t p = body.find("PCI:"); p != std::string_view::npos) {
        std::string_view w = body.substr(p);
        w = w.substr(0, w.find_first_of(" )"));
        if (w.ends_with(":")) w.remove_suffix(1);
        bus = canonical_bus_id(w);
      }
    }
    if (bus.empty()) return Line{};
    out.kind = Kind::kGpuLost;
    out.bus = std::move(bus);
    out.message = printable(trim(body));
    return out;
  }
  return out;
}

}  // namespace kmsg

namespace {

constexpr std::string_view kDevKmsg = "/dev/kmsg";

double realtime_now() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

double boottime_now() {
  timespec ts{};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// "0000:3b:00" -> NVML's "00000000:3B:00.0".
std::string nvml_bus_id(const std::string& canonical) {
  std::string out = "0000" + canonical + ".0";
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

class KmsgSource final : public Source {
 public:
  explicit KmsgSource(const SourceOptions& o) : options_(o.kmsg), ledger_(o.xids) {}
  ~KmsgSource() override { close_fd(); }

  std::string_view name() const override { return "kmsg"; }

  Status open(SeriesRegistry& registry) override {
    registry_ = &registry;
    if (Status s = open_path(!options_.replay); !s) {
      // Not allowed to read the kernel log, or no /dev/kmsg at all (a
      // container without the mount): said once at start, the other sources
      // go on. A file given by name that is missing stays an error (a typo).
      const bool device = options_.path == kDevKmsg;
      if (s.code() == Code::kPermission || (device && s.code() == Code::kNotFound)) {
        return not_applicable(s.message() + "; XIDs come from NVML events only");
      }
      return s;
    }
    return Status::ok();
  }

  Status sample(Frame& frame) override {
    Status status = read_available();
    fill(frame);
    return status;
  }

 private:
  enum class Mode { kDevice, kFile, kFifo };

  Status open_path(bool at_end) {
    const int fd = ::open(options_.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      std::string why = "cannot open kernel log " + options_.path + ": " + std::strerror(e);
      if (e == EACCES || e == EPERM) {
        return {Code::kPermission, why + " (reading the kernel log needs root or CAP_SYSLOG, unless "
                                         "kernel.dmesg_restrict=0)"};
      }
      return e == ENOENT ? not_found(why) : io_error(why);
    }
    struct stat st{};
    if (fstat(fd, &st) != 0) {
      ::close(fd);
      return io_error("cannot stat kernel log " + options_.path);
    }
    mode_ = S_ISCHR(st.st_mode) ? Mode::kDevice : S_ISFIFO(st.st_mode) ? Mode::kFifo : Mode::kFile;
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    if (at_end && mode_ != Mode::kFifo) {
      // On /dev/kmsg SEEK_END moves past the last record; on a file to its end.
      offset_ = lseek(fd, 0, SEEK_END);
      if (offset_ < 0) offset_ = 0;
    } else {
      offset_ = 0;
    }
    fd_ = fd;
    pending_.clear();
    skipping_ = false;
    return Status::ok();
  }

  void close_fd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // Reads what is there now; never waits.
  Status read_available() {
    if (fd_ < 0) {
      // Gone earlier: back now? A new file is read from its start.
      if (Status s = open_path(mode_ == Mode::kDevice); !s) return unavailable("kernel log " + options_.path + " is gone: " + s.message());
      std::fprintf(stderr, "gpulens: kmsg: %s is back; reading it again\n", options_.path.c_str());
    }
    constexpr size_t kBudget = 8 << 20;
    size_t total = 0;
    while (total < kBudget) {
      const ssize_t n = ::read(fd_, buf_, sizeof buf_);
      if (n > 0) {
        total += static_cast<size_t>(n);
        offset_ += n;
        if (mode_ == Mode::kDevice) take_line({buf_, static_cast<size_t>(n)});
        else take_bytes({buf_, static_cast<size_t>(n)});
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EPIPE) {
        // /dev/kmsg: records were overwritten before we read them; the next
        // read returns the oldest one still there.
        ++overruns_;
        std::fprintf(stderr, "gpulens: kmsg: kernel log overrun: records lost before they were read (%llu so far)\n",
                     static_cast<unsigned long long>(overruns_));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        const std::string why = std::strerror(errno);
        close_fd();
        return io_error("reading kernel log " + options_.path + ": " + why);
      }
      break;  // EAGAIN, or end of file
    }
    if (mode_ == Mode::kFile) return check_rotation();
    if (mode_ == Mode::kFifo) {
      struct stat st{};
      if (stat(options_.path.c_str(), &st) != 0) {
        close_fd();
        return unavailable("kernel log " + options_.path + " vanished");
      }
    }
    return Status::ok();
  }

  // A regular file that was renamed, replaced, truncated or removed.
  Status check_rotation() {
    struct stat st{};
    if (stat(options_.path.c_str(), &st) != 0) {
      close_fd();
      return unavailable("kernel log " + options_.path + " vanished; read again when it is back");
    }
    if (st.st_dev != dev_ || st.st_ino != ino_) {
      // Rotated: what was left in the old file was read above; the new one is
      // read from its start.
      close_fd();
      if (Status s = open_path(false); !s) return s;
      return read_available();
    }
    if (st.st_size < offset_) {
      lseek(fd_, 0, SEEK_SET);  // truncated in place
      offset_ = 0;
      pending_.clear();
      skipping_ = false;
      return read_available();
    }
    return Status::ok();
  }

  void take_bytes(std::string_view data) {
    while (!data.empty()) {
      const size_t nl = data.find('\n');
      const std::string_view piece = data.substr(0, nl);
      if (skipping_) {
        if (nl != std::string_view::npos) skipping_ = false;
      } else if (pending_.size() + piece.size() > static_cast<size_t>(options_.max_line_bytes)) {
        skip_long();
        pending_.clear();
        skipping_ = nl == std::string_view::npos;
      } else {
        pending_.append(piece);
        if (nl != std::string_view::npos) {
          take_line(pending_);
          pending_.clear();
        }
      }
      if (nl == std::string_view::npos) break;
      data.remove_prefix(nl + 1);
    }
  }

  void skip_long() {
    ++long_lines_;
    std::fprintf(stderr, "gpulens: kmsg: skipped a kernel log line longer than %lld bytes (%llu so far)\n",
                 static_cast<long long>(options_.max_line_bytes), static_cast<unsigned long long>(long_lines_));
  }

  void take_line(std::string_view record) {
    // A /dev/kmsg record is "header;message\n" plus " KEY=value" lines.
    const size_t nl = record.find('\n');
    kmsg::Line l = kmsg::parse_line(record.substr(0, nl));
    if (l.kind == kmsg::Kind::kNone) return;
    double t = realtime_now();
    if (l.usec >= 0 && mode_ == Mode::kDevice) t -= boottime_now() - static_cast<double>(l.usec) / 1e6;
    switch (l.kind) {
      case kmsg::Kind::kXid:
        ledger_->record(l.bus, l.code, t, XidPath::kKernelLog, l.message);
        seen_.insert(l.bus);
        if (l.code == 79) lost_.insert(l.bus);
        break;
      case kmsg::Kind::kGpuLost:
        lost_.insert(l.bus);
        seen_.insert(l.bus);
        break;
      case kmsg::Kind::kAer:
        // A GPU's own error: its driver is nvidia, or the address is a GPU's.
        if (l.driver == "nvidia" || gpu_index(l.bus, false) >= 0) {
          ++aer_[{l.bus, l.severity}];
          seen_.insert(l.bus);
        }
        break;
      case kmsg::Kind::kSxid:
        ++sxid_[{l.bus, l.code, l.severity}];
        break;
      case kmsg::Kind::kNone:
        break;
    }
  }

  // The index of the GPU at `bus`: NVML's (or the simulator's) when it lists
  // it, else one of this source's own, registered on first use.
  int gpu_index(const std::string& bus, bool create) {
    if (auto it = own_.find(bus); it != own_.end()) return it->second;
    int count = 0;
    {
      std::lock_guard lock(registry_->mutex());
      count = registry_->gpu_count();
      for (int i = 0; i < count; ++i) {
        const GpuIdentity* g = registry_->gpu(i);
        if (g != nullptr && !g->pci_bus_id.empty() && canonical_bus_id(g->pci_bus_id) == bus) return i;
      }
    }
    if (!create) return -1;
    const int index = count;
    registry_->set_gpu(index, {.uuid = "", .name = "", .pci_bus_id = nvml_bus_id(bus)});
    own_[bus] = index;
    std::fprintf(stderr, "gpulens: kmsg: GPU %s is in the kernel log but not listed by NVML; it is gpu %d\n",
                 bus.c_str(), index);
    return index;
  }

  void fill(Frame& frame) {
    for (const std::string& bus : seen_) {
      const int gpu = gpu_index(bus, true);
      if (!ledger_->claimed(bus)) {
        if (auto g = ledger_->get(bus)) XidLedger::fill(frame, gpu, *g);
        // NVML answers gpu_up for the GPUs it lists; one it cannot see is up
        // as far as the kernel log knows until it is lost.
        if (own_.contains(bus)) frame.set(FieldId::kGpuUp, gpu, lost_.contains(bus) ? 0 : 1);
      }
    }
    for (const auto& [key, n] : aer_) {
      const int gpu = gpu_index(key.first, true);
      frame.set(FieldId::kGpuPcieAerErrors, gpu, Labels{{"severity", key.second}}, static_cast<double>(n));
    }
    for (const auto& [key, n] : sxid_) {
      const auto& [bus, code, severity] = key;
      frame.set_node(FieldId::kNvswitchSxidErrors,
                     Labels{{"nvswitch", nvml_bus_id(bus)}, {"sxid", std::to_string(code)}, {"severity", severity}},
                     static_cast<double>(n));
    }
  }

  KmsgOptions options_;
  std::shared_ptr<XidLedger> ledger_;
  SeriesRegistry* registry_ = nullptr;
  int fd_ = -1;
  Mode mode_ = Mode::kFile;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t offset_ = 0;
  std::string pending_;   // a partial line
  bool skipping_ = false;  // inside a line longer than max_line_bytes
  uint64_t overruns_ = 0, long_lines_ = 0;
  std::set<std::string> seen_, lost_;
  std::map<std::string, int> own_;  // bus -> index of a GPU NVML does not list
  std::map<std::pair<std::string, std::string>, uint64_t> aer_;
  std::map<std::tuple<std::string, long long, std::string>, uint64_t> sxid_;
  char buf_[65536];
};

}  // namespace

std::unique_ptr<Source> make_kmsg_source(const SourceOptions& options) {
  return std::make_unique<KmsgSource>(options);
}

}  // namespace gpulens
