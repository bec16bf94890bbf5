// PodResources v1 client over the kubelet's unix socket; see pod_resources.h.
//
// Debian's gRPC C++ (grpc++_unsecure: plaintext only, the kubelet socket has
// no TLS) with the stubs generated from api.proto. Chosen over a hand-made
// HTTP/2 client because the kubelet's responses use HPACK with Huffman-coded
// headers and flow control; gRPC's own stack gets those right, and its cost
// (10 MB more shared libraries for the binary) is measured in docs/PERFORMANCE.md.
#include "sources/kubelet/pod_resources.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <set>

#include <grpcpp/grpcpp.h>

#include "api.grpc.pb.h"

namespace gpulens {
namespace {

std::string ms_text(std::chrono::milliseconds t) {
  return t.count() % 1000 == 0 ? std::to_string(t.count() / 1000) + "s" : std::to_string(t.count()) + "ms";
}

void append_owners(const v1::PodResources& pod, std::vector<DeviceOwner>& out) {
  for (const auto& c : pod.containers()) {
    for (const auto& d : c.devices()) {
      if (!is_gpu_resource(d.resource_name())) continue;
      for (const auto& id : d.device_ids()) {
        out.push_back({d.resource_name(), device_key(id), pod.namespace_(), pod.name(), c.name()});
      }
    }
  }
}

}  // namespace

struct PodResourcesClient::Impl {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;

  explicit Impl(const std::string& socket) {
    grpc::ChannelArguments args;
    // Bounded answers: a node holds ~110 pods; 8 MiB is far above that.
    args.SetMaxReceiveMessageSize(8 << 20);
    // Reconnect quickly after a kubelet restart rather than backing off for minutes.
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
    channel = grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
    stub = v1::PodResourcesLister::NewStub(channel);
  }

  static void set_deadline(grpc::ClientContext& ctx, std::chrono::milliseconds timeout) {
    ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  }
};

PodResourcesClient::PodResourcesClient(std::string socket_path) : socket_(std::move(socket_path)) {}

PodResourcesClient::~PodResourcesClient() = default;

// The two failures a user fixes in the manifest, told apart before gRPC
// turns both into "connection failed".
Status PodResourcesClient::precheck() const {
  struct stat st {};
  if (::stat(socket_.c_str(), &st) != 0) {
    if (errno == EACCES) {
      return {Code::kPermission, "kubelet socket " + socket_ + ": permission denied on its directory"};
    }
    return not_found("kubelet socket " + socket_ + " does not exist (mount /var/lib/kubelet/pod-resources)");
  }
  if (!S_ISSOCK(st.st_mode)) return invalid_argument("kubelet socket " + socket_ + " is not a socket");
  if (::access(socket_.c_str(), R_OK | W_OK) != 0) {
    return {Code::kPermission, "kubelet socket " + socket_ + ": " + std::strerror(errno) +
                                   " (the agent must run as the socket's owner, usually root)"};
  }
  return Status::ok();
}

// The channel is made on the first call that passes the precheck.
PodResourcesClient::Impl& PodResourcesClient::impl() {
  if (!impl_) impl_ = std::make_unique<Impl>(socket_);
  return *impl_;
}

namespace {

Status from_grpc(const grpc::Status& s, const std::string& socket, const char* method,
                 std::chrono::milliseconds timeout) {
  const std::string who = "kubelet " + socket + " " + method;
  switch (s.error_code()) {
    case grpc::StatusCode::OK: return Status::ok();
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return {Code::kDeadline, who + ": no answer within " + ms_text(timeout)};
    case grpc::StatusCode::UNIMPLEMENTED:
      return not_supported(who + ": not served by this kubelet (" + s.error_message() + ")");
    case grpc::StatusCode::UNAVAILABLE:
      return unavailable(who + ": unavailable (" + s.error_message() + ")");
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return unavailable(who + ": rejected (" + s.error_message() + ")");
    case grpc::StatusCode::PERMISSION_DENIED:
      return {Code::kPermission, who + ": permission denied (" + s.error_message() + ")"};
    default:
      return internal_error(who + ": gRPC error " + std::to_string(static_cast<int>(s.error_code())) + " (" +
                            s.error_message() + ")");
  }
}

}  // namespace

Result<std::vector<DeviceOwner>> PodResourcesClient::list(std::chrono::milliseconds timeout) {
  if (Status s = precheck(); !s) return s;
  grpc::ClientContext ctx;
  Impl::set_deadline(ctx, timeout);
  v1::ListPodResourcesRequest req;
  v1::ListPodResourcesResponse resp;
  if (Status s = from_grpc(impl().stub->List(&ctx, req, &resp), socket_, "List", timeout); !s) return s;
  std::vector<DeviceOwner> out;
  for (const auto& pod : resp.pod_resources()) append_owners(pod, out);
  return out;
}

Result<std::vector<AllocatableDevices>> PodResourcesClient::allocatable(std::chrono::milliseconds timeout) {
  if (Status s = precheck(); !s) return s;
  grpc::ClientContext ctx;
  Impl::set_deadline(ctx, timeout);
  v1::AllocatableResourcesRequest req;
  v1::AllocatableResourcesResponse resp;
  if (Status s = from_grpc(impl().stub->GetAllocatableResources(&ctx, req, &resp), socket_,
                           "GetAllocatableResources", timeout);
      !s) {
    return s;
  }
  std::map<std::string, std::set<std::string>> by_resource;
  for (const auto& d : resp.devices()) {
    if (!is_gpu_resource(d.resource_name())) continue;
    for (const auto& id : d.device_ids()) by_resource[d.resource_name()].insert(device_key(id));
  }
  std::vector<AllocatableDevices> out;
  for (const auto& [r, ids] : by_resource) out.push_back({r, ids.size()});
  return out;
}

Result<std::vector<DeviceOwner>> PodResourcesClient::get(const std::string& pod_namespace, const std::string& pod_name,
                                                         std::chrono::milliseconds timeout) {
  if (Status s = precheck(); !s) return s;
  grpc::ClientContext ctx;
  Impl::set_deadline(ctx, timeout);
  v1::GetPodResourcesRequest req;
  req.set_pod_name(pod_name);
  req.set_pod_namespace(pod_namespace);
  v1::GetPodResourcesResponse resp;
  if (Status s = from_grpc(impl().stub->Get(&ctx, req, &resp), socket_, "Get", timeout); !s) return s;
  std::vector<DeviceOwner> out;
  append_owners(resp.pod_resources(), out);
  return out;
}

}  // namespace gpulens
