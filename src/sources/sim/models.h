// GPU models the simulator knows: the datasheet numbers that make simulated
// values plausible (memory size, clocks, power, links).
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace gpulens::sim {

struct GpuModel {
  std::string_view key;        // scenario spelling: "h100-sxm"
  std::string_view name;       // as NVML reports it
  double memory_mib;
  double sm_clock_max_mhz;
  double mem_clock_max_mhz;
  double power_limit_w;
  double idle_power_w;
  int pcie_gen;
  int pcie_width;
  int nvlink_links;            // 0: no NVLink
  double nvlink_gbps_per_link; // GB/s per link per direction
};

std::span<const GpuModel> gpu_models();
std::optional<GpuModel> find_gpu_model(std::string_view key);

}  // namespace gpulens::sim
