// Host line and process table of `gpulens snapshot`; see snapshot_processes.h.
#include "cli/snapshot_processes.h"

#include <pwd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

#include "model/series.h"
#include "top/service_lines.h"

namespace gpulens::cli {
namespace {

constexpr size_t kCommandWidth = 60;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in ? std::string(std::istreambuf_iterator<char>(in), {}) : std::string();
}

std::string or_dash(std::string_view s) { return s.empty() ? "-" : std::string(s); }

std::string bytes_text(double b) {
  char buf[32];
  if (b >= double(1ULL << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", b / double(1ULL << 30));
  else std::snprintf(buf, sizeof buf, "%.0f MiB", b / double(1ULL << 20));
  return buf;
}

struct ProcessRow {
  std::string gpu, gi, ci, pid, pod;
  double mem = -1, sm = -1;
};

}  // namespace

ProcessInfo read_process_info(const std::string& proc_root, unsigned pid) {
  ProcessInfo info;
  if (proc_root.empty()) return info;
  const std::string dir = proc_root + "/" + std::to_string(pid);
  std::istringstream status(read_file(dir + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("Uid:")) continue;
    unsigned long uid = 0;
    if (std::sscanf(line.c_str() + 4, "%lu", &uid) != 1) break;
    info.user = std::to_string(uid);
    passwd pw{}, *found = nullptr;
    char buf[1024];
    if (getpwuid_r(static_cast<uid_t>(uid), &pw, buf, sizeof buf, &found) == 0 && found != nullptr) info.user = pw.pw_name;
    break;
  }
  std::string cmd = read_file(dir + "/cmdline");
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd) {
    if (c == '\0' || c == '\n' || c == '\t') c = ' ';
  }
  if (cmd.empty()) {
    std::string comm = read_file(dir + "/comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    if (!comm.empty()) cmd = "[" + comm + "]";  // a kernel thread or a zombie: no cmdline
  }
  if (cmd.size() > kCommandWidth) cmd = cmd.substr(0, kCommandWidth - 3) + "...";
  if (!cmd.empty()) info.command = cmd;
  return info;
}

void print_snapshot_header(const SnapshotValues& values, std::ostream& out) {
  const std::string_view host = values.host, driver = values.driver, cuda = values.cuda, time = values.time;
  std::string when = "-";
  if (!time.empty()) {
    const std::time_t t = static_cast<std::time_t>(std::strtoll(std::string(time).c_str(), nullptr, 10));
    std::tm tm{};
    char buf[32];
    if (gmtime_r(&t, &tm) != nullptr && std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm) > 0) when = buf;
  }
  out << "host " << or_dash(host) << "   driver " << or_dash(driver) << "   CUDA " << or_dash(cuda) << "   " << when
      << "\n";
}

void print_snapshot_processes(const SnapshotValues& values, const std::string& proc_root, std::ostream& out) {
  const std::string root = values.simulated ? std::string() : proc_root;  // simulated pids are no one's
  std::vector<ProcessRow> rows;
  bool mig = false;
  for (const SnapshotGpu& g : values.gpus) {
    const std::string& index = g.index;
    // The SM share of a process has the same labels as its memory.
    std::map<Labels, double> sm;
    for (const top::NodeSeries& s : g.series) {
      if (s.name == "gpu_process_sm_util_ratio") sm.emplace(s.labels, s.value);
    }
    for (const top::NodeSeries& s : g.series) {
      if (s.name != "gpu_process_memory_used_bytes") continue;
      const Labels& l = s.labels;
      ProcessRow r;
      r.gpu = index;
      r.pid = l.get("pid");
      r.gi = l.get("gpu_instance_id");
      r.ci = l.get("compute_instance_id");
      mig |= !r.gi.empty();
      const std::string ns(l.get("namespace")), pod(l.get("pod")), container(l.get("container"));
      if (!pod.empty()) r.pod = (ns.empty() ? "" : ns + "/") + pod + (container.empty() ? "" : "/" + container);
      r.mem = s.value;
      if (auto it = sm.find(l); it != sm.end()) r.sm = it->second;
      rows.push_back(std::move(r));
    }
  }
  if (rows.empty()) {
    out << "PROCESSES: the driver lists none on any GPU\n";
    return;
  }
  char line[512];
  out << "PROCESSES\n";
  std::snprintf(line, sizeof line, "%-4s%s %-8s %-12s %9s %4s  %-32s %s\n", "GPU", mig ? " GI  CI " : "", "PID", "USER",
                "MEMORY", "SM", "NAMESPACE/POD/CONTAINER", "COMMAND");
  out << line;
  for (const ProcessRow& r : rows) {
    const ProcessInfo info = read_process_info(root, static_cast<unsigned>(std::strtoul(r.pid.c_str(), nullptr, 10)));
    char sm[16] = "  -";
    if (r.sm >= 0) std::snprintf(sm, sizeof sm, "%3.0f%%", r.sm * 100);
    char inst[16] = "";
    if (mig) std::snprintf(inst, sizeof inst, " %-3s %-3s", or_dash(r.gi).c_str(), or_dash(r.ci).c_str());
    std::snprintf(line, sizeof line, "%-4s%s %-8s %-12s %9s %4s  %-32s %s\n", r.gpu.c_str(), inst, r.pid.c_str(),
                  info.user.c_str(), bytes_text(r.mem).c_str(), sm, or_dash(r.pod).c_str(), info.command.c_str());
    out << line;
  }
}

}  // namespace gpulens::cli
