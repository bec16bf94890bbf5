// The field catalog: the one table of every signal gpulens knows.
//
// A field is one metric family: its Prometheus name, type, unit, layer, help
// text, the label scope it lives in, and its dcgm-exporter equivalent. Every
// source fills fields by id; exposition, history, `--dcgm-names`, remote_write,
// diagnosis and the terminal table all iterate this table. Adding a metric is
// one enum value plus one row in catalog.cpp.
//
//   const FieldDef& f = field(FieldId::kGpuPowerWatts);
//   f.name  == "gpu_power_watts";  f.dcgm_name == "DCGM_FI_DEV_POWER_USAGE";
//
// Thread-safety: immutable after static initialisation.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gpulens {

enum class MetricType : uint8_t { kGauge, kCounter, kHistogram, kInfo };

enum class Layer : uint8_t { kCompute, kMemory, kIo, kHealth, kHost, kServing, kAgent };

// Which labels a series of this field carries (beyond its extra labels).
enum class Scope : uint8_t {
  kGpu,    // gpu, gpu_uuid, gpu_name
  kNode,   // none: host-wide or agent-wide
};

enum class FieldId : uint16_t {
  // compute
  kGpuUtilization,
  kGpuSmActive,
  kGpuSmOccupancy,
  kGpuGraphicsEngineActive,
  kGpuTensorActive,
  kGpuFp64Active,
  kGpuFp32Active,
  kGpuFp16Active,
  kGpuSmClock,
  kGpuSmClockMax,
  kGpuMemClock,
  kGpuMemClockMax,
  // memory
  kGpuMemoryTotal,
  kGpuMemoryUsed,
  kGpuMemoryFree,
  kGpuMemoryReserved,
  kGpuMemoryUtil,
  kGpuDramActive,
  kGpuMemoryFragmentation,
  kGpuAllocatorAllocated,
  kGpuAllocatorReserved,
  kGpuAllocatorRetries,
  kGpuProcessMemoryUsed,
  kGpuProcessSmUtil,
  // io
  kGpuPcieTxBytes,
  kGpuPcieRxBytes,
  kGpuPcieTxRate,
  kGpuPcieRxRate,
  kGpuPcieTxUtil,
  kGpuPcieRxUtil,
  kGpuPciePeak,
  kGpuPcieLinkGen,
  kGpuPcieLinkGenMax,
  kGpuPcieLinkWidth,
  kGpuPcieLinkWidthMax,
  kGpuPcieLinkGenCalibrated,
  kGpuPcieLinkWidthCalibrated,
  kGpuPcieReplays,
  kGpuNvlinkTxBytes,
  kGpuNvlinkRxBytes,
  kGpuNvlinkTxRate,
  kGpuNvlinkRxRate,
  kGpuNvlinkUtil,
  kGpuNvlinkLinkUp,
  kGpuTopology,
  kGpuNumaNode,
  kGpuCpuAffinity,
  // health
  kGpuUp,
  kGpuInfo,
  kGpuPower,
  kGpuPowerLimit,
  kGpuEnergy,
  kGpuTemperature,
  kGpuMemoryTemperature,
  kGpuClockEventActive,
  kGpuClockEventReasons,
  kGpuClockEventSeconds,
  kGpuXidErrors,
  kGpuLastXid,
  kGpuLastXidTime,
  kGpuEccErrors,
  kGpuRemappedRows,
  kGpuRowRemapFailure,
  kGpuPstate,
  // host
  kHostCpuSeconds,
  kHostCpuCount,
  kHostPressureCpuWaiting,
  kHostPressureIoWaiting,
  kHostPressureIoStalled,
  kHostPressureMemoryWaiting,
  kHostDiskIoTime,
  kHostDiskReadBytes,
  kHostDiskWrittenBytes,
  kHostNetworkReceiveBytes,
  kHostNetworkTransmitBytes,
  kHostNetworkSpeed,
  kHostInfinibandReceiveBytes,
  kHostInfinibandTransmitBytes,
  kHostInfinibandRate,
  kHostProcessCpuAffinity,
  kGpuPodInfo,
  kKubeletAllocatableDevices,
  // serving
  kServingLatency,
  kServingRequestsRunning,
  kServingRequestsWaiting,
  // agent
  kAgentSourceUp,
  kAgentCollectionDuration,
  kAgentSourceAge,
  kAgentSeries,
  kAgentBuildInfo,
  kAgentSimulated,
  kAgentFinding,
  kAgentWasteGpuSeconds,
  kAgentRemoteWriteSamples,
  kAgentRemoteWriteQueueSamples,
  kAgentRemoteWriteQueueCapacity,
  kAgentRemoteWriteRetries,
  kAgentRemoteWriteLastSuccess,
  kCount  // not a field
};

inline constexpr size_t kFieldCount = static_cast<size_t>(FieldId::kCount);

struct FieldDef {
  FieldId id;
  std::string_view name;  // Prometheus sample name; counters end in _total
  MetricType type;
  std::string_view unit;  // base unit: "ratio", "bytes", "seconds", "" ...
  Layer layer;
  Scope scope;
  std::string_view help;
  // dcgm-exporter name, and the factor that turns our value into DCGM's unit
  // (e.g. 1/2^20 for bytes -> MiB); empty when DCGM has no such field.
  std::string_view dcgm_name = {};
  double dcgm_scale = 1.0;
  // false for values kept for derivation, history and DCGM names but not
  // exported natively (rates: the native form is the _total counter).
  bool native = true;
};

std::span<const FieldDef> catalog();
const FieldDef& field(FieldId id);
std::optional<FieldId> find_field(std::string_view name);
std::string_view layer_name(Layer layer);
std::string_view type_name(MetricType type);

// Name used on TYPE/HELP lines: OpenMetrics counters drop "_total", info
// families drop "_info"; text 0.0.4 uses the sample name.
std::string_view family_name(const FieldDef& f, bool openmetrics);

// Clock-event (throttle) reasons: NVML bit value and the `reason` label of
// gpu_clock_event_active / gpu_clock_event_seconds_total. DCGM's
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS uses the same bits.
struct ClockReason {
  uint64_t bit;
  std::string_view label;
};
std::span<const ClockReason> clock_reasons();

// Histogram bucket bounds (seconds) of kServingLatency, shared by every
// producer so that buckets line up.
std::span<const double> latency_buckets();

}  // namespace gpulens
