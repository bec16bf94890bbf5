// The NVML source end to end through the real loader and the stand-in
// libnvidia-ml.so.1: unit conversions, rates and counters, faults,
// processes and pods, topology, XID events, old drivers.
#include "sources/nvml/nvml_source.h"
#include "sources/kubelet/pod_directory.h"
#include "util/testing/temp_dir.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

namespace gpulens {
namespace {

const std::string kData = std::string(GPULENS_SOURCE_DIR) + "/tests/data/nvml/";

NvmlOptions options(const char* library = GPULENS_FAKE_NVML) {
  NvmlOptions o;
  o.library = library;
  o.proc_root = kData + "proc";
  o.kubelet_root = kData + "kubelet";
  o.sys_root = "/nonexistent";
  o.call_deadline_ms = 5000;
  o.xid_wait_ms = 20;
  return o;
}

// This process's own directory (ctest runs each test in a process of its
// own), removed at exit: the scripts stay readable while the test runs.
const std::string& own_dir() {
  static const testing::TestDir dir;
  return dir.path();
}

void use_script(const std::string& text) {
  const std::string path = own_dir() + "/nvml_script.txt";
  std::ofstream(path) << text;
  setenv("GPULENS_FAKE_NVML_SCRIPT", path.c_str(), 1);
}

// "name{gpu|extra}" -> value for every value in the frame.
std::map<std::string, double> values(const Frame& f) {
  std::map<std::string, double> out;
  for (const auto& v : f.values()) {
    const Series& s = f.registry().series(v.slot);
    out[std::string(field(s.field).name) + "{" + std::to_string(s.gpu) + "|" + s.extra.render() + "}"] = v.value;
  }
  return out;
}

struct Harness {
  SeriesRegistry reg;
  Frame frame{reg};
  std::unique_ptr<NvmlSource> src;
  explicit Harness(const std::string& script, NvmlOptions o = options()) {
    use_script(script);
    src = std::make_unique<NvmlSource>(std::move(o));
  }
  std::map<std::string, double> sample(Status* st = nullptr) {
    frame.clear(0);
    Status s = src->sample(frame);
    if (st != nullptr) *st = s;
    else EXPECT_TRUE(s.is_ok()) << s.message();
    return values(frame);
  }
};

const char* kOneGpu = "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa serial=1650123 gpm=off\n";

TEST(NvmlSource, NoDriverIsNotApplicable) {
  Harness h(kOneGpu, [] { auto o = options(); o.library = "/nonexistent/libnvidia-ml.so.1"; return o; }());
  Status s = h.src->open(h.reg);
  EXPECT_EQ(s.code(), Code::kNotApplicable);
  EXPECT_EQ(s.message().find('\n'), std::string::npos);  // one line
}

TEST(NvmlSource, DriverNotLoadedIsNotApplicable) {
  Harness h("init DRIVER_NOT_LOADED\n");
  EXPECT_EQ(h.src->open(h.reg).code(), Code::kNotApplicable);
}

TEST(NvmlSource, CoreFieldsInCatalogUnits) {
  Harness h(std::string(kOneGpu) +
            "value 0 util_gpu 73\nvalue 0 util_mem 12\nvalue 0 power_mw 350500\nvalue 0 power_limit_mw 700000\n"
            "value 0 energy_mj 5000\nvalue 0 sm_clock 1755\nvalue 0 mem_clock_max 2619\nvalue 0 temp 61\n"
            "value 0 field.82 70\nvalue 0 clock_events 36\nvalue 0 field.74 1500000000\n"
            "value 0 pcie_gen 4\nvalue 0 pcie_width 8\nvalue 0 pcie_replays 7\nvalue 0 ecc_uncorrected 2\n"
            "value 0 remap_cor 3\nvalue 0 remap_failure 1\nvalue 0 pstate 2\n"
            "value 0 mem_total 1000\nvalue 0 mem_reserved 100\nvalue 0 mem_used 300\nvalue 0 mem_free 600\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  ASSERT_EQ(h.reg.gpu(0)->uuid, "GPU-aaaa");
  auto v = h.sample();
  EXPECT_DOUBLE_EQ(v["gpu_utilization_ratio{0|}"], 0.73);
  EXPECT_DOUBLE_EQ(v["gpu_memory_util_ratio{0|}"], 0.12);
  EXPECT_DOUBLE_EQ(v["gpu_power_watts{0|}"], 350.5);
  EXPECT_DOUBLE_EQ(v["gpu_power_limit_watts{0|}"], 700);
  EXPECT_DOUBLE_EQ(v["gpu_energy_joules_total{0|}"], 5);
  EXPECT_DOUBLE_EQ(v["gpu_sm_clock_hertz{0|}"], 1755e6);
  EXPECT_DOUBLE_EQ(v["gpu_memory_clock_max_hertz{0|}"], 2619e6);
  EXPECT_DOUBLE_EQ(v["gpu_temperature_celsius{0|}"], 61);
  EXPECT_DOUBLE_EQ(v["gpu_memory_temperature_celsius{0|}"], 70);
  EXPECT_DOUBLE_EQ(v["gpu_memory_total_bytes{0|}"], 1000);
  EXPECT_DOUBLE_EQ(v["gpu_memory_used_bytes{0|}"], 300);  // v2: reserved not included
  EXPECT_DOUBLE_EQ(v["gpu_memory_reserved_bytes{0|}"], 100);
  EXPECT_DOUBLE_EQ(v["gpu_memory_free_bytes{0|}"], 600);
  EXPECT_DOUBLE_EQ(v["gpu_clock_event_reasons{0|}"], 36);
  EXPECT_EQ(v["gpu_clock_event_active{0|reason=\"sw_power_cap\"}"], 1);  // 0x4
  EXPECT_EQ(v["gpu_clock_event_active{0|reason=\"sw_thermal\"}"], 1);    // 0x20
  EXPECT_EQ(v.at("gpu_clock_event_active{0|reason=\"hw_slowdown\"}"), 0);
  EXPECT_DOUBLE_EQ(v["gpu_clock_event_seconds_total{0|reason=\"sw_power_cap\"}"], 1.5);
  EXPECT_FALSE(v.contains("gpu_clock_event_seconds_total{0|reason=\"sync_boost\"}"));  // not scripted: unsupported
  EXPECT_EQ(v["gpu_pcie_link_generation{0|}"], 4);
  EXPECT_EQ(v["gpu_pcie_link_generation_max{0|}"], 5);
  EXPECT_EQ(v["gpu_pcie_link_width{0|}"], 8);
  EXPECT_EQ(v["gpu_pcie_replays_total{0|}"], 7);
  EXPECT_EQ(v["gpu_ecc_errors_total{0|type=\"uncorrected\"}"], 2);
  EXPECT_EQ(v["gpu_remapped_rows_total{0|cause=\"correctable\"}"], 3);
  EXPECT_EQ(v["gpu_row_remap_failure{0|}"], 1);
  EXPECT_EQ(v["gpu_pstate{0|}"], 2);
  EXPECT_EQ(v["gpu_up{0|}"], 1);
  EXPECT_EQ(v["gpu_info{0|driver=\"550.54.15\",model=\"NVIDIA H100 80GB HBM3\",pci_bus_id=\"00000000:18:00.0\","
              "serial=\"1650123\"}"],
            1);
  EXPECT_FALSE(v.contains("gpu_sm_active_ratio{0|}"));  // no GPM on this GPU
}

TEST(NvmlSource, CalibrationFileGivesThePeakAndTheRecordedLink) {
  const testing::TestDir dir;
  const std::string cal = dir.file("cal.json");
  std::ofstream(cal) << R"({"gpus":[{"uuid":"GPU-aaaa","pcie_rx_bytes_per_second":5.5e10,)"
                        R"("pcie_tx_bytes_per_second":5.2e10,"link_gen":5,"link_width":16}]})";
  auto o = options();
  o.calibration_file = cal;
  Harness h(std::string(kOneGpu) + "value 0 pcie_width 8\nvalue 0 pcie_rx_kbs 26855468\n", o);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_DOUBLE_EQ(v["gpu_pcie_peak_bytes_per_second{0|basis=\"calibrated\",direction=\"rx\"}"], 5.5e10);
  EXPECT_DOUBLE_EQ(v["gpu_pcie_peak_bytes_per_second{0|basis=\"calibrated\",direction=\"tx\"}"], 5.2e10);
  EXPECT_NEAR(v["gpu_pcie_rx_bandwidth_util_ratio{0|}"], 0.5, 1e-6);
  EXPECT_EQ(v["gpu_pcie_link_generation_calibrated{0|}"], 5);
  EXPECT_EQ(v["gpu_pcie_link_width_calibrated{0|}"], 16);
  EXPECT_EQ(v["gpu_pcie_link_width{0|}"], 8);
}

TEST(NvmlSource, NotSupportedIsAbsentNotZero) {
  Harness h(std::string(kOneGpu) + "error 0 power_mw NOT_SUPPORTED\nerror 0 temp FUNCTION_NOT_FOUND\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  for (int i = 0; i < 2; ++i) {
    auto v = h.sample();
    EXPECT_FALSE(v.contains("gpu_power_watts{0|}"));
    EXPECT_FALSE(v.contains("gpu_temperature_celsius{0|}"));
    EXPECT_TRUE(v.contains("gpu_power_limit_watts{0|}"));
  }
}

TEST(NvmlSource, GpmRatiosAndPcieRatesIntegrated) {
  Harness h("gpu 0 name=\"NVIDIA H100 80GB HBM3\" arch=9 gpm=on\n"
            "value 0 gpm.2 64\nvalue 0 gpm.3 25\nvalue 0 gpm.5 40\nvalue 0 gpm.10 75\nvalue 0 gpm.11 1\n"
            "value 0 gpm.12 20\nvalue 0 gpm.13 5\nvalue 0 gpm.20 1024\nvalue 0 gpm.21 30720\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();  // primes the two GPM buffers
  EXPECT_FALSE(v.contains("gpu_sm_active_ratio{0|}"));
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  v = h.sample();
  EXPECT_DOUBLE_EQ(v["gpu_sm_active_ratio{0|}"], 0.64);
  EXPECT_DOUBLE_EQ(v["gpu_sm_occupancy_ratio{0|}"], 0.25);
  EXPECT_DOUBLE_EQ(v["gpu_tensor_core_util_ratio{0|}"], 0.40);
  EXPECT_DOUBLE_EQ(v["gpu_mem_bandwidth_util_ratio{0|}"], 0.75);
  EXPECT_DOUBLE_EQ(v["gpu_fp64_pipe_active_ratio{0|}"], 0.01);
  EXPECT_DOUBLE_EQ(v["gpu_fp16_pipe_active_ratio{0|}"], 0.05);
  EXPECT_DOUBLE_EQ(v["gpu_pcie_tx_bytes_per_second{0|}"], 1024.0 * 1048576);
  const double rx = 30720.0 * 1048576;  // 30 GiB/s
  EXPECT_DOUBLE_EQ(v["gpu_pcie_rx_bytes_per_second{0|}"], rx);
  const double peak = 32e9 * 128 / 130 / 8 * 16;  // Gen5 x16 (the stand-in's max link)
  EXPECT_DOUBLE_EQ(v["gpu_pcie_peak_bytes_per_second{0|basis=\"link\",direction=\"rx\"}"], peak);
  EXPECT_NEAR(v["gpu_pcie_rx_bandwidth_util_ratio{0|}"], rx / peak, 1e-12);
  // The counter grows by rate x elapsed time, never by "last value".
  const double total1 = v["gpu_pcie_rx_bytes_total{0|}"];
  EXPECT_GT(total1, rx * 0.1);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  v = h.sample();
  EXPECT_GT(v["gpu_pcie_rx_bytes_total{0|}"], total1 + rx * 0.1);
}

TEST(NvmlSource, GpmBuffersAllocatedOnceNotPerScrape) {
  Harness h("gpu 0 arch=9\ngpu 1 arch=9\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  void* lib = dlopen(GPULENS_FAKE_NVML, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  auto allocs = reinterpret_cast<long (*)()>(dlsym(lib, "gpulensFakeGpmAllocations"));
  ASSERT_NE(allocs, nullptr);
  const long after_open = allocs();
  for (int i = 0; i < 4; ++i) {
    h.sample();
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
  }
  EXPECT_EQ(allocs(), after_open);
  dlclose(lib);
}

TEST(NvmlSource, PcieRatesFromByteCountersWithoutGpm) {
  Harness h(std::string(kOneGpu) + "value 0 field.197 1000 1000000001000\nvalue 0 field.198 0 0\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_FALSE(v.contains("gpu_pcie_tx_bytes_per_second{0|}"));  // one reading is no rate
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  v = h.sample();
  EXPECT_GT(v["gpu_pcie_tx_bytes_per_second{0|}"], 1e12 / 1.0);  // 1e12 bytes in well under a second
  EXPECT_NEAR(v["gpu_pcie_tx_bytes_total{0|}"], 1e12, 1e3);       // integration gives the delta back
  EXPECT_EQ(v["gpu_pcie_rx_bytes_per_second{0|}"], 0);
}

TEST(NvmlSource, PcieThroughputKiloBytesAsLastResort) {
  Harness h(std::string(kOneGpu) + "value 0 pcie_tx_kbs 1000\nvalue 0 pcie_rx_kbs 2000\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  h.sample();  // learns that fields 197/198 are unsupported
  auto v = h.sample();
  EXPECT_DOUBLE_EQ(v["gpu_pcie_tx_bytes_per_second{0|}"], 1000 * 1024.0);
  EXPECT_DOUBLE_EQ(v["gpu_pcie_rx_bytes_per_second{0|}"], 2000 * 1024.0);
}

TEST(NvmlSource, LostGpuIsDownWhileOthersReport) {
  Harness h("gpu 0 gpm=off\ngpu 1 gpm=off\nlost 1 at=2\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v["gpu_up{1|}"], 1);
  Status st;
  v = h.sample(&st);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v["gpu_up{1|}"], 0);
  EXPECT_FALSE(v.contains("gpu_power_watts{1|}"));
  EXPECT_EQ(v["gpu_up{0|}"], 1);
  EXPECT_TRUE(v.contains("gpu_power_watts{0|}"));
}

TEST(NvmlSource, AllGpusLostFailsTheSample) {
  Harness h("gpu 0 gpm=off\nlost 0 at=1\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  Status st;
  auto v = h.sample(&st);
  EXPECT_EQ(st.code(), Code::kUnavailable);
  EXPECT_NE(st.message().find("GPU_IS_LOST"), std::string::npos);
  EXPECT_EQ(v["gpu_up{0|}"], 0);
}

TEST(NvmlSource, GpmNoPermissionReportedOnceWithTheFix) {
  Harness h("gpu 0 arch=9\nerror 0 gpm_sample NO_PERMISSION from=2\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  for (int i = 0; i < 4; ++i) {
    auto v = h.sample();
    EXPECT_FALSE(v.contains("gpu_sm_active_ratio{0|}"));
    EXPECT_EQ(v["gpu_up{0|}"], 1);  // the GPU itself is fine
    std::this_thread::sleep_for(std::chrono::milliseconds(110));
  }
  auto n = h.src->notices();
  ASSERT_EQ(n.size(), 1u);
  EXPECT_NE(n[0].find("NVML_ERROR_NO_PERMISSION"), std::string::npos);
  EXPECT_NE(n[0].find("privileged"), std::string::npos);
}

TEST(NvmlSource, HangingCallNeverHangsTheSample) {
  auto o = options();
  o.call_deadline_ms = 100;
  Harness h(std::string(kOneGpu) + "hang 0 power_mw 600 times=1\n", o);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  Status st;
  h.sample(&st);
  EXPECT_EQ(st.code(), Code::kDeadline);
  h.sample(&st);  // still stuck: answered at once, not queued
  EXPECT_EQ(st.code(), Code::kDeadline);
  EXPECT_NE(st.message().find("still running"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  auto v = h.sample(&st);  // the call returned: collections resume
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v["gpu_power_watts{0|}"], 300);
}

TEST(NvmlSource, ProcessesCarryPodIdentityAndAffinity) {
  Harness h(std::string(kOneGpu) + "process 0 pid=4242 mem=1073741824 sm=37\nprocess 0 pid=4243 mem=2048 sm=0\n"
            "process 0 pid=99999 mem=4096\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  std::map<std::string, double> v;
  for (int i = 0; i < 3; ++i) v = h.sample();
  const std::string pod = "container=\"trainer\",namespace=\"ml-team\",pid=\"4242\",pod=\"trainer-0\"";
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|" + pod + "}"], 1073741824);
  EXPECT_DOUBLE_EQ(v["gpu_process_sm_util_ratio{0|" + pod + "}"], 0.37);
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|container=\"\",namespace=\"\",pid=\"4243\",pod=\"\"}"], 2048);
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|container=\"\",namespace=\"\",pid=\"99999\",pod=\"\"}"], 4096);
  EXPECT_EQ(v["host_gpu_process_affinity_info{-1|cpus=\"32-63\",gpu=\"0\",numa_nodes=\"1\",pid=\"4243\"}"], 1);
  EXPECT_EQ(h.src->process_resolutions(), 2u);  // three collections, each process resolved once
  // The GPU's one pod labels its dcgm-exporter series, after the label rows.
  std::lock_guard lock(h.reg.mutex());
  EXPECT_TRUE(h.reg.dcgm_labels(0).ends_with(",container=\"trainer\",namespace=\"ml-team\",pod=\"trainer-0\""))
      << h.reg.dcgm_labels(0);
  EXPECT_NE(h.reg.dcgm_labels(0).find(",device=\"nvidia"), std::string::npos);
}

// Inside the agent's pod the kubelet's pods/ directory is not mounted: the
// cgroup gives only the pod UID. The kubelet source's directory names it,
// when one container holds the process's GPU.
TEST(NvmlSource, PodProcessesAreNamedFromTheKubeletDirectory) {
  auto o = options();
  o.kubelet_root = "/nonexistent";
  Harness h(std::string(kOneGpu) + "process 0 pid=4242 mem=1073741824 sm=37\nprocess 0 pid=4243 mem=2048 sm=0\n", o);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  const std::string uid = "container=\"3f2a9c1b7d4e\",namespace=\"\",pid=\"4242\",pod=\"0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b\"";
  pod_directory().clear();
  auto v = h.sample();
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|" + uid + "}"], 1073741824);

  // Shared between two pods: which one the PID is in is unknown, so unnamed.
  pod_directory().replace({{"nvidia.com/gpu.shared", "GPU-aaaa", "lab", "nb-a", "jupyter"},
                           {"nvidia.com/gpu.shared", "GPU-aaaa", "lab", "nb-b", "jupyter"}});
  v = h.sample();
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|" + uid + "}"], 1073741824);

  pod_directory().replace({{"nvidia.com/gpu", "GPU-aaaa", "ml-team", "trainer-0", "trainer"}});
  v = h.sample();
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|container=\"trainer\",namespace=\"ml-team\",pid=\"4242\",pod=\"trainer-0\"}"],
            1073741824);
  EXPECT_EQ(v.count("gpu_process_memory_used_bytes{0|" + uid + "}"), 0u);
  // A host process (no pod) is never given the GPU's pod.
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|container=\"\",namespace=\"\",pid=\"4243\",pod=\"\"}"], 2048);
  {
    // The kubelet's owner labels the GPU's dcgm-exporter series.
    std::lock_guard lock(h.reg.mutex());
    EXPECT_TRUE(h.reg.dcgm_labels(0).ends_with(",container=\"trainer\",namespace=\"ml-team\",pod=\"trainer-0\""))
        << h.reg.dcgm_labels(0);
  }
  pod_directory().clear();
}

