// The PodResources client and the kubelet source against a fake kubelet: a
// real gRPC server on a unix socket, built from the same api.proto. What a
// real kubelet adds (its rate limit, its auth by file permission on a real
// node, DRA claims) is not exercised here.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include "model/frame.h"
#include "agent/agent.h"
#include "sources/sim/sim_source.h"
#include "sources/kubelet/kubelet_source.h"
#include "sources/kubelet/pod_directory.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/kubelet/testing/fake_kubelet.h"

namespace gpulens {
namespace {

using testing::FakeKubelet;
using testing::FakePod;
using namespace std::chrono_literals;

// A fresh directory with a short path (unix socket paths are limited to 108 bytes).
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/gpulens-kubelet-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string socket() const { return path + "/kubelet.sock"; }
};

// An 8-GPU node: a training pod on GPUs 0-1 (plus a non-GPU device), an
// inference pod on a MIG slice, two pods time-slicing GPU 3.
std::vector<FakePod> node_pods() {
  return {
      {"train-0", "ml", {{"trainer", {{"nvidia.com/gpu", {"GPU-0", "GPU-1"}}, {"example.com/fpga", {"fpga0"}}}},
                         {"sidecar", {}}}},
      {"infer-0", "serving", {{"server", {{"nvidia.com/mig-1g.10gb", {"MIG-2a"}}}}}},
      {"notebook-a", "lab", {{"jupyter", {{"nvidia.com/gpu.shared", {"GPU-3::0"}}}}}},
      {"notebook-b", "lab", {{"jupyter", {{"nvidia.com/gpu.shared", {"GPU-3::1"}}}}}},
  };
}

std::map<std::string, double> values(const Frame& f) {
  std::map<std::string, double> out;
  for (const auto& v : f.values()) {
    const Series& s = f.registry().series(v.slot);
    out[std::string(field(s.field).name) + "{" + s.extra.render() + "}"] = v.value;
  }
  return out;
}

TEST(PodResourcesClient, ListGivesEveryContainersGpuDevices) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  ASSERT_TRUE(kubelet.running());
  kubelet.set_pods(node_pods());
  PodResourcesClient client(dir.socket());
  auto owners = client.list(5s);
  ASSERT_TRUE(owners.ok()) << owners.status().message();
  ASSERT_EQ(owners->size(), 5u);  // the FPGA and the device-less sidecar are left out
  EXPECT_EQ((*owners)[0].device, "GPU-0");
  EXPECT_EQ((*owners)[0].namespace_, "ml");
  EXPECT_EQ((*owners)[0].pod, "train-0");
  EXPECT_EQ((*owners)[0].container, "trainer");
  EXPECT_EQ((*owners)[2].resource, "nvidia.com/mig-1g.10gb");
  EXPECT_EQ((*owners)[2].device, "MIG-2a");
  EXPECT_EQ((*owners)[3].device, "GPU-3");  // replica suffix folded
}

TEST(PodResourcesClient, AllocatableCountsDevicesPerGpuResource) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  kubelet.set_allocatable({{"nvidia.com/gpu", {"GPU-0", "GPU-1", "GPU-2"}},
                           {"nvidia.com/gpu.shared", {"GPU-3::0", "GPU-3::1", "GPU-3::2"}},
                           {"nvidia.com/mig-1g.10gb", {"MIG-2a", "MIG-2b"}},
                           {"example.com/fpga", {"fpga0"}}});
  PodResourcesClient client(dir.socket());
  auto a = client.allocatable(5s);
  ASSERT_TRUE(a.ok()) << a.status().message();
  std::map<std::string, size_t> got;
  for (const auto& d : *a) got[d.resource] = d.count;
  EXPECT_EQ(got, (std::map<std::string, size_t>{
                     {"nvidia.com/gpu", 3}, {"nvidia.com/gpu.shared", 1}, {"nvidia.com/mig-1g.10gb", 2}}));

  kubelet.set_serves_allocatable(false);  // a kubelet before 1.21
  EXPECT_EQ(client.allocatable(5s).status().code(), Code::kNotSupported);
}

TEST(PodResourcesClient, GetOnePodAndKubeletsWithoutGet) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  kubelet.set_pods(node_pods());
  PodResourcesClient client(dir.socket());
  auto one = client.get("serving", "infer-0", 5s);
  ASSERT_TRUE(one.ok()) << one.status().message();
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].device, "MIG-2a");
  auto missing = client.get("serving", "nope", 5s);
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("not found"), std::string::npos) << missing.status().message();
  kubelet.set_serves_get(false);  // feature gate off, or a kubelet before 1.27
  auto off = client.get("serving", "infer-0", 5s);
  EXPECT_EQ(off.status().code(), Code::kNotSupported);
  EXPECT_NE(off.status().message().find("Get: not served"), std::string::npos) << off.status().message();
}

