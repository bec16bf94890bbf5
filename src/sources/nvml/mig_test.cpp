// MIG through the real loader and the stand-in libnvidia-ml.so.1: layouts
// (7x1g, 3g+2g+1g+1g), MIG mode pending, instances that go away, per-instance
// memory, GPM and processes, and GPUs without MIG left as they were.
#include "sources/nvml/mig.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "sources/kubelet/pod_directory.h"
#include "sources/nvml/nvml_source.h"
#include "util/testing/temp_dir.h"

namespace gpulens {
namespace {

const std::string kData = std::string(GPULENS_SOURCE_DIR) + "/tests/data/nvml/";

struct Harness {
  testing::TestDir dir;
  SeriesRegistry reg;
  Frame frame{reg};
  std::unique_ptr<NvmlSource> src;
  explicit Harness(const std::string& script, int64_t slow_interval_ms = 10000) {
    const std::string path = dir.file("mig_script.txt");
    std::ofstream(path) << script;
    setenv("GPULENS_FAKE_NVML_SCRIPT", path.c_str(), 1);
    NvmlOptions o;
    o.library = GPULENS_FAKE_NVML;
    o.proc_root = kData + "proc";
    o.kubelet_root = kData + "kubelet";
    o.sys_root = "/nonexistent";
    o.call_deadline_ms = 5000;
    o.xid_wait_ms = 20;
    o.slow_interval_ms = slow_interval_ms;
    src = std::make_unique<NvmlSource>(std::move(o));
  }
  // "name{gpu|extra}" -> value
  std::map<std::string, double> sample() {
    frame.clear(0);
    Status s = src->sample(frame);
    EXPECT_TRUE(s.is_ok()) << s.message();
    std::map<std::string, double> out;
    for (const auto& v : frame.values()) {
      const Series& x = reg.series(v.slot);
      out[std::string(field(x.field).name) + "{" + std::to_string(x.gpu) + "|" + x.extra.render() + "}"] = v.value;
    }
    return out;
  }
};

std::string mig(const char* uuid, const char* profile, unsigned gi, unsigned ci) {
  return mig_labels({.uuid = uuid, .profile = profile, .gpu_instance = gi, .compute_instance = ci}).render();
}

size_t count_of(const std::map<std::string, double>& v, const std::string& name) {
  size_t n = 0;
  for (const auto& [k, x] : v) n += k.starts_with(name + "{") ? 1 : 0;
  return n;
}

TEST(Mig, ProfileFromTheDeviceName) {
  EXPECT_EQ(mig_profile_from_name("NVIDIA H100 80GB HBM3 MIG 1g.10gb"), "1g.10gb");
  EXPECT_EQ(mig_profile_from_name("NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb"), "1c.3g.20gb");
  EXPECT_EQ(mig_profile_from_name("NVIDIA H200 MIG 3g.71gb Device 0"), "3g.71gb");
  EXPECT_EQ(mig_profile_from_name("NVIDIA H100 80GB HBM3"), "");
}

TEST(Mig, SevenOneGInstancesWithMemoryAndGpm) {
  std::string script =
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa arch=9 gpm=on\nmig 0 mode=on\n"
      "value 0 gpm.2 90\nvalue 0 mig.7.0.gpm.2 40\nvalue 0 mig.7.0.gpm.10 55\n";
  const unsigned gis[] = {7, 8, 9, 10, 11, 12, 13};
  for (unsigned gi : gis) {
    script += "instance 0 gi=" + std::to_string(gi) + " ci=0 profile=1g.10gb mem=10200547328 used=" +
              std::to_string(gi * 1048576) + "\n";
  }
  Harness h(script);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v.at("gpu_mig_mode{0|state=\"current\"}"), 1);
  EXPECT_EQ(v.at("gpu_mig_mode{0|state=\"pending\"}"), 1);
  EXPECT_EQ(count_of(v, "gpu_mig_info"), 7u);
  EXPECT_EQ(count_of(v, "gpu_mig_memory_total_bytes"), 7u);
  const std::string first = mig("MIG-0-7-0-fake", "1g.10gb", 7, 0);
  const std::string last = mig("MIG-0-13-0-fake", "1g.10gb", 13, 0);
  EXPECT_EQ(v.at("gpu_mig_info{0|" + first + "}"), 1);
  EXPECT_EQ(v.at("gpu_mig_memory_total_bytes{0|" + last + "}"), 10200547328.0);
  EXPECT_EQ(v.at("gpu_mig_memory_used_bytes{0|" + last + "}"), 13.0 * 1048576);
  EXPECT_EQ(v.at("gpu_mig_memory_free_bytes{0|" + last + "}"), 10200547328.0 - 13.0 * 1048576);
  // MIG mode: the whole-GPU utilisation is not given, so it is absent.
  EXPECT_FALSE(v.contains("gpu_utilization_ratio{0|}"));
  // GPM per instance from the second snapshot on, on the instance's handle.
  EXPECT_FALSE(v.contains("gpu_mig_sm_active_ratio{0|" + first + "}"));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  v = h.sample();
  EXPECT_DOUBLE_EQ(v.at("gpu_mig_sm_active_ratio{0|" + first + "}"), 0.40);
  EXPECT_DOUBLE_EQ(v.at("gpu_mig_mem_bandwidth_util_ratio{0|" + first + "}"), 0.55);
  EXPECT_DOUBLE_EQ(v.at("gpu_mig_sm_active_ratio{0|" + last + "}"), 0.90);  // falls back to the GPU's value
  EXPECT_DOUBLE_EQ(v.at("gpu_sm_active_ratio{0|}"), 0.90);                  // the whole GPU stays whole
  EXPECT_EQ(count_of(v, "gpu_mig_tensor_core_util_ratio"), 7u);
}

TEST(Mig, MixedLayoutProcessesCarryTheirInstance) {
  Harness h(
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa gpm=off\ngpu 1 uuid=GPU-bbbb gpm=off\nmig 0 mode=on\n"
      "instance 0 gi=1 ci=0 profile=3g.40gb mem=42949672960 uuid=MIG-3g\n"
      "instance 0 gi=5 ci=0 profile=2g.20gb mem=21474836480 uuid=MIG-2g\n"
      "instance 0 gi=9 ci=0 profile=1g.10gb mem=10737418240 uuid=MIG-1a\n"
      "instance 0 gi=10 ci=0 profile=1g.10gb mem=10737418240 uuid=MIG-1b\n"
      "process 0 pid=991001 mem=4096 gi=1 ci=0\nprocess 0 pid=991002 mem=8192 gi=10 ci=0\n"
      "process 1 pid=991003 mem=2048\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(count_of(v, "gpu_mig_info"), 4u);
  EXPECT_EQ(v.at("gpu_mig_memory_total_bytes{0|" + mig("MIG-3g", "3g.40gb", 1, 0) + "}"), 42949672960.0);
  EXPECT_EQ(v.at("gpu_mig_memory_total_bytes{0|" + mig("MIG-2g", "2g.20gb", 5, 0) + "}"), 21474836480.0);
  // A process's own labels and its instance's, one set in name order.
  auto process = [](const char* pid, const MigIdentity& instance) {
    Labels l{{"pid", pid}, {"namespace", ""}, {"pod", ""}, {"container", ""}};
    l.merge(mig_labels(instance));
    return l.render();
  };
  EXPECT_EQ(v.at("gpu_process_memory_used_bytes{0|" +
                 process("991001", {.uuid = "MIG-3g", .profile = "3g.40gb", .gpu_instance = 1, .compute_instance = 0}) +
                 "}"),
            4096);
  EXPECT_EQ(v.at("gpu_process_memory_used_bytes{0|" +
                 process("991002", {.uuid = "MIG-1b", .profile = "1g.10gb", .gpu_instance = 10, .compute_instance = 0}) +
                 "}"),
            8192);
  const std::string none = "container=\"\",namespace=\"\"";
  EXPECT_EQ(count_of(v, "gpu_process_memory_used_bytes"), 3u);  // each process once, in its own instance
  // GPU 1 has no MIG: no MIG series, its process as before.
  EXPECT_EQ(v.at("gpu_process_memory_used_bytes{1|" + none + ",pid=\"991003\",pod=\"\"}"), 2048);
  for (const auto& [k, x] : v) EXPECT_FALSE(k.starts_with("gpu_mig_") && k.find("{1|") != std::string::npos) << k;
}

TEST(Mig, PendingModeIsReportedAndTheGpuStaysWhole) {
  Harness h("gpu 0 uuid=GPU-aaaa gpm=off\nmig 0 mode=off pending=on\nvalue 0 util_gpu 40\n"
            "instance 0 gi=1 ci=0 profile=7g.80gb\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v.at("gpu_mig_mode{0|state=\"current\"}"), 0);
  EXPECT_EQ(v.at("gpu_mig_mode{0|state=\"pending\"}"), 1);
  EXPECT_EQ(count_of(v, "gpu_mig_info"), 0u);  // instances exist only once MIG is on
  EXPECT_DOUBLE_EQ(v.at("gpu_utilization_ratio{0|}"), 0.40);
  bool told = false;
  for (const std::string& n : h.src->notices()) told |= n.find("pending enabled") != std::string::npos;
  EXPECT_TRUE(told);
}

TEST(Mig, AnInstanceThatGoesAwayLeavesAtTheNextDiscovery) {
  Harness h("gpu 0 uuid=GPU-aaaa gpm=off\nmig 0 mode=on\n"
            "instance 0 gi=1 ci=0 profile=4g.40gb uuid=MIG-4g\ninstance 0 gi=2 ci=0 profile=3g.40gb uuid=MIG-3g\n"
            "error 0 mig.2.0.uuid NOT_FOUND from=2\n",
            /*slow_interval_ms=*/0);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(count_of(v, "gpu_mig_info"), 2u);
  v = h.sample();
  EXPECT_EQ(count_of(v, "gpu_mig_info"), 1u);
  EXPECT_TRUE(v.contains("gpu_mig_info{0|" + mig("MIG-4g", "4g.40gb", 1, 0) + "}"));
}

// dcgm-exporter keys a MIG device's pod by its GPU instance: the kubelet's
// owner of a MIG device labels that instance's DCGM series, and only it.
TEST(Mig, TheKubeletOwnerOfAMigDeviceIsItsInstancesPod) {
  pod_directory().replace({{"nvidia.com/mig-1g.10gb", "MIG-1b", "serve", "vllm-0", "server"}});
  Harness h(
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa gpm=off\nmig 0 mode=on\n"
      "instance 0 gi=9 ci=0 profile=1g.10gb mem=10737418240 uuid=MIG-1a\n"
      "instance 0 gi=10 ci=0 profile=1g.10gb mem=10737418240 uuid=MIG-1b\n"
      "process 0 pid=991002 mem=8192 gi=10 ci=0\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  h.sample();
  {
    std::lock_guard lock(h.reg.mutex());
    EXPECT_EQ(h.reg.dcgm_mig_parts(0, 10).container, ",container=\"server\"");
    EXPECT_EQ(h.reg.dcgm_mig_parts(0, 10).namespace_pod, ",namespace=\"serve\",pod=\"vllm-0\"");
    EXPECT_TRUE(h.reg.dcgm_mig_parts(0, 9).container.empty());
  }
  pod_directory().clear();
  h.sample();
  std::lock_guard lock(h.reg.mutex());
  EXPECT_TRUE(h.reg.dcgm_mig_parts(0, 10).container.empty());  // released: no pod
}

TEST(Mig, GpusWithoutMigHaveNoMigSeries) {
  Harness h("gpu 0 uuid=GPU-aaaa gpm=off\nprocess 0 pid=991004 mem=1024\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  for (const auto& [k, x] : v) EXPECT_FALSE(k.starts_with("gpu_mig_")) << k;
  EXPECT_EQ(v.at("gpu_process_memory_used_bytes{0|container=\"\",namespace=\"\",pid=\"991004\",pod=\"\"}"), 1024);
}

}  // namespace
}  // namespace gpulens