TEST(NvmlSource, SlowTierIsReadEveryIntervalAndReplayedBetween) {
  const std::string text = std::string(kOneGpu) +
                           "value 0 energy_mj 5000 9000 13000\nvalue 0 ecc_corrected 1 2 3\nvalue 0 power_mw 100000 "
                           "200000 300000\nprocess 0 pid=4242 mem=1073741824 sm=37\n";
  auto o = options();
  o.slow_interval_ms = 3600000;
  {
    Harness h(text, o);
    ASSERT_TRUE(h.src->open(h.reg).is_ok());
    auto v = h.sample();
    EXPECT_EQ(v["gpu_energy_joules_total{0|}"], 5);
    v = h.sample();
    EXPECT_EQ(v["gpu_power_watts{0|}"], 200);            // fast tier: read again
    EXPECT_EQ(v["gpu_energy_joules_total{0|}"], 5);      // slow tier: the first reading, replayed
    EXPECT_EQ(v["gpu_ecc_errors_total{0|type=\"corrected\"}"], 1);
    const std::string pod = "container=\"trainer\",namespace=\"ml-team\",pid=\"4242\",pod=\"trainer-0\"";
    EXPECT_DOUBLE_EQ(v["gpu_process_sm_util_ratio{0|" + pod + "}"], 0.37);  // the SM share is slow, the list is not
    EXPECT_EQ(v["gpu_process_memory_used_bytes{0|" + pod + "}"], 1073741824);
    bool age = false;
    for (const auto& [k, val] : v) age |= k.starts_with("gpulens_sample_age_seconds{") && k.ends_with("tier=\"slow\"}");
    EXPECT_TRUE(age) << "no staleness of the slow tier";
  }  // the stand-in restarts its call counts once no NVML user is left

  o.slow_interval_ms = 0;  // everything every collection
  Harness every(text, o);
  ASSERT_TRUE(every.src->open(every.reg).is_ok());
  every.sample();
  auto v = every.sample();
  EXPECT_EQ(v["gpu_energy_joules_total{0|}"], 9);
  EXPECT_EQ(v["gpu_ecc_errors_total{0|type=\"corrected\"}"], 2);
  for (const auto& [k, val] : v) EXPECT_FALSE(k.ends_with("tier=\"slow\"}")) << k;
}

TEST(NvmlSource, TopologyNumaAndAffinity) {
  Harness h("gpu 0 gpm=off\ngpu 1 gpm=off\ngpu 2 gpm=off\n"
            "nvlink 0 link=0 peer=1\nnvlink 0 link=1 peer=1\nnvlink 1 link=0 peer=0\nnvlink 1 link=1 peer=0\n"
            "topology 0 2 SYS\ntopology 1 2 PIX\nvalue 2 mem_affinity 2\nvalue 2 cpu_affinity 4294901760\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v["gpu_topology_info{0|path=\"NVLINK\",peer=\"1\"}"], 1);
  EXPECT_EQ(v["gpu_topology_info{0|path=\"SYS\",peer=\"2\"}"], 1);
  EXPECT_EQ(v["gpu_topology_info{2|path=\"PIX\",peer=\"1\"}"], 1);
  EXPECT_EQ(v["gpu_numa_node{0|}"], 0);
  EXPECT_EQ(v["gpu_numa_node{2|}"], 1);
  EXPECT_EQ(v["gpu_cpu_affinity_info{2|cpus=\"16-31\"}"], 1);
  EXPECT_EQ(v["gpu_nvlink_link_up{0|link=\"1\"}"], 1);
  EXPECT_EQ(v["gpu_nvlink_link_up{0|link=\"2\"}"], 0);
  EXPECT_FALSE(v.contains("gpu_nvlink_link_up{2|link=\"0\"}"));  // GPU 2 has no NVLink
}

