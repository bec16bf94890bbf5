// Loader: opens the NVML library with dlopen and resolves its entry points.
//
// Every entry point gpulens calls is listed once, in GPULENS_NVML_ENTRIES
// below, with the symbol names to try in order (newest version first) and
// whether it is required. A missing required symbol means the library is
// not a usable NVML ("not applicable" with the reason); a missing optional
// symbol leaves its pointer null and the fields it feeds are simply absent.
//
//   Result<std::unique_ptr<NvmlApi>> api = load_nvml("libnvidia-ml.so.1");
//   if (!api) return api.status();   // "no NVIDIA driver: libnvidia-ml.so.1: ..."
//   if ((*api)->get_power_usage) ...
//
// Thread-safety: an NvmlApi is immutable after load and may be used from
// several threads (NVML is thread-safe). Destroying it dlcloses the library.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sources/nvml/nvml_api.h"
#include "util/status.h"

namespace gpulens {

// X(member, signature, required, "symbol", "older symbol"...)
#define GPULENS_NVML_ENTRIES(X)                                                                        \
  X(init, nvmlReturn_t(), true, "nvmlInit_v2")                                                         \
  X(shutdown, nvmlReturn_t(), true, "nvmlShutdown")                                                    \
  X(error_string, const char*(nvmlReturn_t), false, "nvmlErrorString")                                 \
  X(get_count, nvmlReturn_t(unsigned*), true, "nvmlDeviceGetCount_v2")                                 \
  X(get_handle_by_index, nvmlReturn_t(unsigned, nvmlDevice_t*), true, "nvmlDeviceGetHandleByIndex_v2") \
  X(get_name, nvmlReturn_t(nvmlDevice_t, char*, unsigned), true, "nvmlDeviceGetName")                  \
  X(get_uuid, nvmlReturn_t(nvmlDevice_t, char*, unsigned), true, "nvmlDeviceGetUUID")                  \
  X(get_driver_version, nvmlReturn_t(char*, unsigned), false, "nvmlSystemGetDriverVersion")            \
  X(get_cuda_driver_version, nvmlReturn_t(int*), false, "nvmlSystemGetCudaDriverVersion_v2",           \
    "nvmlSystemGetCudaDriverVersion")                                                                  \
  X(get_serial, nvmlReturn_t(nvmlDevice_t, char*, unsigned), false, "nvmlDeviceGetSerial")             \
  X(get_pci_info, nvmlReturn_t(nvmlDevice_t, nvmlPciInfo_t*), false, "nvmlDeviceGetPciInfo_v3")        \
  X(get_architecture, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetArchitecture")       \
  X(get_minor_number, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetMinorNumber")        \
  X(get_encoder_util, nvmlReturn_t(nvmlDevice_t, unsigned*, unsigned*), false,                         \
    "nvmlDeviceGetEncoderUtilization")                                                                 \
  X(get_decoder_util, nvmlReturn_t(nvmlDevice_t, unsigned*, unsigned*), false,                         \
    "nvmlDeviceGetDecoderUtilization")                                                                 \
  X(get_utilization, nvmlReturn_t(nvmlDevice_t, nvmlUtilization_t*), false,                            \
    "nvmlDeviceGetUtilizationRates")                                                                   \
  X(get_memory_v2, nvmlReturn_t(nvmlDevice_t, nvmlMemory_v2_t*), false, "nvmlDeviceGetMemoryInfo_v2")  \
  X(get_memory_v1, nvmlReturn_t(nvmlDevice_t, nvmlMemory_t*), false, "nvmlDeviceGetMemoryInfo")        \
  X(get_temperature, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned*), false, "nvmlDeviceGetTemperature") \
  X(get_power_usage, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetPowerUsage")          \
  X(get_power_limit, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetEnforcedPowerLimit")  \
  X(get_energy, nvmlReturn_t(nvmlDevice_t, unsigned long long*), false,                                \
    "nvmlDeviceGetTotalEnergyConsumption")                                                             \
  X(get_clock, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned*), false, "nvmlDeviceGetClockInfo")       \
  X(get_max_clock, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned*), false, "nvmlDeviceGetMaxClockInfo") \
  X(get_clock_events, nvmlReturn_t(nvmlDevice_t, unsigned long long*), false,                          \
    "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")             \
  X(get_supported_clock_events, nvmlReturn_t(nvmlDevice_t, unsigned long long*), false,                \
    "nvmlDeviceGetSupportedClocksEventReasons", "nvmlDeviceGetSupportedClocksThrottleReasons")         \
  X(get_pcie_gen, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetCurrPcieLinkGeneration") \
  X(get_pcie_width, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetCurrPcieLinkWidth")    \
  X(get_pcie_gen_max, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetMaxPcieLinkGeneration") \
  X(get_pcie_width_max, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetMaxPcieLinkWidth") \
  X(get_pcie_throughput, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned*), false,                       \
    "nvmlDeviceGetPcieThroughput")                                                                     \
  X(get_pcie_replays, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetPcieReplayCounter")  \
  X(get_ecc_errors, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned, unsigned long long*), false,        \
    "nvmlDeviceGetTotalEccErrors")                                                                     \
  X(get_remapped_rows, nvmlReturn_t(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*), false,  \
    "nvmlDeviceGetRemappedRows")                                                                       \
  X(get_pstate, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetPerformanceState")         \
  X(get_repair_status, nvmlReturn_t(nvmlDevice_t, nvmlRepairStatus_v1_t*), false,                     \
    "nvmlDeviceGetRepairStatus")                                                                       \
  X(get_field_values, nvmlReturn_t(nvmlDevice_t, int, nvmlFieldValue_t*), false,                       \
    "nvmlDeviceGetFieldValues")                                                                        \
  X(get_nvlink_state, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned*), false, "nvmlDeviceGetNvLinkState") \
  X(get_nvlink_remote_pci, nvmlReturn_t(nvmlDevice_t, unsigned, nvmlPciInfo_t*), false,                \
    "nvmlDeviceGetNvLinkRemotePciInfo_v2")                                                             \
  X(get_compute_processes, nvmlReturn_t(nvmlDevice_t, unsigned*, nvmlProcessInfo_t*), false,           \
    "nvmlDeviceGetComputeRunningProcesses_v3")                                                         \
  X(get_process_utilization,                                                                           \
    nvmlReturn_t(nvmlDevice_t, nvmlProcessUtilizationSample_t*, unsigned*, unsigned long long), false, \
    "nvmlDeviceGetProcessUtilization")                                                                 \
  X(probe_conf_compute_mem, void(), false, "nvmlDeviceGetConfComputeMemSizeInfo")                      \
  X(probe_process_detail_list, void(), false, "nvmlDeviceGetRunningProcessDetailList")                 \
  X(get_common_ancestor, nvmlReturn_t(nvmlDevice_t, nvmlDevice_t, unsigned*), false,                   \
    "nvmlDeviceGetTopologyCommonAncestor")                                                             \
  X(get_cpu_affinity, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned long*), false,                     \
    "nvmlDeviceGetCpuAffinity")                                                                        \
  X(get_memory_affinity, nvmlReturn_t(nvmlDevice_t, unsigned, unsigned long*, unsigned), false,        \
    "nvmlDeviceGetMemoryAffinity")                                                                     \
  X(event_set_create, nvmlReturn_t(nvmlEventSet_t*), false, "nvmlEventSetCreate")                      \
  X(get_supported_events, nvmlReturn_t(nvmlDevice_t, unsigned long long*), false,                      \
    "nvmlDeviceGetSupportedEventTypes")                                                                \
  X(register_events, nvmlReturn_t(nvmlDevice_t, unsigned long long, nvmlEventSet_t), false,            \
    "nvmlDeviceRegisterEvents")                                                                        \
  X(event_set_wait, nvmlReturn_t(nvmlEventSet_t, nvmlEventData_t*, unsigned), false,                   \
    "nvmlEventSetWait_v2")                                                                             \
  X(event_set_free, nvmlReturn_t(nvmlEventSet_t), false, "nvmlEventSetFree")                           \
  X(get_mig_mode, nvmlReturn_t(nvmlDevice_t, unsigned*, unsigned*), false, "nvmlDeviceGetMigMode")     \
  X(get_max_mig_devices, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetMaxMigDeviceCount") \
  X(get_mig_handle, nvmlReturn_t(nvmlDevice_t, unsigned, nvmlDevice_t*), false,                        \
    "nvmlDeviceGetMigDeviceHandleByIndex")                                                             \
  X(get_gpu_instance_id, nvmlReturn_t(nvmlDevice_t, unsigned*), false, "nvmlDeviceGetGpuInstanceId")   \
  X(get_compute_instance_id, nvmlReturn_t(nvmlDevice_t, unsigned*), false,                             \
    "nvmlDeviceGetComputeInstanceId")                                                                  \
  X(gpm_query_support, nvmlReturn_t(nvmlDevice_t, nvmlGpmSupport_t*), false, "nvmlGpmQueryDeviceSupport") \
  X(gpm_sample_alloc, nvmlReturn_t(nvmlGpmSample_t*), false, "nvmlGpmSampleAlloc")                     \
  X(gpm_sample_free, nvmlReturn_t(nvmlGpmSample_t), false, "nvmlGpmSampleFree")                        \
  X(gpm_sample_get, nvmlReturn_t(nvmlDevice_t, nvmlGpmSample_t), false, "nvmlGpmSampleGet")            \
  X(gpm_metrics_get, nvmlReturn_t(nvmlGpmMetricsGet_t*), false, "nvmlGpmMetricsGet")

// The resolved library. Optional members are null when the symbol is absent.
struct NvmlApi {
#define GPULENS_NVML_MEMBER(member, sig, required, ...) std::add_pointer_t<sig> member = nullptr;
  GPULENS_NVML_ENTRIES(GPULENS_NVML_MEMBER)
#undef GPULENS_NVML_MEMBER

  NvmlApi() = default;
  NvmlApi(const NvmlApi&) = delete;
  NvmlApi& operator=(const NvmlApi&) = delete;
  ~NvmlApi();

  std::string path;                   // what was opened
  std::vector<std::string> missing;   // optional symbols not found, for the log
  void* handle = nullptr;             // dlopen handle

  // "NVML_ERROR_GPU_IS_LOST" for 15; the library's own string is not used
  // so that messages are stable across drivers.
  static std::string_view error_name(nvmlReturn_t rc);
};

// Opens `path` (the soname by default; when that is the default and fails,
// the unversioned libnvidia-ml.so is tried as well) and resolves every entry.
Result<std::unique_ptr<NvmlApi>> load_nvml(const std::string& path);

}  // namespace gpulens
