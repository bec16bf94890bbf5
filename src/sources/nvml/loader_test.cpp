// The loader against the stand-in libraries, and the stand-in's struct
// version checks (which mirror the driver's).
#include "sources/nvml/loader.h"
#include "util/testing/temp_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <dlfcn.h>

#include <algorithm>
#include <fstream>

namespace gpulens {
namespace {

// This process's own directory (ctest runs each test in a process of its
// own), removed at exit: the scripts stay readable while the test runs.
const std::string& own_dir() {
  static const testing::TestDir dir;
  return dir.path();
}

void use_script(const std::string& text) {
  const std::string path = own_dir() + "/loader_script.txt";
  std::ofstream(path) << text;
  setenv("GPULENS_FAKE_NVML_SCRIPT", path.c_str(), 1);
}

TEST(Loader, MissingLibraryIsNotApplicable) {
  auto api = load_nvml("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), Code::kNotApplicable);
  EXPECT_NE(api.status().message().find("no NVIDIA driver"), std::string::npos);
}

TEST(Loader, LibraryWithoutRequiredSymbolsIsNotApplicable) {
  auto api = load_nvml("libz.so.1");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().code(), Code::kNotApplicable);
  EXPECT_NE(api.status().message().find("symbol nvmlInit_v2 is missing"), std::string::npos);
}

TEST(Loader, ResolvesVersionedAndOptionalSymbols) {
  auto api = load_nvml(GPULENS_FAKE_NVML);
  ASSERT_TRUE(api.ok()) << api.status().message();
  EXPECT_NE((*api)->get_memory_v2, nullptr);
  EXPECT_NE((*api)->gpm_metrics_get, nullptr);
  EXPECT_EQ((*api)->get_clock_events, reinterpret_cast<decltype((*api)->get_clock_events)>(
                                          dlsym((*api)->handle, "nvmlDeviceGetCurrentClocksEventReasons")));
}

TEST(Loader, OldDriverLeavesOptionalSymbolsNull) {
  auto api = load_nvml(GPULENS_FAKE_NVML_OLD);
  ASSERT_TRUE(api.ok()) << api.status().message();
  EXPECT_EQ((*api)->get_memory_v2, nullptr);
  EXPECT_EQ((*api)->gpm_sample_get, nullptr);
  EXPECT_NE((*api)->get_memory_v1, nullptr);
  // Falls back to the older symbol name for the same call.
  EXPECT_EQ((*api)->get_clock_events, reinterpret_cast<decltype((*api)->get_clock_events)>(
                                          dlsym((*api)->handle, "nvmlDeviceGetCurrentClocksThrottleReasons")));
  EXPECT_NE(std::find((*api)->missing.begin(), (*api)->missing.end(), "nvmlDeviceGetMemoryInfo_v2"),
            (*api)->missing.end());
}

TEST(Loader, ErrorNames) {
  EXPECT_EQ(NvmlApi::error_name(15), "NVML_ERROR_GPU_IS_LOST");
  EXPECT_EQ(NvmlApi::error_name(25), "NVML_ERROR_ARGUMENT_VERSION_MISMATCH");
  EXPECT_EQ(NvmlApi::error_name(12345), "NVML_ERROR_OTHER");
}

TEST(StandIn, StructVersionsAreChecked) {
  use_script("gpu 0 name=\"NVIDIA H100 80GB HBM3\" arch=9\n");
  auto loaded = load_nvml(GPULENS_FAKE_NVML);
  ASSERT_TRUE(loaded.ok());
  NvmlApi& api = **loaded;
  ASSERT_EQ(api.init(), NVML_SUCCESS);
  nvmlDevice_t dev = nullptr;
  ASSERT_EQ(api.get_handle_by_index(0, &dev), NVML_SUCCESS);

  nvmlMemory_v2_t m{};
  m.version = 2;  // the bare number: what some bindings wrote
  EXPECT_EQ(api.get_memory_v2(dev, &m), NVML_ERROR_FUNCTION_NOT_FOUND);
  m.version = 0x01000028;
  EXPECT_EQ(api.get_memory_v2(dev, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  m.version = nvmlMemory_v2;
  EXPECT_EQ(api.get_memory_v2(dev, &m), NVML_SUCCESS);
  EXPECT_EQ(m.total, 85899345920ULL);

  nvmlGpmSupport_t s{};
  s.version = sizeof(nvmlGpmSupport_t) | (1u << 24);  // size-encoded: wrong for GPM
  EXPECT_EQ(api.gpm_query_support(dev, &s), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  s.version = NVML_GPM_SUPPORT_VERSION;
  EXPECT_EQ(api.gpm_query_support(dev, &s), NVML_SUCCESS);
  EXPECT_EQ(s.isSupportedDevice, 1u);

  nvmlGpmMetricsGet_t mg{};
  mg.version = 0x01000000 | sizeof(mg);
  EXPECT_EQ(api.gpm_metrics_get(&mg), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
  EXPECT_EQ(api.shutdown(), NVML_SUCCESS);
}

TEST(StandIn, InitFailureFromScript) {
  use_script("init DRIVER_NOT_LOADED\n");
  auto loaded = load_nvml(GPULENS_FAKE_NVML);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->init(), NVML_ERROR_DRIVER_NOT_LOADED);
}

}  // namespace
}  // namespace gpulens