TEST(NvmlSource, NvlinkCountersPerLinkInBytes) {
  Harness h("gpu 0 gpm=off\ngpu 1 gpm=off\nnvlink 0 link=0 peer=1\nnvlink 1 link=0 peer=0\n"
            "value 0 field.138.0 1000 2000\nvalue 0 field.139.0 10 10\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v["gpu_nvlink_tx_bytes_total{0|link=\"0\"}"], 1000 * 1024.0);  // KiB counters
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  v = h.sample();
  EXPECT_EQ(v["gpu_nvlink_tx_bytes_total{0|link=\"0\"}"], 2000 * 1024.0);
  EXPECT_GT(v["gpu_nvlink_tx_bytes_per_second{0|}"], 0);
  EXPECT_EQ(v["gpu_nvlink_rx_bytes_per_second{0|}"], 0);
  EXPECT_GT(v["gpu_nvlink_bandwidth_util_ratio{0|}"], 0);  // against 25781 MBps on the active link
}

TEST(NvmlSource, NvlinkRecoveryCountsAndRepairStatusWhereTheDriverHasThem) {
  // GPU 0: an NVLink5 GPU on a current driver; GPU 1: NVLink, but the driver
  // answers NOT_SUPPORTED for fields 213-215 and has no repair status.
  auto o = options();
  o.slow_interval_ms = 0;  // every collection reads the slow tier
  Harness h("gpu 0 gpm=off\ngpu 1 gpm=off\nnvlink 0 link=0 peer=1\nnvlink 1 link=0 peer=0\n"
            "value 0 nvlink_recovery_successful 3 4\nvalue 0 nvlink_recovery_failed 0 1\n"
            "value 0 nvlink_recovery_events 3 5\nvalue 0 repair_channel 0 1\nvalue 0 repair_tpc 0\n",
            o);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v["gpu_nvlink_link_recoveries_total{0|result=\"successful\"}"], 3);
  EXPECT_EQ(v["gpu_nvlink_link_recoveries_total{0|result=\"failed\"}"], 0);
  EXPECT_EQ(v["gpu_nvlink_link_recovery_events_total{0|}"], 3);
  EXPECT_EQ(v["gpu_repair_pending{0|repair=\"channel\"}"], 0);
  EXPECT_EQ(v["gpu_repair_pending{0|repair=\"tpc\"}"], 0);
  v = h.sample();
  EXPECT_EQ(v["gpu_nvlink_link_recoveries_total{0|result=\"failed\"}"], 1);  // a link declared down
  EXPECT_EQ(v["gpu_nvlink_link_recovery_events_total{0|}"], 5);
  EXPECT_EQ(v["gpu_repair_pending{0|repair=\"channel\"}"], 1);
  // Unsupported is absent, not zero.
  for (const auto& [k, val] : v) {
    if (k.find("{1|") == std::string::npos) continue;
    EXPECT_FALSE(k.starts_with("gpu_nvlink_link_recover")) << k;
    EXPECT_FALSE(k.starts_with("gpu_repair_pending")) << k;
  }
}

