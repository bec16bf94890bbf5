// The subset of the NVML C ABI that gpulens uses, declared by the project.
//
// NVML is never a build dependency: the loader (loader.h) opens
// libnvidia-ml.so.1 with dlopen and resolves these entry points by name. The
// types, constants and struct layouts below are written from the NVML
// header's documented ABI (LP64): sizes and offsets are checked with
// static_assert, so a typo here fails the build instead of shuffling fields
// at run time. The stand-in library in testing/ implements the same
// declarations, which is how the tests drive the real loader.
//
// Versioned structs carry `version = sizeof | (v << 24)` (nvmlMemory_v2 is
// 0x02000028); GPM structs take the raw number 1 instead.
//
// Thread-safety: plain declarations; NVML itself is thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

using nvmlReturn_t = int;  // C enum, 4 bytes
using nvmlDevice_t = struct nvmlDevice_st*;
using nvmlEventSet_t = struct nvmlEventSet_st*;
using nvmlGpmSample_t = struct nvmlGpmSample_st*;

// ---- return codes ---------------------------------------------------------
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// ---- enums ----------------------------------------------------------------
inline constexpr unsigned NVML_TEMPERATURE_GPU = 0;
inline constexpr unsigned NVML_CLOCK_SM = 1;
inline constexpr unsigned NVML_CLOCK_MEM = 2;
inline constexpr unsigned NVML_PCIE_UTIL_TX_BYTES = 0;
inline constexpr unsigned NVML_PCIE_UTIL_RX_BYTES = 1;
inline constexpr unsigned NVML_MEMORY_ERROR_TYPE_CORRECTED = 0;
inline constexpr unsigned NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1;
inline constexpr unsigned NVML_VOLATILE_ECC = 0;
inline constexpr unsigned NVML_FEATURE_ENABLED = 1;
inline constexpr unsigned NVML_AFFINITY_SCOPE_NODE = 0;
inline constexpr unsigned NVML_NVLINK_MAX_LINKS = 18;
inline constexpr unsigned NVML_DEVICE_ARCH_HOPPER = 9;
inline constexpr unsigned NVML_DEVICE_MIG_DISABLE = 0;  // nvmlDeviceGetMigMode
inline constexpr unsigned NVML_DEVICE_MIG_ENABLE = 1;
// nvmlGpuTopologyLevel_t
inline constexpr unsigned NVML_TOPOLOGY_INTERNAL = 0;
inline constexpr unsigned NVML_TOPOLOGY_SINGLE = 10;
inline constexpr unsigned NVML_TOPOLOGY_MULTIPLE = 20;
inline constexpr unsigned NVML_TOPOLOGY_HOSTBRIDGE = 30;
inline constexpr unsigned NVML_TOPOLOGY_NODE = 40;
inline constexpr unsigned NVML_TOPOLOGY_SYSTEM = 50;
// event bits
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ULL;
inline constexpr unsigned NVML_VALUE_NOT_AVAILABLE_U32 = 0xFFFFFFFFu;
inline constexpr unsigned long long NVML_VALUE_NOT_AVAILABLE = ~0ULL;

// field ids used through nvmlDeviceGetFieldValues
inline constexpr unsigned NVML_FI_DEV_MEMORY_TEMP = 82;
inline constexpr unsigned NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP = 74;
inline constexpr unsigned NVML_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST = 76;
inline constexpr unsigned NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN = 269;
inline constexpr unsigned NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN = 270;
inline constexpr unsigned NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN = 271;
inline constexpr unsigned NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138;  // KiB, cumulative
inline constexpr unsigned NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139;
inline constexpr unsigned NVML_FI_DEV_NVLINK_GET_SPEED = 164;           // MBps per link
inline constexpr unsigned NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197;        // bytes, cumulative
inline constexpr unsigned NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198;
// nvmlDeviceGpuRecoveryAction_t: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P,
// 4 drain and reset (CUDA 12.8 drivers on).
inline constexpr unsigned NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = 230;
// NVLink5 (Blackwell) link recovery counts, CUDA 12.6 drivers on: the link
// went from up to recovery and came back (213), failed and was declared down
// (214), either (215). Asked with scopeId NVML_SCOPE_ALL_LINKS: the GPU's sum.
inline constexpr unsigned NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS = 213;
inline constexpr unsigned NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS = 214;
inline constexpr unsigned NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS = 215;
inline constexpr unsigned NVML_SCOPE_ALL_LINKS = 0xFFFFFFFFu;  // UINT_MAX: every link