TEST(PodResourcesClient, MissingSocketIsNamed) {
  TempDir dir;
  PodResourcesClient client(dir.socket());
  auto r = client.list(1s);
  EXPECT_EQ(r.status().code(), Code::kNotFound);
  EXPECT_NE(r.status().message().find(dir.socket() + " does not exist"), std::string::npos) << r.status().message();
}

// Not allowed to open the socket: checked in a child running as nobody when
// the test runs as root (root may open anything).
TEST(PodResourcesClient, PermissionDeniedIsNamed) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  ASSERT_EQ(::chmod(dir.socket().c_str(), 0600), 0);
  ASSERT_EQ(::chmod(dir.path.c_str(), 0755), 0);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(fds[0]);
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(3);
    // A client made after the fork: the precheck answers before any gRPC call.
    PodResourcesClient client(dir.socket());
    auto r = client.list(1s);
    const std::string msg = r.status().message();
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(r.status().code() == Code::kPermission ? 0 : 1);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0) << msg;
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.socket()), std::string::npos) << msg;
}

TEST(PodResourcesClient, HungKubeletCostsTheDeadlineThenRecovers) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  kubelet.set_pods(node_pods());
  PodResourcesClient client(dir.socket());
  ASSERT_TRUE(client.list(5s).ok());
  kubelet.set_hang(true);
  auto r = client.list(200ms);
  EXPECT_EQ(r.status().code(), Code::kDeadline);
  EXPECT_NE(r.status().message().find("List: no answer within 200ms"), std::string::npos) << r.status().message();
  kubelet.set_hang(false);
  auto again = client.list(5s);  // same client, same channel
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->size(), 5u);
}

// A socket that accepts connections and never speaks: no HTTP/2 at all.
TEST(PodResourcesClient, SilentSocketCostsTheDeadline) {
  TempDir dir;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", dir.socket().c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  PodResourcesClient client(dir.socket());
  auto r = client.list(300ms);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kDeadline) << r.status().message();
  ::close(fd);
}

struct SourceHarness {
  SeriesRegistry reg;
  Frame frame{reg};
  PodDirectory dir;
  int64_t now = 1'000'000;
  std::unique_ptr<Source> src;
  explicit SourceHarness(const std::string& socket, int64_t refresh_ms = 10'000) {
    KubeletOptions o;
    o.socket = socket;
    o.refresh_ms = refresh_ms;
    o.timeout_ms = 300;
    src = make_kubelet_source(o, dir, [this] { return now; });
    EXPECT_TRUE(src->open(reg).is_ok());
  }
  std::map<std::string, double> sample(Status* st = nullptr) {
    frame.clear(0);
    Status s = src->sample(frame);
    if (st != nullptr) *st = s;
    return values(frame);
  }
};

const char* kTrainGpu0 =
    "gpu_pod_info{container=\"trainer\",device=\"GPU-0\",gpu_uuid=\"GPU-0\",namespace=\"ml\",pod=\"train-0\","
    "resource=\"nvidia.com/gpu\"}";
const char* kMig =
    "gpu_pod_info{container=\"server\",device=\"MIG-2a\",gpu_uuid=\"\",namespace=\"serving\","
    "pod=\"infer-0\",resource=\"nvidia.com/mig-1g.10gb\"}";

TEST(KubeletSource, PodsComeAndGoOnTheRefreshPeriod) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  kubelet.set_pods(node_pods());
  kubelet.set_allocatable({{"nvidia.com/gpu", {"GPU-0", "GPU-1", "GPU-2"}}});
  SourceHarness h(dir.socket());
  Status st;
  auto v = h.sample(&st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v[kTrainGpu0], 1);
  EXPECT_EQ(v[kMig], 1);
  EXPECT_EQ(v["gpu_kubelet_allocatable_devices{resource=\"nvidia.com/gpu\"}"], 3);
  EXPECT_EQ(h.dir.sole_owner("GPU-1")->pod, "train-0");
  EXPECT_FALSE(h.dir.sole_owner("GPU-3"));  // shared by two notebooks

  // The training pod ends and a new one takes GPU 0: nothing changes before
  // the refresh period, scrapes are served from the cache.
  kubelet.set_pods({{"train-1", "ml", {{"trainer", {{"nvidia.com/gpu", {"GPU-0"}}}}}}});
  const int calls = kubelet.calls();
  h.now += 5'000;
  v = h.sample();
  EXPECT_EQ(v[kTrainGpu0], 1);
  EXPECT_EQ(kubelet.calls(), calls);
  h.now += 5'000;
  v = h.sample(&st);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v.count(kTrainGpu0), 0u);
  EXPECT_EQ(v.count(kMig), 0u);
  EXPECT_EQ(v.size(), 2u);  // train-1 on GPU 0 and the allocatable count
  EXPECT_EQ(h.dir.sole_owner("GPU-0")->pod, "train-1");
  EXPECT_FALSE(h.dir.sole_owner("GPU-1"));
}

