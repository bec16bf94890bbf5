// The kubelet source; see kubelet_source.h.
#include "sources/kubelet/kubelet_source.h"

#include <chrono>
#include <cstdlib>
#include <optional>

#include "sources/kubelet/pod_directory.h"
#include "sources/kubelet/pod_owners.h"
#include "sources/kubelet/pod_resources.h"
#include "util/log.h"

namespace gpulens {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The GPU UUID a device id names: itself for "GPU-…", the registered GPU for
// GKE's "nvidia<N>"; unknown ("") for MIG devices, whose parent only NVML knows.
std::string gpu_uuid_of(const std::string& device, const SeriesRegistry& reg) {
  if (device.starts_with("GPU-")) return device;
  if (device.starts_with("nvidia") && device.size() > 6 && device.find('/') == std::string::npos) {
    int index = 0;
    for (size_t i = 6; i < device.size(); ++i) {
      if (device[i] < '0' || device[i] > '9') return "";
      index = index * 10 + (device[i] - '0');
      if (index > 4096) return "";
    }
    if (const GpuIdentity* g = reg.gpu(index)) return g->uuid;
  }
  return "";
}

class KubeletSource final : public Source {
 public:
  KubeletSource(const KubeletOptions& o, PodDirectory& dir, std::function<int64_t()> clock)
      : options_(o), directory_(dir), client_(o.socket), clock_(clock ? std::move(clock) : steady_ms) {}

  std::string_view name() const override { return "kubelet"; }

  // The kubelet may come up after the agent: a missing socket is a failing
  // sample, not a source that is "not applicable".
  Status open(SeriesRegistry&) override { return Status::ok(); }

  Status sample(Frame& frame) override {
    const int64_t now = clock_();
    if (!tried_ || now - last_try_ms_ >= options_.refresh_ms) refresh(frame.registry(), now);
    if (options_.owner_labels && (!owners_tried_ || now - last_owner_try_ms_ >= options_.owner_refresh_ms)) {
      refresh_owners(now);
    }
    for (const auto& l : info_labels_) frame.set_node(FieldId::kGpuPodInfo, l, 1);
    for (const auto& [labels, n] : allocatable_) frame.set_node(FieldId::kKubeletAllocatableDevices, labels, n);
    return status_;
  }

 private:
  void refresh(const SeriesRegistry& reg, int64_t now) {
    tried_ = true;
    last_try_ms_ = now;
    const auto timeout = std::chrono::milliseconds(options_.timeout_ms);
    auto owners = client_.list(timeout);
    if (!owners) {
      status_ = owners.status();
      if (now - last_ok_ms_ > 3 * options_.refresh_ms) drop();
      return;
    }
    info_labels_.clear();
    for (const auto& o : *owners) {
      info_labels_.push_back(Labels{{"resource", o.resource},
                                    {"device", o.device},
                                    {"gpu_uuid", gpu_uuid_of(o.device, reg)},
                                    {"namespace", o.namespace_},
                                    {"pod", o.pod},
                                    {"container", o.container}});
    }
    directory_.replace(std::move(*owners));
    status_ = Status::ok();
    last_ok_ms_ = now;

    auto alloc = client_.allocatable(timeout);
    allocatable_.clear();
    if (alloc) {
      for (const auto& a : *alloc) allocatable_.emplace_back(Labels{{"resource", a.resource}}, static_cast<double>(a.count));
    } else if (alloc.status().code() != Code::kNotSupported) {
      status_ = alloc.status();  // List worked: its view stands, the failure still shows
    }
  }

  // The pods' owner labels (pod_owners.h): on any failure none (the GPUs'
  // Kubernetes jobs are absent), and each new reason is logged once.
  void refresh_owners(int64_t now) {
    owners_tried_ = true;
    last_owner_try_ms_ = now;
    Status failed;
    if (!owner_client_) {
      auto target = kube_api_target(options_, [](const char* n) { return std::getenv(n); });
      if (target) owner_client_.emplace(options_, std::move(*target));
      else failed = target.status();
    }
    if (owner_client_) {
      auto jobs = owner_client_->list();
      if (jobs) {
        if (!owner_error_.empty() || !owners_ok_once_) {
          log::info("kube_owner_labels", {{"api", owner_client_->target().url},
                                          {"node", owner_client_->target().node},
                                          {"pods_with_a_job", std::to_string(jobs->size())}});
        }
        owners_ok_once_ = true;
        owner_error_.clear();
        directory_.replace_pod_jobs(std::move(*jobs));
        return;
      }
      failed = jobs.status();
    }
    directory_.replace_pod_jobs({});
    if (failed.message() != owner_error_) {
      owner_error_ = failed.message();
      log::warn("kube_owner_labels_absent", {{"reason", owner_error_}});
    }
  }

  void drop() {
    info_labels_.clear();
    allocatable_.clear();
    directory_.clear();
  }

  KubeletOptions options_;
  PodDirectory& directory_;
  PodResourcesClient client_;
  std::function<int64_t()> clock_;
  bool tried_ = false;
  int64_t last_try_ms_ = 0, last_ok_ms_ = 0;
  Status status_;
  std::vector<Labels> info_labels_;
  std::vector<std::pair<Labels, double>> allocatable_;
  std::optional<PodOwnerClient> owner_client_;
  bool owners_tried_ = false, owners_ok_once_ = false;
  int64_t last_owner_try_ms_ = 0;
  std::string owner_error_;  // the last failure said in the log; "" while it works
};

}  // namespace

std::unique_ptr<Source> make_kubelet_source(const KubeletOptions& options, PodDirectory& directory,
                                            std::function<int64_t()> clock) {
  return std::make_unique<KubeletSource>(options, directory, std::move(clock));
}

std::unique_ptr<Source> make_kubelet_source(const SourceOptions& options) {
  return make_kubelet_source(options.kubelet, pod_directory());
}

}  // namespace gpulens
