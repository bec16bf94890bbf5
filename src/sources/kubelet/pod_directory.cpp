// Device -> container directory; see pod_directory.h.
#include "sources/kubelet/pod_directory.h"

#include <algorithm>
#include <tuple>

namespace gpulens {

std::string device_key(std::string_view id) {
  const size_t sep = id.find("::");
  return std::string(sep == std::string_view::npos ? id : id.substr(0, sep));
}

bool is_gpu_resource(std::string_view r) {
  return r == "nvidia.com/gpu" || r.starts_with("nvidia.com/gpu.") || r.starts_with("nvidia.com/mig-");
}

void PodDirectory::replace(std::vector<DeviceOwner> owners) {
  std::sort(owners.begin(), owners.end(), [](const DeviceOwner& a, const DeviceOwner& b) {
    return std::tie(a.device, a.namespace_, a.pod, a.container) < std::tie(b.device, b.namespace_, b.pod, b.container);
  });
  // One replica per container is enough: "GPU-x::1" and "GPU-x::2" in one
  // container are one owner of GPU-x.
  owners.erase(std::unique(owners.begin(), owners.end(),
                           [](const DeviceOwner& a, const DeviceOwner& b) {
                             return a.device == b.device && a.same_container(b);
                           }),
               owners.end());
  std::lock_guard lock(mu_);
  owners_ = std::move(owners);
  ++generation_;
}

void PodDirectory::clear() {
  std::lock_guard lock(mu_);
  owners_.clear();
  ++generation_;
}

std::vector<DeviceOwner> PodDirectory::owners_of(std::string_view device) const {
  std::lock_guard lock(mu_);
  auto lo = std::lower_bound(owners_.begin(), owners_.end(), device,
                             [](const DeviceOwner& o, std::string_view d) { return o.device < d; });
  std::vector<DeviceOwner> out;
  for (; lo != owners_.end() && lo->device == device; ++lo) out.push_back(*lo);
  return out;
}

std::optional<DeviceOwner> PodDirectory::sole_owner(std::string_view device) const {
  auto owners = owners_of(device);
  if (owners.size() != 1) return std::nullopt;
  return owners.front();
}

std::vector<DeviceOwner> PodDirectory::all() const {
  std::lock_guard lock(mu_);
  return owners_;
}

void PodDirectory::replace_pod_jobs(std::map<std::string, std::string> jobs) {
  std::lock_guard lock(mu_);
  if (jobs == pod_jobs_) return;
  pod_jobs_ = std::move(jobs);
  ++generation_;
}

std::string PodDirectory::pod_job(std::string_view namespace_, std::string_view pod) const {
  std::string key;
  key.reserve(namespace_.size() + 1 + pod.size());
  key.append(namespace_).append("/").append(pod);
  std::lock_guard lock(mu_);
  auto it = pod_jobs_.find(key);
  return it == pod_jobs_.end() ? std::string() : it->second;
}

uint64_t PodDirectory::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

PodDirectory& pod_directory() {
  static PodDirectory dir;
  return dir;
}

}  // namespace gpulens
