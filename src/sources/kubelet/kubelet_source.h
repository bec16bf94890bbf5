// The kubelet source: which Kubernetes pod, namespace and container hold
// which GPU (and MIG device), from the kubelet's PodResources v1 API.
//
// Every `refresh` it calls List (and GetAllocatableResources, where the
// kubelet has it) with a deadline of `timeout`, caches the answer, and in
// between every sample re-exports the cache: scrapes never wait for the
// kubelet. It exports
//   gpu_pod_info{resource,device,gpu_uuid,namespace,pod,container} 1
//   gpu_kubelet_allocatable_devices{resource} N
// and publishes the view to the PodDirectory, where the nvml source names
// the pods of GPU processes it found by cgroup (pod UID only).
//
// A missing socket, permission denied, a kubelet that does not answer: the
// sample fails with the reason (gpulens_source_up{source="kubelet"} 0) and
// every other source carries on. The last good view is kept for three
// refresh periods (a kubelet restart does not blank the pod names), then
// dropped rather than served stale.
//
//   auto src = make_kubelet_source(options);   // registered as "kubelet"
//
// Thread-safety: sample() on the source's own thread, as every source.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "sources/options.h"
#include "sources/source.h"

namespace gpulens {

class PodDirectory;

std::unique_ptr<Source> make_kubelet_source(const SourceOptions& options);
// For tests: a directory of their own, and a clock in milliseconds (default
// the steady clock) that decides when to refresh and when the view is stale.
std::unique_ptr<Source> make_kubelet_source(const KubeletOptions& options, PodDirectory& directory,
                                            std::function<int64_t()> clock = {});

}  // namespace gpulens
