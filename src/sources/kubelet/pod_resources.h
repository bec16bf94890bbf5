// PodResourcesClient: the kubelet's PodResources v1 API over its unix socket
// (plaintext gRPC, as the kubelet serves it; access is the socket's file
// permissions), reduced to what gpulens needs: which container holds which
// device.
//
// Every call has a deadline, so a kubelet that accepts the connection and
// never answers costs at most `timeout`, and fails with a message naming the
// socket. A missing socket, a socket we may not open and an API the kubelet
// lacks (Get before 1.27, or with its feature gate off) are distinct errors.
//
//   PodResourcesClient kubelet("/var/lib/kubelet/pod-resources/kubelet.sock");
//   Result<std::vector<DeviceOwner>> owners = kubelet.list(std::chrono::seconds(2));
//   // owners: every (resource, device, namespace, pod, container), GPU resources only
//
// Thread-safety: one client per thread (the source's); gRPC's channel itself
// is thread-safe. The channel reconnects by itself after a kubelet restart.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "sources/kubelet/pod_directory.h"
#include "util/status.h"

namespace gpulens {

struct AllocatableDevices {
  std::string resource;
  size_t count = 0;
};

class PodResourcesClient {
 public:
  explicit PodResourcesClient(std::string socket_path);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // List: every container's GPU devices (non-GPU resources are left out).
  Result<std::vector<DeviceOwner>> list(std::chrono::milliseconds timeout);
  // GetAllocatableResources: GPU devices per resource the node can hand out.
  // kUnsupported from a kubelet older than 1.21.
  Result<std::vector<AllocatableDevices>> allocatable(std::chrono::milliseconds timeout);
  // Get: one pod's GPU devices. kUnsupported where the kubelet lacks it.
  Result<std::vector<DeviceOwner>> get(const std::string& pod_namespace, const std::string& pod_name,
                                       std::chrono::milliseconds timeout);

  const std::string& socket_path() const { return socket_; }

 private:
  struct Impl;
  Status precheck() const;
  Impl& impl();

  std::string socket_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulens
