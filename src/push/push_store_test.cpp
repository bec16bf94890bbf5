// The store joins pushed series to this node's GPUs, keeps the Pushgateway's
// PUT/POST/DELETE semantics, enforces its limits and forgets what expired.
#include "push/push_store.h"
#include "model/testing/label_text.h"
#include "util/testing/temp_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

namespace gpulens::push {
namespace {

struct Fixture {
  testing::TestDir dir;  // the fake /proc
  SeriesRegistry registry;
  LiveStore live;
  std::string proc_root;
  std::shared_ptr<PushStore> store;

  explicit Fixture(PushOptions o = {}) {
    registry.set_gpu(0, {.uuid = "GPU-aaaa", .name = "NVIDIA H200"});
    registry.set_gpu(1, {.uuid = "GPU-bbbb", .name = "NVIDIA H200"});
    proc_root = dir.path();
    alive(4242, true);
    alive(777, true);
    // The GPU source's process list: pid 4242 on GPU 1 in a pod, pid 777 on both GPUs.
    const int src = live.add_source("nvml", false);
    Frame f(registry);
    f.clear(0);
    f.set(FieldId::kGpuProcessMemoryUsed, 1, testing::labels_from_text(R"(pid="4242",namespace="ml",pod="trainer-0",container="main")"), 1e9);
    f.set(FieldId::kGpuProcessMemoryUsed, 0, testing::labels_from_text(R"(pid="777",namespace="",pod="",container="")"), 1e9);
    f.set(FieldId::kGpuProcessMemoryUsed, 1, testing::labels_from_text(R"(pid="777",namespace="",pod="",container="")"), 1e9);
    live.publish(src, f);
    o.proc_root = proc_root;
    store = std::make_shared<PushStore>(o);
    store->attach(registry, live);
  }
  void alive(int pid, bool yes) {
    const std::string d = proc_root + "/" + std::to_string(pid);
    if (yes) std::filesystem::create_directories(d);
    else std::filesystem::remove_all(d);
  }
  // "name{labels}" -> value of what the store exports at `now`.
  std::map<std::string, double> exported(int64_t now) {
    Frame f(registry);
    f.clear(now);
    store->fill(f);
    std::map<std::string, double> out;
    for (const auto& v : f.values()) {
      const Series& s = registry.series(v.slot);
      out[std::string(field(s.field).name) + "{" + s.labels + "}"] = v.value;
    }
    return out;
  }
  PushAnswer put(std::string_view path, std::string_view body, int64_t now = 1000) {
    return store->pushgateway("PUT", path, body, now);
  }
};

constexpr const char* kGpu1 = R"(gpu="1",gpu_uuid="GPU-bbbb",gpu_name="NVIDIA H200")";

TEST(PushStore, JoinsByUuidAndPidWithPodLabels) {
  Fixture fx;
  auto a = fx.put("/metrics/job/gpulens_client/pid/4242",
                  "# TYPE gpu_memory_fragmentation_ratio gauge\n"
                  "gpu_memory_fragmentation_ratio{gpu_uuid=\"bbbb\"} 0.62\n"
                  "gpu_allocator_external_fragmentation_ratio{gpu_uuid=\"GPU-bbbb\",pool=\"large\",stream=\"0\"} 0.4\n");
  ASSERT_EQ(a.status, 200) << a.body;
  auto e = fx.exported(2000);
  const std::string join = R"(container="main",namespace="ml",pid="4242",pod="trainer-0")";
  EXPECT_EQ(e["gpu_memory_fragmentation_ratio{" + std::string(kGpu1) + "," + join + "}"], 0.62);
  EXPECT_EQ(e["gpu_allocator_external_fragmentation_ratio{" + std::string(kGpu1) + "," + join +
              ",pool=\"large\",stream=\"0\"}"],
            0.4);
  EXPECT_EQ(e["gpulens_push_groups{}"], 1);
  EXPECT_EQ(e["gpulens_push_series{}"], 2);
}

TEST(PushStore, JoinsByPidAloneThroughTheProcessList) {
  Fixture fx;
  ASSERT_EQ(fx.put("/metrics/job/x", "gpu_allocator_reserved_bytes{pid=\"4242\"} 5e9\n").status, 200);
  auto e = fx.exported(2000);
  EXPECT_EQ(e[std::string("gpu_allocator_reserved_bytes{") + kGpu1 +
              R"(,container="main",namespace="ml",pid="4242",pod="trainer-0"})"],
            5e9);
  // A uuid with a pid the driver does not list: the pid alone is the join label.
  ASSERT_EQ(fx.put("/metrics/job/y", "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",pid=\"999\"} 1\n").status, 200);
  fx.alive(999, true);
  e = fx.exported(2000);
  EXPECT_EQ(e[R"(gpu_allocator_reserved_bytes{gpu="0",gpu_uuid="GPU-aaaa",gpu_name="NVIDIA H200",pid="999"})"], 1);
}

TEST(PushStore, PidsOnAGpuFromTheProcessListAndPushes) {
  Fixture fx;
  fx.alive(555, true);
  ASSERT_EQ(fx.put("/metrics/job/gpulens_client/pid/555", "gpu_memory_fragmentation_ratio{gpu_uuid=\"GPU-aaaa\"} 0.1\n")
                .status,
            200);
  EXPECT_EQ(fx.store->gpu_count(), 2);
  EXPECT_EQ(fx.store->pids_on_gpu(0), (std::vector<int64_t>{555, 777}));   // pushed, listed
  EXPECT_EQ(fx.store->pids_on_gpu(1), (std::vector<int64_t>{777, 4242}));  // listed only
  EXPECT_TRUE(fx.store->pids_on_gpu(2).empty());
}

TEST(PushStore, RefusesWhatNamesNoKnownGpu) {
  Fixture fx;
  auto a = fx.put("/metrics/job/x", "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-zzzz\"} 1\n");
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body, "line 1: gpu_allocator_reserved_bytes: gpu_uuid \"GPU-zzzz\" is not a GPU of this node (its GPUs: "
                    "GPU-aaaa, GPU-bbbb)\n");
  a = fx.put("/metrics/job/x", "gpu_allocator_reserved_bytes{pid=\"31337\"} 1\n");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("pid 31337 uses no GPU of this node"), std::string::npos) << a.body;
  a = fx.put("/metrics/job/x", "gpu_allocator_reserved_bytes{pid=\"777\"} 1\n");
  EXPECT_NE(a.body.find("pid 777 uses 2 GPUs; say which with a gpu_uuid label"), std::string::npos) << a.body;
  a = fx.put("/metrics/job/x", "gpu_allocator_reserved_bytes 1\n");
  EXPECT_NE(a.body.find("names no GPU"), std::string::npos) << a.body;
  a = fx.put("/metrics/job/x", "gpu_allocator_reserved_bytes{pid=\"-3\",gpu_uuid=\"GPU-aaaa\"} 1\n");
  EXPECT_NE(a.body.find("pid \"-3\" is not a process id"), std::string::npos) << a.body;
  a = fx.put("/metrics/job/x", "gpu_power_watts{gpu_uuid=\"GPU-aaaa\"} 1\n");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("gpu_power_watts is not a metric the push receiver takes (it takes: "
                        "gpu_memory_fragmentation_ratio, gpu_allocator_allocated_bytes"),
            std::string::npos)
      << a.body;
  a = fx.put("/metrics/job/x", "# TYPE gpu_allocator_retries_total gauge\ngpu_allocator_retries_total{gpu_uuid=\"GPU-aaaa\"} 1\n");
  EXPECT_NE(a.body.find("line 2: gpu_allocator_retries_total pushed as gauge, but it is a counter"), std::string::npos)
      << a.body;
  EXPECT_EQ(fx.store->group_count(), 0u);  // nothing refused was kept
  auto e = fx.exported(2000);
  EXPECT_EQ(e[R"(gpulens_push_rejected_total{reason="unknown_gpu"})"], 4);
  EXPECT_EQ(e[R"(gpulens_push_rejected_total{reason="malformed"})"], 2);
  EXPECT_EQ(e[R"(gpulens_push_rejected_total{reason="unknown_metric"})"], 1);
}

TEST(PushStore, PutReplacesPostMergesDeleteRemoves) {
  Fixture fx;
  const std::string path = "/metrics/job/x/gpu_uuid/GPU-aaaa";  // the grouping key names the GPU
  const std::string g0 = R"({gpu="0",gpu_uuid="GPU-aaaa",gpu_name="NVIDIA H200"})";
  ASSERT_EQ(fx.put(path, "gpu_allocator_reserved_bytes 10\ngpu_allocator_allocated_bytes 4\n").status, 200);
  ASSERT_EQ(fx.store->pushgateway("POST", path, "gpu_allocator_allocated_bytes 6\n", 1000).status, 200);
  auto e = fx.exported(2000);
  EXPECT_EQ(e["gpu_allocator_reserved_bytes" + g0], 10);  // POST kept the other name
  EXPECT_EQ(e["gpu_allocator_allocated_bytes" + g0], 6);
  ASSERT_EQ(fx.put(path, "gpu_allocator_allocated_bytes 7\n").status, 200);
  e = fx.exported(2000);
  EXPECT_FALSE(e.count("gpu_allocator_reserved_bytes" + g0));  // PUT replaced the group
  EXPECT_EQ(e["gpu_allocator_allocated_bytes" + g0], 7);
  // The URL's labels win over the body's.
  ASSERT_EQ(fx.put(path, "gpu_allocator_allocated_bytes{gpu_uuid=\"GPU-bbbb\"} 8\n").status, 200);
  EXPECT_EQ(fx.exported(2000)["gpu_allocator_allocated_bytes" + g0], 8);
  // DELETE of another grouping key leaves this one alone; of this one, drops it.
  EXPECT_EQ(fx.store->pushgateway("DELETE", path + "/instance/a", "", 1000).status, 202);
  EXPECT_EQ(fx.store->group_count(), 1u);
  EXPECT_EQ(fx.store->pushgateway("DELETE", path, "x", 1000).status, 400);
  EXPECT_EQ(fx.store->pushgateway("DELETE", path, "", 1000).status, 202);
  EXPECT_EQ(fx.store->group_count(), 0u);
  EXPECT_FALSE(fx.exported(2000).count("gpu_allocator_allocated_bytes" + g0));
  // An empty PUT keeps the group with no metrics.
  EXPECT_EQ(fx.put(path, "").status, 200);
  EXPECT_EQ(fx.store->group_count(), 1u);
  EXPECT_EQ(fx.store->pushgateway("GET", path, "", 1000).status, 405);
  EXPECT_EQ(fx.put("/metrics/job/x/a@base64/!", "").status, 400);
  EXPECT_EQ(fx.put(path, "gpu_allocator_allocated_bytes 1 123\n").status, 400);
}

TEST(PushStore, ExpiresByDeadPidAndByTtl) {
  PushOptions o;
  o.ttl_ms = 60'000;
  Fixture fx(o);
  ASSERT_EQ(fx.put("/metrics/job/c/pid/4242", "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-bbbb\"} 1\n", 1000).status, 200);
  ASSERT_EQ(fx.put("/metrics/job/d", "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\"} 2\n", 1000).status, 200);
  EXPECT_EQ(fx.exported(2000)["gpulens_push_series{}"], 2);
  fx.alive(4242, false);  // the process exited
  auto e = fx.exported(3000);
  EXPECT_EQ(e["gpulens_push_series{}"], 1);
  EXPECT_EQ(fx.store->group_count(), 1u);
  // No push refreshed group d for longer than the TTL.
  EXPECT_EQ(fx.exported(61'000)["gpulens_push_series{}"], 1);
  e = fx.exported(61'001);
  EXPECT_EQ(e["gpulens_push_series{}"], 0);
  EXPECT_EQ(e[R"(gpulens_push_rejected_total{reason="expired"})"], 2);
  EXPECT_EQ(fx.store->group_count(), 0u);
}

TEST(PushStore, LimitsAreClearErrors) {
  PushOptions o;
  o.limits.max_groups = 2;
  o.limits.max_series_per_group = 2;
  o.limits.max_labels = 4;
  Fixture fx(o);
  const std::string one = "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\"} 1\n";
  ASSERT_EQ(fx.put("/metrics/job/a", one).status, 200);
  // Group b's series differs from a's (the same one would be a conflict).
  ASSERT_EQ(fx.put("/metrics/job/b", "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",q=\"b\"} 1\n").status, 200);
  auto a = fx.put("/metrics/job/c", one);
  EXPECT_EQ(a.status, 429);
  EXPECT_NE(a.body.find("(push.max_groups)"), std::string::npos) << a.body;
  EXPECT_EQ(fx.put("/metrics/job/a", one).status, 200);  // an existing group still takes pushes
  a = fx.put("/metrics/job/a",
             "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",p=\"1\"} 1\ngpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",p=\"2\"} 1\n"
             "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",p=\"3\"} 1\n");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("more than 2 (push.max_series_per_group)"), std::string::npos) << a.body;
  a = fx.put("/metrics/job/a/b/1/c/2/d/3", "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\"} 1\n");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("labels with the group's, more than 4 (push.max_labels)"), std::string::npos) << a.body;
}

TEST(PushStore, OtlpJoinsByResourcePidAndAnswersPartialSuccess) {
  Fixture fx;
  const std::string body = R"({"resourceMetrics":[{"resource":{"attributes":[
      {"key":"service.name","value":{"stringValue":"vllm"}},{"key":"process.pid","value":{"intValue":"4242"}}]},
    "scopeMetrics":[{"metrics":[
      {"name":"gpu_allocator_reserved_bytes","gauge":{"dataPoints":[{"asInt":"1024","timeUnixNano":"1718000000000000000"}]}},
      {"name":"gpu.allocator.ooms","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[{"asInt":1,
        "attributes":[{"key":"gpu.uuid","value":{"stringValue":"GPU-bbbb"}}]}]}},
      {"name":"h","histogram":{"dataPoints":[{"count":"1"}]}}]}]}]})";
  auto a = fx.store->otlp_json(body, 1000);
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.content_type, "application/json");
  EXPECT_EQ(a.body,
            "{\"partialSuccess\":{\"rejectedDataPoints\":\"1\",\"errorMessage\":\"resourceMetrics[0].scopeMetrics[0]."
            "metrics[2] (h): histogram points are not accepted (gauges and sums only)\"}}\n");
  auto e = fx.exported(2000);
  const std::string tail = R"(,container="main",namespace="ml",pid="4242",pod="trainer-0",service_name="vllm"})";
  EXPECT_EQ(e["gpu_allocator_reserved_bytes{" + std::string(kGpu1) + tail], 1024);
  EXPECT_EQ(e["gpu_allocator_ooms_total{" + std::string(kGpu1) + tail], 1);
  a = fx.store->otlp_json("{\"resourceMetrics\":[]}", 1000);
  EXPECT_EQ(a.body, "{}\n");
  a = fx.store->otlp_json("nope", 1000);
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("{\"code\":3,\"message\":\"OTLP JSON body is not valid JSON"), std::string::npos) << a.body;
  a = fx.store->otlp_json(
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"gpu_allocator_reserved_bytes","gauge":{"dataPoints":[{"asInt":"1",
        "attributes":[{"key":"gpu.uuid","value":{"stringValue":"GPU-nope"}}]}]}}]}]}]})",
      1000);
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("is not a GPU of this node"), std::string::npos) << a.body;
}

}  // namespace
}  // namespace gpulens::push