TEST(NvmlSource, OldDriverHasNoRepairStatusAndNoNvlinkRecoveryCounts) {
  auto o = options(GPULENS_FAKE_NVML_OLD);
  o.slow_interval_ms = 0;
  // Scripted values the old library never hands out: it lacks the call and the fields' keys are not asked for.
  Harness h("gpu 0 gpm=off\nvalue 0 repair_channel 1\nvalue 0 repair_tpc 1\n", o);
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  const auto v = h.sample();
  EXPECT_TRUE(v.contains("gpu_up{0|}"));
  for (const auto& [k, val] : v) {
    EXPECT_FALSE(k.starts_with("gpu_repair_pending")) << k;
    EXPECT_FALSE(k.starts_with("gpu_nvlink_link_recover")) << k;
  }
}

TEST(NvmlSource, XidEventsCountedPerCode) {
  Harness h("gpu 0 gpm=off\ngpu 1 gpm=off\nxid 1 79\nxid 1 79\nxid 1 48\n");
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  std::map<std::string, double> v;
  for (int i = 0; i < 100 && v["gpu_xid_errors_total{1|xid=\"48\"}"] == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    v = h.sample();
  }
  EXPECT_EQ(v["gpu_xid_errors_total{1|xid=\"79\"}"], 2);
  EXPECT_EQ(v["gpu_xid_errors_total{1|xid=\"48\"}"], 1);
  EXPECT_EQ(v["gpu_last_xid{1|}"], 48);
  EXPECT_GT(v["gpu_last_xid_timestamp_seconds{1|}"], 1.6e9);
  EXPECT_FALSE(v.contains("gpu_last_xid{0|}"));
}

TEST(NvmlSource, OldDriverFallbacks) {
  Harness h("gpu 0 arch=9\nvalue 0 mem_total 1000\nvalue 0 mem_reserved 100\nvalue 0 mem_used 300\n"
            "value 0 mem_free 600\nvalue 0 clock_events 1\nprocess 0 pid=4242 mem=111\nprocess 0 pid=4243 mem=222\n",
            options(GPULENS_FAKE_NVML_OLD));
  ASSERT_TRUE(h.src->open(h.reg).is_ok());
  auto v = h.sample();
  EXPECT_EQ(v["gpu_memory_used_bytes{0|}"], 400);  // v1 counts reserved as used
  EXPECT_FALSE(v.contains("gpu_memory_reserved_bytes{0|}"));
  EXPECT_EQ(v["gpu_clock_event_active{0|reason=\"gpu_idle\"}"], 1);  // through the Throttle name
  EXPECT_FALSE(v.contains("gpu_sm_active_ratio{0|}"));
  // 32-byte process elements of early R535 drivers are read correctly.
  EXPECT_EQ(v["gpu_process_memory_used_bytes{0|container=\"\",namespace=\"\",pid=\"4243\",pod=\"\"}"], 222);
}

}  // namespace
}  // namespace gpulens
