// Pods' owner labels from the Kubernetes API server; see pod_owners.h.
#include "sources/kubelet/pod_owners.h"

#include <simdjson.h>

#include <array>

namespace gpulens {
namespace {

constexpr std::array<std::string_view, 4> kOwnerLabels = {
    "training.kubeflow.org/job-name", "jobset.sigs.k8s.io/jobset-name", "batch.kubernetes.io/job-name",
    "leaderworkerset.sigs.k8s.io/name"};

// A Kubernetes name or label value: at most 253 printable ASCII bytes, no
// space, no quote or backslash (it becomes a label of ours).
bool plain_name(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  for (char c : s) {
    if (c <= ' ' || c > '~' || c == '"' || c == '\\' || c == '/') return false;
  }
  return true;
}

}  // namespace

std::span<const std::string_view> owner_label_keys() { return kOwnerLabels; }

Result<std::map<std::string, std::string>> parse_pod_owners(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc)) {
    return Status(Code::kInvalidArgument, std::string("the pod list is not JSON (") + simdjson::error_message(err) + ")");
  }
  std::string_view kind;
  if (doc["kind"].get(kind) || kind != "PodList") {
    return Status(Code::kInvalidArgument, "the answer is not a PodList");
  }
  std::map<std::string, std::string> jobs;
  simdjson::dom::element items_el;
  if (doc["items"].get(items_el)) return Status(Code::kInvalidArgument, "the PodList has no items");
  if (items_el.is_null()) return jobs;  // an empty list may come as null
  simdjson::dom::array items;
  if (items_el.get(items)) return Status(Code::kInvalidArgument, "the PodList's items are not an array");
  for (simdjson::dom::element pod : items) {
    simdjson::dom::element meta;
    std::string_view ns, name;
    if (pod["metadata"].get(meta) || meta["namespace"].get(ns) || meta["name"].get(name)) continue;
    if (!plain_name(ns) || !plain_name(name)) continue;
    simdjson::dom::object labels;
    if (meta["labels"].get(labels)) continue;
    for (std::string_view key : kOwnerLabels) {
      std::string_view value;
      if (labels[key].get(value) || !plain_name(value)) continue;
      jobs[std::string(ns) + "/" + std::string(name)] = std::string(ns) + "/" + std::string(value);
      break;
    }
  }
  return jobs;
}

Result<KubeApiTarget> kube_api_target(const KubeletOptions& o, const std::function<const char*(const char*)>& getenv) {
  auto env = [&](const char* name) {
    const char* v = getenv ? getenv(name) : nullptr;
    return std::string(v == nullptr ? "" : v);
  };
  KubeApiTarget t;
  t.url = o.api_url;
  if (t.url.empty()) {
    const std::string host = env("KUBERNETES_SERVICE_HOST"), port = env("KUBERNETES_SERVICE_PORT");
    if (host.empty()) {
      return Status(Code::kNotFound,
                    "no Kubernetes API server: KUBERNETES_SERVICE_HOST is not set (not in a pod?) and "
                    "source.kubelet.api_url is empty");
    }
    t.url = "https://" + (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" +
            (port.empty() ? "443" : port);
  }
  while (!t.url.empty() && t.url.back() == '/') t.url.pop_back();
  if (!t.url.starts_with("https://")) {
    // The bearer token is a secret: it never travels in clear text.
    return Status(Code::kInvalidArgument, "source.kubelet.api_url " + t.url + " is not an https:// URL");
  }
  t.node = o.node_name.empty() ? env("NODE_NAME") : o.node_name;
  if (t.node.empty()) {
    return Status(Code::kNotFound,
                  "no node name: set source.kubelet.node_name (--node-name) or NODE_NAME (the chart sets it from "
                  "spec.nodeName)");
  }
  if (!plain_name(t.node)) return Status(Code::kInvalidArgument, "node name " + t.node + " is not a Kubernetes name");
  return t;
}

PodOwnerClient::PodOwnerClient(const KubeletOptions& o, KubeApiTarget target) : target_(std::move(target)) {
  HttpClientOptions h;
  h.timeout_ms = o.owner_timeout_ms;
  h.max_body_bytes = static_cast<size_t>(o.owner_max_bytes);
  h.tls.ca_file = o.ca_file;
  h.auth.credentials_file = o.token_file;
  h.proxy = ProxyOptions{};  // the API server is reached directly, as the kubelet reaches it
  http_ = std::make_unique<HttpClient>(std::move(h));
  url_ = target_.url + "/api/v1/pods?fieldSelector=" + url_encode("spec.nodeName=" + target_.node);
}

Result<std::map<std::string, std::string>> PodOwnerClient::list() const {
  auto r = http_->get(url_, {{"Accept", "application/json"}});
  if (!r) return Status(r.status().code(), "Kubernetes API " + target_.url + ": " + r.status().message());
  if (r->status == 401 || r->status == 403) {
    return Status(Code::kPermission,
                  "Kubernetes API " + target_.url + " answered " + std::to_string(r->status) +
                      " listing the pods of node " + target_.node +
                      ": the agent's service account needs get and list on pods (the chart's "
                      "kubeOwnerLabels.enabled adds them)");
  }
  if (r->status != 200) {
    return Status(Code::kUnavailable, "Kubernetes API " + target_.url + " answered " + std::to_string(r->status));
  }
  auto jobs = parse_pod_owners(r->body);
  if (!jobs) return Status(jobs.status().code(), "Kubernetes API " + target_.url + ": " + jobs.status().message());
  return jobs;
}

}  // namespace gpulens
