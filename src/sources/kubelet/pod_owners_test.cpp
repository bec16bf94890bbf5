// The pods' owner labels: the PodList parser (which labels, in which order,
// nothing else), where the API server and the node come from, and the
// kubelet source's handling of an API server that does not answer (the jobs
// absent, said once). The answers
// of a real (fake) API server over TLS are tested end to end in
// tests/integration/kube_owner_labels_test.sh.
#include "sources/kubelet/pod_owners.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "model/frame.h"
#include "sources/kubelet/kubelet_source.h"
#include "sources/kubelet/pod_directory.h"
#include "util/log.h"

namespace gpulens {
namespace {

std::string pod(const std::string& ns, const std::string& name, const std::string& labels) {
  return R"({"metadata":{"namespace":")" + ns + R"(","name":")" + name + R"(","uid":"u","labels":{)" + labels +
         R"(}},"spec":{"nodeName":"node-a","containers":[{"name":"c","env":[{"name":"HF_TOKEN","value":"hf_x"}]}]}})";
}
std::string pod_list(const std::vector<std::string>& pods) {
  std::string items;
  for (const auto& p : pods) items += (items.empty() ? "" : ",") + p;
  return R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[)" + items + "]}";
}

TEST(PodOwners, EachOwnerLabelInItsOrderAndNothingElse) {
  auto jobs = parse_pod_owners(pod_list({
      pod("ml", "llama-worker-0", R"("training.kubeflow.org/job-name":"llama","app":"x")"),
      // A JobSet's pod carries its child Job's name too: the JobSet names the job.
      pod("ml", "js-0", R"("batch.kubernetes.io/job-name":"js-workers-0","jobset.sigs.k8s.io/jobset-name":"js")"),
      pod("serve", "lws-0", R"("leaderworkerset.sigs.k8s.io/name":"vllm")"),
      pod("batch", "plain-0", R"("batch.kubernetes.io/job-name":"nightly")"),
      pod("lab", "notebook", R"("app":"jupyter","training.kubeflow.org/job-name2":"no")"),
      pod("ml", "odd", R"("training.kubeflow.org/job-name":"has space")"),
  }));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  EXPECT_EQ(*jobs, (std::map<std::string, std::string>{{"ml/llama-worker-0", "ml/llama"},
                                                         {"ml/js-0", "ml/js"},
                                                         {"serve/lws-0", "serve/vllm"},
                                                         {"batch/plain-0", "batch/nightly"}}));
  EXPECT_EQ(owner_label_keys().size(), 4u);
}

TEST(PodOwners, AnswersThatAreNoPodList) {
  EXPECT_TRUE(parse_pod_owners(R"({"kind":"PodList","items":null})").ok());
  EXPECT_TRUE(parse_pod_owners(pod_list({}))->empty());
  for (const char* bad : {"", "{", "not json", "\x01\x02\xff", R"({"kind":"Status","code":403})", "[1,2]",
                          R"({"kind":"PodList"})", R"({"kind":"PodList","items":{"a":1}})"}) {
    auto r = parse_pod_owners(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  // Items of the wrong shape are skipped, not fatal.
  auto r = parse_pod_owners(R"({"kind":"PodList","items":[1,"x",{"metadata":7},{"metadata":{"name":"a"}}]})");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->empty());
}

TEST(PodOwners, ApiServerAndNodeFromOptionsOrTheEnvironment) {
  std::map<std::string, std::string> env{{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
                                         {"KUBERNETES_SERVICE_PORT", "443"},
                                         {"NODE_NAME", "gpu-node-7"}};
  auto getenv = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  KubeletOptions o;
  auto t = kube_api_target(o, getenv);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->url, "https://10.96.0.1:443");
  EXPECT_EQ(t->node, "gpu-node-7");
  env["KUBERNETES_SERVICE_HOST"] = "fd00::1";
  EXPECT_EQ(kube_api_target(o, getenv)->url, "https://[fd00::1]:443");
  o.api_url = "https://api.example:6443/";
  o.node_name = "n1";
  t = kube_api_target(o, getenv);
  EXPECT_EQ(t->url, "https://api.example:6443");
  EXPECT_EQ(t->node, "n1");
  o.api_url = "http://api.example:8080";  // the token never goes in clear text
  EXPECT_FALSE(kube_api_target(o, getenv).ok());
  o.api_url.clear();
  o.node_name.clear();
  env.erase("NODE_NAME");
  EXPECT_NE(kube_api_target(o, getenv).status().message().find("NODE_NAME"), std::string::npos);
  env.erase("KUBERNETES_SERVICE_HOST");
  EXPECT_NE(kube_api_target(o, getenv).status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

TEST(PodOwners, DirectoryKeepsThePodsJobs) {
  PodDirectory dir;
  const uint64_t g0 = dir.generation();
  dir.replace_pod_jobs({{"ml/a", "ml/llama"}});
  EXPECT_EQ(dir.pod_job("ml", "a"), "ml/llama");
  EXPECT_EQ(dir.pod_job("ml", "b"), "");
  EXPECT_GT(dir.generation(), g0);
  const uint64_t g1 = dir.generation();
  dir.replace_pod_jobs({{"ml/a", "ml/llama"}});
  EXPECT_EQ(dir.generation(), g1);  // unchanged: readers keep their cache
}

// A port nothing listens on.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t n = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(PodOwners, AnApiServerThatDoesNotAnswerIsAbsentAndSaidOnce) {
  std::vector<std::string> lines;
  log::set_sink([&](const std::string& l) { lines.push_back(l); });
  KubeletOptions o;
  o.socket = "/nonexistent/kubelet.sock";
  o.owner_labels = true;
  o.api_url = "https://127.0.0.1:" + std::to_string(closed_port());
  o.node_name = "node-a";
  o.owner_refresh_ms = 30'000;
  o.owner_timeout_ms = 500;
  PodDirectory dir;
  dir.replace_pod_jobs({{"ml/a", "ml/llama"}});  // known before: dropped at the first failure
  int64_t now = 1'000'000;
  auto src = make_kubelet_source(o, dir, [&] { return now; });
  SeriesRegistry reg;
  ASSERT_TRUE(src->open(reg).is_ok());
  Frame frame(reg);
  for (int i = 0; i < 4; ++i) {
    frame.clear(0);
    (void)src->sample(frame);  // the kubelet socket is missing too: that is its own failure
    EXPECT_EQ(dir.pod_job("ml", "a"), "");
    now += 15'000;  // two samples per refresh period
  }
  log::set_sink(nullptr);
  int said = 0;
  for (const auto& l : lines) said += l.find("kube_owner_labels_absent") != std::string::npos;
  EXPECT_EQ(said, 1) << (lines.empty() ? "" : lines.front());
}

}  // namespace
}  // namespace gpulens
