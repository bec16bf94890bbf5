// Every evidence signal a diagnosis rule can attach to a finding
// (Evidence::signal): the one list that the consumers drawing evidence as
// charts are checked against, the HTML report (report/html_report.cpp) and
// the agent's web page (web/src/app.js, its EVIDENCE table).
//
// A rule names its evidence with an EvidenceName, which accepts only a name
// from kEvidenceNames, at compile time: a new evidence signal does not build
// until it is listed here, and the tests that iterate this list then ask
// for its chart in both consumers.
//
//   r.evidence.push_back({"temperature", temp, th.temperature_celsius});
//   r.evidence.push_back({"temprature", ...});   // does not compile
//
// Thread-safety: constants.
#pragma once

#include <algorithm>
#include <iterator>
#include <string_view>

namespace gpulens::diagnose {

inline constexpr std::string_view kEvidenceNames[] = {
    // hardware_errors
    "last_xid", "gpu_up", "ecc_uncorrected_rate", "row_remap_failure", "health_status",
    // how busy the SMs are: the first of these the GPU has (GpuContext::busy_series)
    "sm_active", "gr_engine_active", "gpu_util",
    // input_pipeline: the host
    "host_cpu_busy", "psi_cpu", "iowait", "psi_io", "disk_busy",
    // host_transfer, pcie_link_degraded
    "pcie_util", "pcie_util_full_link", "link_gen", "link_width", "link_gen_calibrated", "link_width_calibrated",
    // memory_bandwidth
    "dram_active", "tensor_active",
    // network_fallback, communication
    "nic_util", "ib_bps", "ib_util", "nvlink_util",
    // kernel_launch, small_batch
    "sm_occupancy", "latency_p99", "latency_mean",
    // kv_cache_pressure, overload
    "kv_cache_usage", "preemption_rate", "requests_waiting", "requests_running", "ttft_p99",
    "requests_waiting_for_capacity", "prefix_cache_hit_ratio", "batch_max_tokens",
    // thermal_throttle, power_cap
    "thermal_throttle", "temperature", "sm_clock_ratio", "power_throttle", "power_over_limit",
    // memory_fragmentation, memory_pressure, idle
    "external_fragmentation", "fragmentation", "fb_used_ratio", "fb_used", "allocator_retries_per_second",
    "allocator_ooms_per_second",
    // topology
    "gpu_numa_node", "gpu_topology_path",
};

constexpr bool is_evidence_name(std::string_view name) {
  return std::find(std::begin(kEvidenceNames), std::end(kEvidenceNames), name) != std::end(kEvidenceNames);
}

// Not constexpr on purpose: calling it from the consteval constructor below
// is the compile error that names the problem. Defined (empty) because
// clang 14 emits the constructor's body in some initializer lists, where a
// mere declaration would not link; g++ 12, the project's compiler, checks.
inline void evidence_name_not_in_kEvidenceNames() {}

// An evidence signal's name, checked against kEvidenceNames when compiled.
struct EvidenceName {
  consteval EvidenceName(const char* s) : name(s) {
    if (!is_evidence_name(name)) evidence_name_not_in_kEvidenceNames();
  }
  std::string_view name;
};

}  // namespace gpulens::diagnose
