// PID -> container and Kubernetes pod, from the text of /proc/PID/cgroup,
// plus the other small procfs parses the process attribution needs.
//
// parse_cgroup() is pure: it takes the file's text and finds the pod UID and
// the container ID in any of the layouts the kubelet and the runtimes write:
// cgroup v1 (one line per hierarchy), v2 ("0::/path") and hybrids; the
// systemd driver (kubepods-burstable-pod<uid_with_underscores>.slice,
// cri-containerd-<id>.scope, crio-<id>.scope, docker-<id>.scope) and the
// cgroupfs driver (/kubepods/burstable/pod<uid>/<id>); paths relative to a
// private cgroup namespace ("/../../kubepods..."); and plain docker or
// systemd services outside Kubernetes (container only, or nothing).
//
//   auto ref = parse_cgroup("0::/kubepods.slice/.../cri-containerd-3f2a....scope\n");
//   ref->pod_uid == "1234abcd-...";  ref->container_id == "3f2a..."; ref->runtime == "containerd"
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpulens {

struct CgroupRef {
  std::string pod_uid;       // with dashes; empty outside Kubernetes
  std::string container_id;  // 64 hex digits; empty for a host process
  std::string runtime;       // containerd, crio, docker, or empty when unknown
};

// Empty optional when the process is in no container and no pod.
std::optional<CgroupRef> parse_cgroup(std::string_view text);

// CPUs and NUMA nodes a process may run on, from /proc/PID/status
// (Cpus_allowed_list, Mems_allowed_list), kept in the kernel's list syntax.
struct ProcAffinity {
  std::string cpus;  // "0-31,64-95"
  std::string mems;  // "0"
};
std::optional<ProcAffinity> parse_proc_status(std::string_view text);

// Start time (field 22 of /proc/PID/stat, clock ticks since boot): with the
// PID it identifies a process across PID reuse.
std::optional<uint64_t> parse_start_time(std::string_view stat);

// "0-3,8" for the set bits of a CPU or NUMA-node mask (64 bits per word).
std::string mask_to_list(const unsigned long* words, size_t count);

}  // namespace gpulens
