// procfs parses for process attribution; see cgroup.h.
#include "sources/nvml/cgroup.h"

#include <charconv>
#include <vector>

namespace gpulens {
namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// "pod" followed by a UID in 8-4-4-4-12 form with '-' or '_' separators.
std::string find_pod_uid(std::string_view path) {
  static constexpr int kGroups[] = {8, 4, 4, 4, 12};
  for (size_t at = path.find("pod"); at != std::string_view::npos; at = path.find("pod", at + 1)) {
    size_t i = at + 3;
    std::string uid;
    bool ok = true;
    for (int g = 0; g < 5 && ok; ++g) {
      for (int k = 0; k < kGroups[g]; ++k, ++i) {
        if (i >= path.size() || !is_hex(path[i])) {
          ok = false;
          break;
        }
        uid += path[i];
      }
      if (!ok || g == 4) break;
      if (i >= path.size() || (path[i] != '-' && path[i] != '_')) {
        ok = false;
        break;
      }
      uid += '-';
      ++i;
    }
    if (ok && (i == path.size() || !is_hex(path[i]))) return uid;
  }
  return {};
}

// The last run of exactly 64 hex digits, and the runtime named before it.
void find_container(std::string_view path, CgroupRef& ref) {
  size_t end = path.size();
  while (end > 0) {
    size_t stop = end;
    while (stop > 0 && !is_hex(path[stop - 1])) --stop;
    size_t start = stop;
    while (start > 0 && is_hex(path[start - 1])) --start;
    if (stop - start == 64) {
      ref.container_id = std::string(path.substr(start, 64));
      std::string_view before = path.substr(0, start);
      if (before.ends_with("cri-containerd-") || before.ends_with("cri-containerd:")) ref.runtime = "containerd";
      else if (before.ends_with("crio-") || before.ends_with("crio:")) ref.runtime = "crio";
      else if (before.ends_with("docker-") || before.ends_with("docker/") || before.ends_with("docker:"))
        ref.runtime = "docker";
      return;
    }
    end = start;
  }
}

}  // namespace

std::optional<CgroupRef> parse_cgroup(std::string_view text) {
  std::optional<CgroupRef> best;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    // hierarchy-ID:controllers:path -- the path itself may contain ':'.
    size_t c1 = line.find(':');
    size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::string_view path = line.substr(c2 + 1);
    CgroupRef ref;
    ref.pod_uid = find_pod_uid(path);
    find_container(path, ref);
    if (ref.pod_uid.empty() && ref.container_id.empty()) continue;
    // Hybrid hierarchies can disagree: prefer a line that names the pod,
    // then one that names the container too.
    auto score = [](const CgroupRef& r) { return (r.pod_uid.empty() ? 0 : 2) + (r.container_id.empty() ? 0 : 1); };
    if (!best || score(ref) > score(*best)) best = std::move(ref);
  }
  return best;
}

std::optional<ProcAffinity> parse_proc_status(std::string_view text) {
  ProcAffinity a;
  bool cpus = false, mems = false;
  auto value = [](std::string_view line, std::string_view key, std::string& out) {
    if (!line.starts_with(key)) return false;
    line.remove_prefix(key.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
    out = std::string(line);
    return true;
  };
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    cpus |= value(line, "Cpus_allowed_list:", a.cpus);
    mems |= value(line, "Mems_allowed_list:", a.mems);
  }
  if (!cpus) return std::nullopt;
  return a;
}

std::optional<uint64_t> parse_start_time(std::string_view stat) {
  // The command (field 2) is in parentheses and may contain spaces and ')'.
  size_t close = stat.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(close + 1);
  // rest starts at field 3; field 22 is the 20th token after it.
  int field = 2;
  size_t i = 0;
  while (i < rest.size()) {
    while (i < rest.size() && rest[i] == ' ') ++i;
    size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\n') ++j;
    if (j == i) break;
    if (++field == 22) {
      uint64_t v = 0;
      auto [p, ec] = std::from_chars(rest.data() + i, rest.data() + j, v);
      if (ec != std::errc() || p != rest.data() + j) return std::nullopt;
      return v;
    }
    i = j;
  }
  return std::nullopt;
}

std::string mask_to_list(const unsigned long* words, size_t count) {
  std::string out;
  const size_t bits = count * 64;
  auto set = [&](size_t b) { return ((words[b / 64] >> (b % 64)) & 1UL) != 0; };
  for (size_t b = 0; b < bits;) {
    if (!set(b)) {
      ++b;
      continue;
    }
    size_t e = b;
    while (e + 1 < bits && set(e + 1)) ++e;
    if (!out.empty()) out += ',';
    out += std::to_string(b);
    if (e > b) out += '-' + std::to_string(e);
    b = e + 1;
  }
  return out;
}

}  // namespace gpulens
