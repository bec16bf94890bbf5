// PodDirectory: which Kubernetes container holds which GPU or MIG device,
// as the kubelet last said (PodResources List), shared by the kubelet source
// (the writer) and the nvml source (which names the pods of GPU processes).
//
// Device ids are kept the way the kubelet reports them, after one
// normalisation (device_key): a time-slicing or MPS replica "<id>::<n>"
// counts as its device <id>. A device held by several containers (shared
// GPUs) has several owners and no sole owner.
//
//   PodDirectory& dir = pod_directory();
//   dir.replace({{.resource = "nvidia.com/gpu", .device = "GPU-8b22...", .namespace_ = "ml",
//                 .pod = "train-0", .container = "trainer"}});
//   if (auto o = dir.sole_owner("GPU-8b22...")) use(o->pod);
//
// Thread-safety: every member takes the directory's lock; results are copies.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpulens {

struct DeviceOwner {
  std::string resource;   // nvidia.com/gpu, nvidia.com/mig-1g.10gb, ...
  std::string device;     // device_key() of the kubelet's device id
  std::string namespace_, pod, container;

  bool same_container(const DeviceOwner& o) const {
    return namespace_ == o.namespace_ && pod == o.pod && container == o.container;
  }
};

// "GPU-x::3" -> "GPU-x"; every other id unchanged.
std::string device_key(std::string_view device_id);
// True for the resources NVIDIA's device plugin and GKE's advertise:
// nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-<profile>.
bool is_gpu_resource(std::string_view resource);

class PodDirectory {
 public:
  // The kubelet's whole current view; replaces the previous one.
  void replace(std::vector<DeviceOwner> owners);
  void clear();
  std::vector<DeviceOwner> owners_of(std::string_view device) const;
  // The one container holding the device; none when free or shared.
  std::optional<DeviceOwner> sole_owner(std::string_view device) const;
  std::vector<DeviceOwner> all() const;
  // The training job of each pod ("namespace/pod" -> "namespace/<owner>"),
  // from its owner labels (pod_owners.h); replaces the previous map. Empty:
  // none known (off, or the API server did not answer).
  void replace_pod_jobs(std::map<std::string, std::string> jobs);
  // The job of a pod; "" when none is known.
  std::string pod_job(std::string_view namespace_, std::string_view pod) const;
  // Bumped by every replace()/clear() and by a changed job map: readers
  // cache against it.
  uint64_t generation() const;

 private:
  mutable std::mutex mu_;
  std::vector<DeviceOwner> owners_;  // sorted by device
  std::map<std::string, std::string> pod_jobs_;
  uint64_t generation_ = 0;
};

// The agent's one directory.
PodDirectory& pod_directory();

}  // namespace gpulens
