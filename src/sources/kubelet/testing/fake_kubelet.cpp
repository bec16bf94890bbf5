// The fake kubelet's gRPC service; see fake_kubelet.h.
#include "sources/kubelet/testing/fake_kubelet.h"

#include <condition_variable>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "api.grpc.pb.h"

namespace gpulens::testing {
namespace {

void fill(const FakePod& p, v1::PodResources& out) {
  out.set_name(p.name);
  out.set_namespace_(p.namespace_);
  for (const auto& c : p.containers) {
    auto* cr = out.add_containers();
    cr->set_name(c.name);
    cr->add_cpu_ids(3);  // fields gpulens ignores are present, as on a real node
    for (const auto& d : c.devices) {
      auto* cd = cr->add_devices();
      cd->set_resource_name(d.resource);
      for (const auto& id : d.ids) cd->add_device_ids(id);
      cd->mutable_topology()->add_nodes()->set_id(0);
    }
  }
}

}  // namespace

struct FakeKubelet::Impl final : v1::PodResourcesLister::Service {
  mutable std::mutex mu;
  std::condition_variable cv;
  std::vector<FakePod> pods;
  std::vector<FakeDevices> allocatable;
  bool serves_get = true, serves_allocatable = true, hang = false, stopping = false;
  std::atomic<int> calls{0};
  std::unique_ptr<grpc::Server> server;

  // Blocks while hanging; false when the server is going away.
  bool enter(std::unique_lock<std::mutex>& lock) {
    ++calls;
    cv.wait(lock, [&] { return !hang || stopping; });
    return !stopping;
  }

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    std::unique_lock lock(mu);
    if (!enter(lock)) return {grpc::StatusCode::UNAVAILABLE, "shutting down"};
    for (const auto& p : pods) fill(p, *resp->add_pod_resources());
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* resp) override {
    std::unique_lock lock(mu);
    if (!enter(lock)) return {grpc::StatusCode::UNAVAILABLE, "shutting down"};
    if (!serves_allocatable) return {grpc::StatusCode::UNIMPLEMENTED, "unknown method GetAllocatableResources"};
    for (const auto& d : allocatable) {
      auto* cd = resp->add_devices();
      cd->set_resource_name(d.resource);
      for (const auto& id : d.ids) cd->add_device_ids(id);
    }
    resp->add_cpu_ids(0);
    return grpc::Status::OK;
  }

  grpc::Status Get(grpc::ServerContext*, const v1::GetPodResourcesRequest* req,
                   v1::GetPodResourcesResponse* resp) override {
    std::unique_lock lock(mu);
    if (!enter(lock)) return {grpc::StatusCode::UNAVAILABLE, "shutting down"};
    if (!serves_get) return {grpc::StatusCode::UNIMPLEMENTED, "unknown method Get"};
    for (const auto& p : pods) {
      if (p.name == req->pod_name() && p.namespace_ == req->pod_namespace()) {
        fill(p, *resp->mutable_pod_resources());
        return grpc::Status::OK;
      }
    }
    return {grpc::StatusCode::NOT_FOUND, "pod " + req->pod_namespace() + "/" + req->pod_name() + " not found"};
  }
};

FakeKubelet::FakeKubelet(std::string socket_path) : impl_(std::make_unique<Impl>()) {
  grpc::ServerBuilder b;
  b.AddListeningPort("unix:" + socket_path, grpc::InsecureServerCredentials());
  b.RegisterService(impl_.get());
  impl_->server = b.BuildAndStart();
}

FakeKubelet::~FakeKubelet() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->server) impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

bool FakeKubelet::running() const { return impl_->server != nullptr; }

void FakeKubelet::set_pods(std::vector<FakePod> pods) {
  std::lock_guard lock(impl_->mu);
  impl_->pods = std::move(pods);
}

void FakeKubelet::set_allocatable(std::vector<FakeDevices> devices) {
  std::lock_guard lock(impl_->mu);
  impl_->allocatable = std::move(devices);
}

void FakeKubelet::set_serves_get(bool on) {
  std::lock_guard lock(impl_->mu);
  impl_->serves_get = on;
}

void FakeKubelet::set_serves_allocatable(bool on) {
  std::lock_guard lock(impl_->mu);
  impl_->serves_allocatable = on;
}

void FakeKubelet::set_hang(bool on) {
  {
    std::lock_guard lock(impl_->mu);
    impl_->hang = on;
  }
  impl_->cv.notify_all();
}

int FakeKubelet::calls() const { return impl_->calls.load(); }

}  // namespace gpulens::testing