// GPM metric ids (nvmlGpmMetricId_t)
inline constexpr unsigned NVML_GPM_METRIC_GRAPHICS_UTIL = 1;
inline constexpr unsigned NVML_GPM_METRIC_SM_UTIL = 2;
inline constexpr unsigned NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
inline constexpr unsigned NVML_GPM_METRIC_FP64_UTIL = 11;
inline constexpr unsigned NVML_GPM_METRIC_FP32_UTIL = 12;
inline constexpr unsigned NVML_GPM_METRIC_FP16_UTIL = 13;
inline constexpr unsigned NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20;  // MiB/s
inline constexpr unsigned NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21;
inline constexpr unsigned NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60;
inline constexpr unsigned NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61;
inline constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;      // raw, not size-encoded
inline constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;  // raw, not size-encoded
// Array bound of the oldest GPM header (11.8); we never ask for more metrics
// than that, and the library touches only numMetrics entries.
inline constexpr unsigned kGpmMetricCapacity = 98;

// ---- structs --------------------------------------------------------------
struct nvmlUtilization_t {
  unsigned int gpu;     // %
  unsigned int memory;  // %
};

struct nvmlMemory_v2_t {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
inline constexpr unsigned nvmlMemory_v2 = static_cast<unsigned>(sizeof(nvmlMemory_v2_t) | (2u << 24));

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};
inline constexpr unsigned NVML_VALUE_TYPE_DOUBLE = 0;
inline constexpr unsigned NVML_VALUE_TYPE_UNSIGNED_INT = 1;
inline constexpr unsigned NVML_VALUE_TYPE_UNSIGNED_LONG = 2;
inline constexpr unsigned NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3;
inline constexpr unsigned NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4;
inline constexpr unsigned NVML_VALUE_TYPE_SIGNED_INT = 5;
inline constexpr unsigned NVML_VALUE_TYPE_UNSIGNED_SHORT = 6;

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;    // µs since 1970
  long long latencyUsec;
  int valueType;          // nvmlValueType_t
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
};

struct nvmlProcessInfo_t {  // nvmlProcessInfo_v2_t, element of the _v3 calls
  unsigned int pid;
  unsigned long long usedGpuMemory;  // bytes
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
// Early R535 drivers wrote this 32-byte element for the _v3 calls.
struct nvmlProcessDetail_v1_t {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
  unsigned long long usedGpuCcProtectedMemory;
};

struct nvmlProcessUtilizationSample_t {
  unsigned int pid;
  unsigned long long timeStamp;  // µs
  unsigned int smUtil;           // %
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
};

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // XID number for XID events
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct nvmlGpmSupport_t {
  unsigned int version;
  unsigned int isSupportedDevice;
};

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[kGpmMetricCapacity];
};

// nvmlDeviceGetRepairStatus (drivers 580 on): repairs the GPU holds pending.
struct nvmlRepairStatus_v1_t {
  unsigned int version;
  unsigned int bChannelRepairPending;  // memory channel repair
  unsigned int bTpcRepairPending;      // TPC repair
};
inline constexpr unsigned nvmlRepairStatus_v1 = static_cast<unsigned>(sizeof(nvmlRepairStatus_v1_t) | (1u << 24));

}  // extern "C"

// Layout checks against the documented LP64 ABI.
static_assert(sizeof(nvmlMemory_v2_t) == 40 && nvmlMemory_v2 == 0x02000028);
static_assert(sizeof(nvmlRepairStatus_v1_t) == 12 && nvmlRepairStatus_v1 == 0x0100000C);
static_assert(offsetof(nvmlMemory_v2_t, used) == 32);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, value) == 32);
static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28);
static_assert(sizeof(nvmlProcessInfo_t) == 24 && sizeof(nvmlProcessDetail_v1_t) == 32);
static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16);
static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlGpmSupport_t) == 8);
