// `gpulens calibrate` end to end through the real loaders and the stand-in
// libcuda.so.1 / libnvidia-ml.so.1: the sweep and its median, bidirectional
// copies, matching CUDA to NVML by UUID and PCI address, refusing a busy
// GPU, failures (no device, out of memory, a device failing mid-run), peer
// copies, the file the agent reads, and --check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "calibrate/calibrate.h"
#include "calibrate/report.h"
#include "sources/nvml/pcie_peak.h"
#include "util/testing/temp_dir.h"

namespace gpulens {
namespace {

constexpr const char* kUuid0 = "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52";
constexpr const char* kUuid1 = "GPU-11111111-2222-3333-4444-555555555555";

// This process's own directory (ctest runs each test in a process of its
// own), removed at exit: the scripts stay readable while the test runs.
const std::string& own_dir() {
  static const testing::TestDir dir;
  return dir.path();
}

void script(const char* env, const std::string& name, const std::string& text) {
  const std::string path = own_dir() + "/" + name + ".txt";
  std::ofstream(path) << text;
  setenv(env, path.c_str(), 1);
}

// Two NVML GPUs; CUDA lists them in the other order (FASTEST_FIRST).
void two_gpus(const std::string& nvml_extra = "", const std::string& cuda_extra = "") {
  script("GPULENS_FAKE_NVML_SCRIPT", "nvml",
         std::string("gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=") + kUuid0 + " pci=00000000:18:00.0 gpm=off\n" +
             "gpu 1 name=\"NVIDIA H100 80GB HBM3\" uuid=" + kUuid1 + " pci=00000000:2A:00.0 gpm=off\n" + nvml_extra);
  script("GPULENS_FAKE_CUDA_SCRIPT", "cuda",
         std::string("device 0 uuid=") + kUuid1 + " pci=0000:2a:00.0\n" + "device 1 uuid=" + kUuid0 +
             " pci=0000:18:00.0\n" +
             "bandwidth 1 h2d 1048576=2e10 4194304=5.5e10\nbandwidth 1 d2h 1048576=2e10 4194304=5.2e10\n"
             "bandwidth 1 bidir_h2d 4194304=4.5e10\nbandwidth 1 bidir_d2h 4194304=4.4e10\n"
             "bandwidth 0 h2d 4194304=2.6e10\nbandwidth 0 d2h 4194304=2.5e10\n" +
             cuda_extra);
}

CalibrateOptions options() {
  CalibrateOptions o;
  o.cuda_library = GPULENS_FAKE_CUDA;
  o.nvml_library = GPULENS_FAKE_NVML;
  o.sweep.sizes = {1u << 20, 4u << 20};
  o.sweep.copies = 2;
  o.sweep.samples = 5;
  return o;
}

TEST(Calibrate, MedianOfSamples) {
  EXPECT_EQ(median({}), 0);
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({1, 1, 100}), 1);
}

TEST(Calibrate, SweepKeepsTheBestMedianPerDirection) {
  two_gpus();
  auto run = run_calibration(options(), "1.2.3");
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->gpus.size(), 2u);
  const GpuCalibration& g = run->gpus[0];
  ASSERT_TRUE(g.status.is_ok()) << g.status.message();
  EXPECT_EQ(g.uuid, kUuid0);
  EXPECT_EQ(g.cuda_ordinal, 1);  // matched by UUID, not by index
  ASSERT_EQ(g.h2d.points.size(), 2u);
  EXPECT_NEAR(g.h2d.points[0].bytes_per_second, 2e10, 2e10 * 1e-5);
  EXPECT_NEAR(g.h2d.peak, 5.5e10, 5.5e10 * 1e-5);
  EXPECT_EQ(g.h2d.peak_bytes, 4u << 20);
  EXPECT_NEAR(g.d2h.peak, 5.2e10, 5.2e10 * 1e-5);
  EXPECT_NEAR(g.bidir_h2d.peak, 4.5e10, 4.5e10 * 1e-5);
  EXPECT_NEAR(g.bidir_d2h.peak, 4.4e10, 4.4e10 * 1e-5);
  EXPECT_NEAR(run->gpus[1].h2d.peak, 2.6e10, 2.6e10 * 1e-5);
  EXPECT_EQ(g.link_gen, 5u);
  EXPECT_EQ(g.link_width, 16u);
  EXPECT_EQ(g.cpus, "0-15");
  EXPECT_FALSE(g.under_load);
  EXPECT_EQ(run->tool_version, "1.2.3");
  EXPECT_EQ(run->cuda_driver, 12060);
}

