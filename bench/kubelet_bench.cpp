// Cost of one refresh of the kubelet source: a PodResources List (and
// GetAllocatableResources) over a unix socket to the fake kubelet serving
// 100 pods, each with one container holding one GPU replica, as on a node
// whose 8 GPUs are time-sliced. Results in docs/PERFORMANCE.md.
//
//   build/release/bench/kubelet_bench --benchmark_min_time=2
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>

#include "model/frame.h"
#include "sources/kubelet/kubelet_source.h"
#include "sources/kubelet/pod_directory.h"
#include "sources/kubelet/pod_resources.h"
#include "sources/kubelet/testing/fake_kubelet.h"

namespace gpulens {
namespace {

using namespace std::chrono_literals;

struct Node {
  std::string dir, socket;
  std::unique_ptr<testing::FakeKubelet> kubelet;
  explicit Node(int pods) {
    char tmpl[] = "/tmp/gpulens-kubelet-bench-XXXXXX";
    dir = ::mkdtemp(tmpl);
    socket = dir + "/kubelet.sock";
    kubelet = std::make_unique<testing::FakeKubelet>(socket);
    std::vector<testing::FakePod> list;
    std::vector<std::string> replicas;
    for (int i = 0; i < pods; ++i) {
      const std::string id = "GPU-" + std::to_string(i % 8) + "1f2e3d4c-5b6a-7980-a1b2-c3d4e5f6a7b8::" + std::to_string(i);
      list.push_back({"worker-" + std::to_string(i), "team-" + std::to_string(i % 5),
                      {{"main", {{"nvidia.com/gpu.shared", {id}}}}}});
      replicas.push_back(id);
    }
    kubelet->set_pods(std::move(list));
    kubelet->set_allocatable({{"nvidia.com/gpu.shared", replicas}});
  }
  ~Node() {
    kubelet.reset();
    std::filesystem::remove_all(dir);
  }
};

void BM_List(benchmark::State& state) {
  Node node(static_cast<int>(state.range(0)));
  PodResourcesClient client(node.socket);
  for (auto _ : state) {
    auto owners = client.list(2s);
    if (!owners) state.SkipWithError(owners.status().message().c_str());
    benchmark::DoNotOptimize(owners);
  }
}
BENCHMARK(BM_List)->Arg(100)->Unit(benchmark::kMicrosecond);

// A whole refresh of the source: List, GetAllocatableResources, labels and
// the directory swap (refresh period 0 makes every sample refresh).
void BM_SourceRefresh(benchmark::State& state) {
  Node node(static_cast<int>(state.range(0)));
  KubeletOptions o;
  o.socket = node.socket;
  o.refresh_ms = 0;
  PodDirectory dir;
  auto src = make_kubelet_source(o, dir);
  SeriesRegistry reg;
  Frame frame(reg);
  for (auto _ : state) {
    frame.clear(0);
    Status s = src->sample(frame);
    if (!s) state.SkipWithError(s.message().c_str());
  }
  state.counters["series"] = static_cast<double>(frame.values().size());
}
BENCHMARK(BM_SourceRefresh)->Arg(100)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace gpulens

BENCHMARK_MAIN();
