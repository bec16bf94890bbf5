// FakeKubelet: a PodResources v1 server on a unix socket, for tests. It
// serves the service of api.proto through gRPC's own server, so the client
// under test speaks to a real gRPC stack (HTTP/2, HPACK, deadlines) as it
// would to the kubelet. Tests change the pods while it runs, switch off Get
// or GetAllocatableResources (older kubelets), or make every call hang.
//
//   FakeKubelet kubelet(dir + "/kubelet.sock");
//   kubelet.set_pods({{"train-0", "ml", {{"trainer", {{"nvidia.com/gpu", {"GPU-1"}}}}}}});
//   kubelet.set_hang(true);    // calls block until set_hang(false) or destruction
//
// Thread-safety: every member may be called while the server runs.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gpulens::testing {

struct FakeDevices {
  std::string resource;
  std::vector<std::string> ids;
};
struct FakeContainer {
  std::string name;
  std::vector<FakeDevices> devices;
};
struct FakePod {
  std::string name, namespace_;
  std::vector<FakeContainer> containers;
};

class FakeKubelet {
 public:
  explicit FakeKubelet(std::string socket_path);
  ~FakeKubelet();
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  bool running() const;
  void set_pods(std::vector<FakePod> pods);
  void set_allocatable(std::vector<FakeDevices> devices);
  void set_serves_get(bool on);          // off: Get answers UNIMPLEMENTED (kubelet < 1.27)
  void set_serves_allocatable(bool on);  // off: UNIMPLEMENTED (kubelet < 1.21)
  void set_hang(bool on);
  int calls() const;                     // RPCs received so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpulens::testing
