// The XID ledger; see xid_ledger.h.
#include "model/xid_ledger.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "model/frame.h"
#include "model/xid.h"

namespace gpulens {
namespace {

// Parses up to `max` hex digits at s[i..]; -1 when there are none.
long hex_at(std::string_view s, size_t& i, size_t max) {
  long v = 0;
  size_t n = 0;
  while (i < s.size() && n < max && std::isxdigit(static_cast<unsigned char>(s[i]))) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    v = v * 16 + (c <= '9' ? c - '0' : c - 'a' + 10);
    ++i;
    ++n;
  }
  return n == 0 ? -1 : v;
}

}  // namespace

std::string canonical_bus_id(std::string_view s) {
  if (s.starts_with("PCI:")) s.remove_prefix(4);
  // Split on ':' into 2 or 3 parts: [domain:]bus:device[.function]
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == ':') {
      parts.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (parts.size() != 2 && parts.size() != 3) return "";
  long domain = 0;
  size_t k = 0;
  if (parts.size() == 3) {
    size_t i = 0;
    domain = hex_at(parts[0], i, 8);
    if (domain < 0 || i != parts[0].size() || domain > 0xffff) return "";
    k = 1;
  }
  size_t i = 0;
  const long bus = hex_at(parts[k], i, 2);
  if (bus < 0 || i != parts[k].size()) return "";
  std::string_view dev_fn = parts[k + 1];
  i = 0;
  const long dev = hex_at(dev_fn, i, 2);
  if (dev < 0 || dev > 0x1f) return "";
  if (i != dev_fn.size()) {
    // ".function" (0-7) and nothing else
    if (dev_fn[i] != '.' || i + 2 != dev_fn.size() || dev_fn[i + 1] < '0' || dev_fn[i + 1] > '7') return "";
  }
  char out[64];
  std::snprintf(out, sizeof out, "%04lx:%02lx:%02lx", domain, bus, dev);
  return out;
}

std::string_view xid_path_name(XidPath path) { return path == XidPath::kNvml ? "nvml" : "kernel_log"; }

namespace {
// The canonical form, else the text as given (a GPU whose bus id is unknown
// keys by a name of its own).
std::string key_of(std::string_view bus) {
  std::string c = canonical_bus_id(bus);
  return c.empty() ? std::string(bus) : c;
}
}  // namespace

bool XidLedger::record(std::string_view bus_in, long long code, double time, XidPath path, std::string_view message) {
  std::string bus = key_of(bus_in);
  std::lock_guard lock(mu_);
  const Key key{bus, code};
  const int self = static_cast<int>(path), other = 1 - self;
  // Forget what can no longer pair: older than the window before `time`.
  for (auto* q : {&unmatched_[self], &unmatched_[other]}) {
    auto it = q->find(key);
    if (it == q->end()) continue;
    while (!it->second.empty() && it->second.front() < time - window_) it->second.pop_front();
    if (it->second.empty()) q->erase(it);
  }
  Gpu& g = gpus_[bus];
  if (auto it = unmatched_[other].find(key); it != unmatched_[other].end()) {
    // Pairs with the oldest event of the other path within the window.
    for (auto t = it->second.begin(); t != it->second.end(); ++t) {
      if (std::fabs(*t - time) > window_) continue;
      it->second.erase(t);
      if (it->second.empty()) unmatched_[other].erase(it);
      if (g.last == code && g.last_message.empty() && !message.empty()) g.last_message = std::string(message);
      return false;
    }
  }
  ++g.counts[code];
  unmatched_[self][key].push_back(time);
  if (time >= g.last_time) {
    g.last = code;
    g.last_time = time;
    g.last_message = std::string(message);
    g.last_path = path;
  }
  return true;
}

std::optional<XidLedger::Gpu> XidLedger::get(std::string_view bus) const {
  const std::string key = key_of(bus);
  std::lock_guard lock(mu_);
  auto it = gpus_.find(key);
  if (it == gpus_.end() || it->second.counts.empty()) return std::nullopt;
  return it->second;
}

std::vector<std::string> XidLedger::buses() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [bus, g] : gpus_) {
    if (!g.counts.empty()) out.push_back(bus);
  }
  return out;
}

void XidLedger::claim(std::string_view bus) {
  std::lock_guard lock(mu_);
  claimed_.insert(key_of(bus));
}

bool XidLedger::claimed(std::string_view bus) const {
  const std::string key = key_of(bus);
  std::lock_guard lock(mu_);
  return claimed_.contains(key);
}

void XidLedger::fill(Frame& frame, int gpu, const Gpu& g) {
  if (g.counts.empty()) return;
  for (const auto& [code, n] : g.counts) {
    frame.set(FieldId::kGpuXidErrors, gpu, Labels{{"xid", std::to_string(code)}}, static_cast<double>(n));
  }
  frame.set(FieldId::kGpuLastXid, gpu, static_cast<double>(g.last));
  frame.set(FieldId::kGpuLastXidTime, gpu, g.last_time);
  const std::string_view text = g.last_message.empty() ? xid_message(g.last) : std::string_view(g.last_message);
  frame.set(FieldId::kGpuLastXidInfo, gpu,
            Labels{{"xid", std::to_string(g.last)}, {"message", text.substr(0, 256)}, {"path", xid_path_name(g.last_path)}},
            1);
}

}  // namespace gpulens