TEST(KubeletSource, GkeDeviceNamesMapToTheRegisteredGpu) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  kubelet.set_pods({{"p", "ns", {{"c", {{"nvidia.com/gpu", {"nvidia1"}}}}}}});
  SourceHarness h(dir.socket());
  h.reg.set_gpu(0, {.uuid = "GPU-zero"});
  h.reg.set_gpu(1, {.uuid = "GPU-one"});
  auto v = h.sample();
  EXPECT_EQ(v["gpu_pod_info{container=\"c\",device=\"nvidia1\",gpu_uuid=\"GPU-one\",namespace=\"ns\","
              "pod=\"p\",resource=\"nvidia.com/gpu\"}"],
            1);
}

TEST(KubeletSource, FailuresAreReportedAndTheViewExpires) {
  TempDir dir;
  auto kubelet = std::make_unique<FakeKubelet>(dir.socket());
  kubelet->set_pods(node_pods());
  SourceHarness h(dir.socket());
  Status st;
  h.sample(&st);
  ASSERT_TRUE(st.is_ok()) << st.message();

  kubelet->set_hang(true);  // hangs: the sample fails after the deadline
  h.now += 10'000;
  auto v = h.sample(&st);
  EXPECT_EQ(st.code(), Code::kDeadline) << st.message();
  EXPECT_EQ(v[kTrainGpu0], 1);  // the last good view, still fresh enough
  kubelet.reset();              // the kubelet goes away with its socket
  h.now += 10'000;
  h.sample(&st);
  EXPECT_EQ(st.code(), Code::kNotFound) << st.message();
  EXPECT_TRUE(h.dir.sole_owner("GPU-0"));
  h.now += 15'000;  // 35 s since the last answer: more than three periods
  v = h.sample(&st);
  EXPECT_FALSE(st.is_ok());
  EXPECT_TRUE(v.empty());
  EXPECT_TRUE(h.dir.all().empty());

  FakeKubelet back(dir.socket());  // restarted: the next refresh recovers
  back.set_pods(node_pods());
  h.now += 10'000;
  v = h.sample(&st);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v[kTrainGpu0], 1);
}

TEST(KubeletSource, KubeletWithoutAllocatableStillServesPods) {
  TempDir dir;
  FakeKubelet kubelet(dir.socket());
  kubelet.set_pods(node_pods());
  kubelet.set_serves_allocatable(false);
  SourceHarness h(dir.socket());
  Status st;
  auto v = h.sample(&st);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v[kTrainGpu0], 1);
  for (const auto& [k, _] : v) EXPECT_EQ(k.find("allocatable"), std::string::npos) << k;
}

}  // namespace
}  // namespace gpulens

namespace gpulens {
namespace {

// The rest keeps working: an agent with a GPU source and a kubelet source
// whose socket is missing serves the GPUs, and says what is wrong.
TEST(KubeletSource, MissingSocketMarksOnlyItselfDown) {
  TempDir dir;
  auto sim = sim::load_scenario("healthy-training", std::string(GPULENS_SOURCE_DIR) + "/scenarios");
  ASSERT_TRUE(sim.ok());
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(make_sim_source(std::move(*sim), 1, 1.0));
  KubeletOptions o;
  o.socket = dir.socket();
  PodDirectory pods;
  sources.push_back(make_kubelet_source(o, pods));
  Agent agent({.listen = "", .interval_ms = 1000, .history_ms = 10'000}, std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  agent.collect_once(1'764'410'400'000);
  const std::string json = agent.current_json();
  EXPECT_NE(json.find("{\"name\":\"sim\",\"up\":true,\"error\":\"\"}"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"name\":\"kubelet\",\"up\":false,\"error\":\"kubelet socket " + dir.socket() +
                      " does not exist (mount /var/lib/kubelet/pod-resources)\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"gpu_sm_active_ratio\":"), std::string::npos);
}

}  // namespace
}  // namespace gpulens
