// Process identity cache; see process_cache.h.
#include "sources/nvml/process_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include "model/series.h"
#include "sources/kubelet/pod_directory.h"
#include "sources/nvml/cgroup.h"

namespace gpulens {
namespace {

// The pod name the kubelet wrote into the pod's hosts file: the last
// non-comment line is "<pod ip>\t<hostname>...", hostname = pod name unless
// the pod sets spec.hostname.
std::string pod_name_from_hosts(const std::string& text) {
  std::string name;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t a = line.find_first_of(" \t");
    if (a == std::string::npos) continue;
    size_t b = line.find_first_not_of(" \t", a);
    if (b == std::string::npos) continue;
    size_t e = line.find_first_of(" \t", b);
    std::string host = line.substr(b, e == std::string::npos ? std::string::npos : e - b);
    if (host != "localhost" && host.find("ip6-") != 0) name = host;
  }
  return name;
}

}  // namespace

bool read_small_file(const std::string& path, std::string& out) {
  out.clear();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n <= 0) break;
    out.append(chunk, static_cast<size_t>(n));
    if (out.size() > (1 << 20)) break;  // procfs files are small; never read unbounded
  }
  ::close(fd);
  return true;
}

const Labels& ProcessIdentity::affinity_for(int gpu) {
  for (const auto& [g, l] : affinity_labels) {
    if (g == gpu) return l;
  }
  Labels l{{"pid", std::to_string(pid)}, {"gpu", std::to_string(gpu)}, {"cpus", cpus}, {"numa_nodes", mems}};
  affinity_labels.emplace_back(gpu, std::move(l));
  return affinity_labels.back().second;
}

ProcessIdentity* ProcessCache::lookup(unsigned pid) {
  const std::string dir = proc_root_ + "/" + std::to_string(pid);
  if (!read_small_file(dir + "/stat", buf_)) return nullptr;
  auto start = parse_start_time(buf_);
  if (!start) return nullptr;
  auto it = entries_.find(pid);
  if (it != entries_.end() && it->second.start_time == *start) {
    it->second.seen = true;
    return &it->second;
  }
  ProcessIdentity& id = entries_[pid];
  id = ProcessIdentity{};
  id.pid = pid;
  id.start_time = *start;
  resolve(pid, id);
  return &id;
}

void ProcessCache::resolve(unsigned pid, ProcessIdentity& id) {
  ++resolutions_;
  const std::string dir = proc_root_ + "/" + std::to_string(pid);
  if (read_small_file(dir + "/cgroup", buf_)) {
    if (auto ref = parse_cgroup(buf_)) {
      id.pod = id.pod_uid = ref->pod_uid;
      id.container = ref->container_id.substr(0, 12);
      if (!ref->pod_uid.empty() && !kubelet_root_.empty()) {
        namespace fs = std::filesystem;
        const fs::path pod_dir = fs::path(kubelet_root_) / "pods" / ref->pod_uid;
        std::error_code ec;
        if (read_small_file((pod_dir / "etc-hosts").string(), buf_)) {
          if (auto name = pod_name_from_hosts(buf_); !name.empty()) id.pod = name;
        }
        for (const auto& vol : fs::directory_iterator(pod_dir / "volumes" / "kubernetes.io~projected", ec)) {
          if (read_small_file((vol.path() / "namespace").string(), buf_) && !buf_.empty()) {
            while (!buf_.empty() && (buf_.back() == '\n' || buf_.back() == ' ')) buf_.pop_back();
            id.namespace_ = buf_;
            break;
          }
        }
        std::vector<std::string> containers;
        for (const auto& c : fs::directory_iterator(pod_dir / "containers", ec)) {
          containers.push_back(c.path().filename().string());
        }
        if (containers.size() == 1) id.container = containers[0];
      }
    }
  }
  if (read_small_file(dir + "/status", buf_)) {
    if (auto aff = parse_proc_status(buf_)) {
      id.cpus = aff->cpus;
      id.mems = aff->mems;
    }
  }
  if (environ_) {
    switch (read_job_environ(dir + "/environ", id.job_env)) {
      case EnvironRead::kOk: break;
      case EnvironRead::kTruncated:
        if (notice_) notice_("a GPU process's environment is larger than 256 KiB: its job keys are read from the first 256 KiB only");
        break;
      case EnvironRead::kUnreadable:
        if (notice_) {
          notice_("cannot read a GPU process's environment (/proc/PID/environ of another user needs root or "
                  "CAP_SYS_PTRACE): its job and rank are absent");
        }
        break;
    }
  }
  id.labels = Labels{{"pid", std::to_string(pid)}, {"namespace", id.namespace_}, {"pod", id.pod},
                     {"container", id.container}};
}

void ProcessCache::name_from_kubelet(ProcessIdentity& id, const std::string& gpu_uuid, const PodDirectory& directory) {
  if (id.pod_uid.empty() || !id.namespace_.empty()) return;
  const uint64_t generation = directory.generation();
  if (generation == id.kubelet_generation) return;
  id.kubelet_generation = generation;
  auto owner = directory.sole_owner(gpu_uuid);
  if (!owner) return;
  id.namespace_ = owner->namespace_;
  id.pod = owner->pod;
  id.container = owner->container;
  id.labels.set("namespace", id.namespace_);
  id.labels.set("pod", id.pod);
  id.labels.set("container", id.container);
}

void ProcessCache::sweep() {
  std::erase_if(entries_, [](const auto& kv) { return !kv.second.seen; });
  for (auto& [pid, id] : entries_) id.seen = false;
}

}  // namespace gpulens