TEST(Calibrate, OneFastOutlierDoesNotMoveTheMedian) {
  // One copy per sample; the warm-up copy takes the first factor. The 4th
  // sample runs 4x faster: the mean would rise by 60 %, the median not at all.
  two_gpus("", "jitter 1 h2d 1 1 1 1 0.25 1\n");
  auto o = options();
  o.sweep.sizes = {4u << 20};
  o.sweep.copies = 1;
  o.peers = false;
  auto run = run_calibration(o, "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_NEAR(run->gpus[0].h2d.peak, 5.5e10, 5.5e10 * 1e-5);
}

TEST(Calibrate, MatchesByPciAddressWhenUuidsDiffer) {
  script("GPULENS_FAKE_NVML_SCRIPT", "nvml", "gpu 0 uuid=GPU-aaaa pci=00000000:3B:00.0 gpm=off\n");
  script("GPULENS_FAKE_CUDA_SCRIPT", "cuda",
         "device 0 pci=0000:18:00.0\ndevice 1 pci=0000:3b:00.0\nbandwidth 1 h2d 1=3e10\n");
  auto run = run_calibration(options(), "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->gpus[0].cuda_ordinal, 1);
  EXPECT_NEAR(run->gpus[0].h2d.peak, 3e10, 3e4);
}

TEST(Calibrate, GpuUnknownToCudaFailsAlone) {
  script("GPULENS_FAKE_NVML_SCRIPT", "nvml",
         std::string("gpu 0 uuid=") + kUuid0 + " pci=00000000:18:00.0 gpm=off\ngpu 1 uuid=GPU-bbbb pci=00000000:99:00.0\n");
  script("GPULENS_FAKE_CUDA_SCRIPT", "cuda", std::string("device 0 uuid=") + kUuid0 + " pci=0000:18:00.0\n");
  auto run = run_calibration(options(), "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->gpus[0].status.is_ok());
  EXPECT_NE(run->gpus[1].status.message().find("CUDA does not see it"), std::string::npos);
  EXPECT_TRUE(run->any_failed());
}

TEST(Calibrate, SelectsGpusByIndexUuidOrPci) {
  two_gpus();
  auto o = options();
  o.gpus = {kUuid1};
  auto run = run_calibration(o, "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->gpus.size(), 1u);
  EXPECT_EQ(run->gpus[0].index, 1);
  o.gpus = {"00000000:18:00.0", "0"};  // the same GPU twice
  run = run_calibration(o, "t");
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->gpus.size(), 1u);
  EXPECT_EQ(run->gpus[0].index, 0);
  o.gpus = {"7"};
  run = run_calibration(o, "t");
  EXPECT_NE(run.status().message().find("--gpus: no GPU 7"), std::string::npos);
}

TEST(Calibrate, RefusesABusyGpuUnlessForced) {
  two_gpus("process 1 pid=4242 mem=1073741824 sm=37\n");
  auto run = run_calibration(options(), "t");
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("GPU 1 (" + std::string(kUuid1) + ") is in use by pid 4242"),
            std::string::npos)
      << run.status().message();
  EXPECT_NE(run.status().message().find("--force"), std::string::npos);
  auto o = options();
  o.force = true;
  run = run_calibration(o, "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_FALSE(run->gpus[0].under_load);
  EXPECT_TRUE(run->gpus[1].under_load);
  EXPECT_NE(render_calibration_json(*run).find("\"under_load\":true"), std::string::npos);
  EXPECT_NE(render_calibration_table(*run).find("WARNING: GPU 1"), std::string::npos);
}

TEST(Calibrate, NoDeviceAndMissingLibrary) {
  two_gpus();
  script("GPULENS_FAKE_CUDA_SCRIPT", "cuda", "init NO_DEVICE\n");
  auto run = run_calibration(options(), "t");
  EXPECT_EQ(run.status().code(), Code::kNotApplicable);
  EXPECT_NE(run.status().message().find("CUDA_ERROR_NO_DEVICE"), std::string::npos);
  auto o = options();
  o.cuda_library = "/nonexistent/libcuda.so.1";
  two_gpus();
  run = run_calibration(o, "t");
  EXPECT_NE(run.status().message().find("no CUDA driver: cannot load /nonexistent/libcuda.so.1"), std::string::npos);
  o = options();
  o.sweep.sizes.clear();
  EXPECT_EQ(run_calibration(o, "t").status().code(), Code::kInvalidArgument);
}

TEST(Calibrate, OutOfMemoryFailsThatGpuOnly) {
  two_gpus("", "error 0 mem_alloc OUT_OF_MEMORY\n");
  auto run = run_calibration(options(), "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->gpus[0].status.is_ok());
  const std::string& why = run->gpus[1].status.message();
  EXPECT_NE(why.find("GPU 1 (" + std::string(kUuid1) + "): cuMemAlloc of 4 MiB on the device failed: "
                     "CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << why;
  // The file holds the GPU that worked; the table says which failed.
  auto cal = parse_pcie_calibration(render_calibration_json(*run), "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_EQ(cal->entries.size(), 1u);
  EXPECT_NE(render_calibration_table(*run).find("FAILED: GPU 1"), std::string::npos);
}

TEST(Calibrate, DeviceFailingMidRun) {
  two_gpus("", "fail 1 after=12 code=ECC_UNCORRECTABLE\n");
  auto run = run_calibration(options(), "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_NE(run->gpus[0].status.message().find("CUDA_ERROR_ECC_UNCORRECTABLE"), std::string::npos)
      << run->gpus[0].status.message();
  EXPECT_TRUE(run->gpus[1].status.is_ok());
}

TEST(Calibrate, PeerCopiesForPairsWithPeerAccess) {
  two_gpus("", "peer 0 1 bandwidth=3.7e11\npeer 1 0 bandwidth=3.6e11\n");
  auto run = run_calibration(options(), "t");
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->gpus[0].peers.size(), 1u);
  EXPECT_EQ(run->gpus[0].peers[0].uuid, kUuid1);
  EXPECT_NEAR(run->gpus[0].peers[0].bytes_per_second, 3.6e11, 3.6e6);  // CUDA 1 -> CUDA 0
  ASSERT_EQ(run->gpus[1].peers.size(), 1u);
  EXPECT_NEAR(run->gpus[1].peers[0].bytes_per_second, 3.7e11, 3.7e6);
  two_gpus();
  run = run_calibration(options(), "t");
  EXPECT_TRUE(run->gpus[0].peers.empty());
}

TEST(Calibrate, FileRoundTripsIntoTheAgentsPeak) {
  two_gpus();
  auto run = run_calibration(options(), "1.2.3");
  ASSERT_TRUE(run.ok());
  auto cal = parse_pcie_calibration(render_calibration_json(*run), "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  ASSERT_EQ(cal->entries.size(), 2u);
  const auto& e = cal->entries[0];
  EXPECT_EQ(e.uuid, kUuid0);
  EXPECT_EQ(e.link_gen, 5u);
  EXPECT_EQ(e.link_width, 16u);
  EXPECT_EQ(e.tool_version, "1.2.3");
  EXPECT_EQ(e.date, run->date);
  EXPECT_FALSE(e.under_load);
  PciePeak p = choose_pcie_peak(&*cal, kUuid0, "NVIDIA H100 80GB HBM3", 5, 16);
  EXPECT_EQ(p.basis, "calibrated");
  EXPECT_NEAR(p.rx, 5.5e10, 5.5e5);
  EXPECT_NEAR(p.tx, 5.2e10, 5.2e5);
  // The table: measured beside the Gen5 x16 nominal, with the ratio.
  const std::string table = render_calibration_table(*run);
  EXPECT_NE(table.find("55.0 GB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("63.0 GB/s"), std::string::npos) << table;
  EXPECT_NE(table.find("0.87"), std::string::npos) << table;
}

TEST(Calibrate, CheckNamesALinkThatLostBandwidth) {
  two_gpus();
  auto first = run_calibration(options(), "t");
  ASSERT_TRUE(first.ok());
  auto cal = parse_pcie_calibration(render_calibration_json(*first), "cal.json");
  ASSERT_TRUE(cal.ok());
  EXPECT_TRUE(check_calibration(*cal, *first, 0.1).empty());
  // GPU 0 (CUDA 1) now copies host->device at half speed on a Gen4 link.
  script("GPULENS_FAKE_CUDA_SCRIPT", "cuda",
         std::string("device 0 uuid=") + kUuid1 + "\ndevice 1 uuid=" + kUuid0 +
             "\nbandwidth 1 h2d 1=2.75e10\nbandwidth 1 d2h 1=5.2e10\nbandwidth 0 h2d 1=2.6e10\nbandwidth 0 d2h 1=2.5e10\n");
  script("GPULENS_FAKE_NVML_SCRIPT", "nvml",
         std::string("gpu 0 uuid=") + kUuid0 + " gpm=off\nvalue 0 pcie_gen 4\ngpu 1 uuid=" + kUuid1 + " gpm=off\n");
  auto o = options();
  o.sweep.sizes = {4u << 20};
  auto now = run_calibration(o, "t");
  ASSERT_TRUE(now.ok()) << now.status().message();
  auto problems = check_calibration(*cal, *now, 0.1);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0].what, "GPU 0 (" + std::string(kUuid0) + ") host->device: 27.5 GB/s now, 55.0 GB/s at calibration (" +
                                  first->date + ")");
  EXPECT_NE(problems[1].what.find("link: Gen4 x16 now, Gen5 x16"), std::string::npos) << problems[1].what;
}

TEST(Calibrate, CpuList) {
  EXPECT_EQ(cpu_list({}), "");
  EXPECT_EQ(cpu_list({0xFUL}), "0-3");
  EXPECT_EQ(cpu_list({0x105UL}), "0,2,8");
  EXPECT_EQ(cpu_list({0, 1}), "64");
}

}  // namespace
}  // namespace gpulens
