// The training job of each pod on this node, from the pods' owner labels as
// the Kubernetes API server has them (docs/jobs.md "Kubernetes"): the
// kubelet's PodResources API names a GPU's pod but carries no labels.
//
// One request lists the node's pods,
//   GET <api>/api/v1/pods?fieldSelector=spec.nodeName%3D<node>
// with the service account's bearer token (re-read on every request: a
// rotated token needs no restart) over TLS verified against its CA. Of each
// pod only its namespace, name and these labels are read, the first found
// naming the job "<namespace>/<value>":
//   training.kubeflow.org/job-name, jobset.sigs.k8s.io/jobset-name,
//   batch.kubernetes.io/job-name, leaderworkerset.sigs.k8s.io/name.
// Every other field and label is skipped. An answer above owner_max_bytes,
// one that is not a PodList, a status other than 200 (403: the RBAC is
// missing) or a slow server are an error: no labels.
//
//   auto target = kube_api_target(options, ::getenv);   // URL and node name
//   PodOwnerClient client(options, *target);
//   Result<std::map<std::string, std::string>> jobs = client.list();  // "ml/train-0" -> "ml/llama"
//
// Thread-safety: list() from one thread at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "sources/options.h"
#include "util/http_client.h"
#include "util/status.h"

namespace gpulens {

// The owner label keys, in order of precedence.
std::span<const std::string_view> owner_label_keys();

// "namespace/pod" -> "namespace/<owner>" for each pod of a PodList (JSON)
// that carries an owner label; a pod without one is left out. An error when
// the text is not a PodList.
Result<std::map<std::string, std::string>> parse_pod_owners(std::string_view json);

struct KubeApiTarget {
  std::string url;   // https://host:port, no trailing slash (never plain http: the token is a secret)
  std::string node;
};
// The API server (api_url, else KUBERNETES_SERVICE_HOST/PORT) and the node
// (node_name, else NODE_NAME) from `options` and the environment; an error
// naming what is missing.
Result<KubeApiTarget> kube_api_target(const KubeletOptions& options,
                                      const std::function<const char*(const char*)>& getenv);

class PodOwnerClient {
 public:
  PodOwnerClient(const KubeletOptions& options, KubeApiTarget target);
  // Lists the node's pods once: their jobs, or why not.
  Result<std::map<std::string, std::string>> list() const;
  const KubeApiTarget& target() const { return target_; }

 private:
  KubeApiTarget target_;
  std::string url_;
  std::unique_ptr<HttpClient> http_;
};

}  // namespace gpulens
