// ProcessCache: who a GPU process is -- pid, Kubernetes namespace, pod and
// container, and the CPUs / NUMA nodes it may run on -- resolved once per
// process and kept for as long as the process lives.
//
// A process is keyed by (pid, start time): each lookup reads the small
// /proc/PID/stat to notice PID reuse, and only a new (pid, start time)
// reads /proc/PID/cgroup, /proc/PID/status, the kubelet's pod directory and,
// when asked, the job keys of /proc/PID/environ (job_env.h).
// Names come from the kubelet's own files when readable
// (<kubelet_root>/pods/<uid>/etc-hosts for the pod name, the projected
// service-account volume's `namespace` file, the single directory under
// containers/); otherwise `pod` holds the pod UID and `container` the short
// container ID, and `namespace` stays empty -- until the kubelet source's
// PodDirectory says which one container holds the process's GPU: then
// name_from_kubelet() gives the process that container's namespace, pod and
// container names (a GPU shared by several containers stays unnamed: which
// of them a PID belongs to is not in PodResources).
//
//   ProcessCache cache("/proc", "/var/lib/kubelet");
//   const ProcessIdentity* p = cache.lookup(4242);   // null: process gone
//   frame.set(FieldId::kGpuProcessMemoryUsed, gpu, p->labels, bytes);
//   cache.sweep();                                   // end of collection
//
// Thread-safety: not thread-safe; owned by the collecting thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "model/labels.h"
#include "sources/nvml/job_env.h"

namespace gpulens {

class PodDirectory;

struct ProcessIdentity {
  unsigned pid = 0;
  uint64_t start_time = 0;
  std::string namespace_, pod, container;
  std::string pod_uid;                // from the cgroup; empty outside a pod
  uint64_t kubelet_generation = 0;    // PodDirectory generation last consulted
  Labels labels;  // pid, namespace, pod, container
  std::string cpus, mems;  // allowed CPUs / NUMA nodes, kernel list syntax
  // Labels of the affinity info series, one per GPU the process uses.
  std::vector<std::pair<int, Labels>> affinity_labels;
  JobEnv job_env;  // the job keys of its environment; empty when not read
  bool seen = true;

  const Labels& affinity_for(int gpu);
};

class ProcessCache {
 public:
  ProcessCache(std::string proc_root, std::string kubelet_root)
      : proc_root_(std::move(proc_root)), kubelet_root_(std::move(kubelet_root)) {}
  // Also read the job keys of each new process's environment; `notice` is
  // told (the same words each time) when one cannot be read or is cut.
  void read_environ(std::function<void(const std::string&)> notice) {
    environ_ = true;
    notice_ = std::move(notice);
  }

  // Null when /proc/PID is gone or unreadable (the process is then still
  // reported, with only its pid: see processes.cpp).
  ProcessIdentity* lookup(unsigned pid);
  // Names a pod process left unnamed from the kubelet's device directory
  // (see above); a no-op once named or while the directory is unchanged.
  void name_from_kubelet(ProcessIdentity& id, const std::string& gpu_uuid, const PodDirectory& directory);
  // Forgets processes not looked up since the previous sweep.
  void sweep();
  size_t size() const { return entries_.size(); }
  // Full resolutions so far (cgroup/status reads); tests check the cache.
  uint64_t resolutions() const { return resolutions_; }

 private:
  void resolve(unsigned pid, ProcessIdentity& id);

  std::string proc_root_, kubelet_root_;
  bool environ_ = false;
  std::function<void(const std::string&)> notice_;
  std::unordered_map<unsigned, ProcessIdentity> entries_;
  std::string buf_;  // reused read buffer
  uint64_t resolutions_ = 0;
};

// Reads a whole small file into `out`; false when it cannot be opened.
bool read_small_file(const std::string& path, std::string& out);

}  // namespace gpulens
