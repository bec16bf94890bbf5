// The field catalog: the one table of every signal gpulens knows.
//
// A field is one metric family: its Prometheus name, type, unit, layer, help
// text, the label scope it lives in, and its dcgm-exporter equivalent. Every
// source fills fields by id; exposition, history, `--dcgm-names`, remote_write,
// diagnosis and the terminal table all iterate this table. Adding a metric is
// one enum value plus one row in catalog.cpp.
//
//   const FieldDef& f = field(FieldId::kGpuPower);
//   f.name  == "gpu_power_watts";
//   dcgm_name(FieldId::kGpuPower) == "DCGM_FI_DEV_POWER_USAGE";
//
// Thread-safety: immutable after static initialisation.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
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
  kGpuEncoderUtil,
  kGpuDecoderUtil,
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
  kGpuAllocatorActive,
  kGpuAllocatorInactiveSplit,
  kGpuAllocatorRequested,
  kGpuAllocatorExternalFragmentation,
  kGpuAllocatorLargestFreeBlock,
  kGpuAllocatorOoms,
  kGpuAllocatorExpandableSegments,
  kGpuAllocatorSnapshotDuration,
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
  kGpuP2pStatus,
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
  kGpuXidErrorsRecent,
  kGpuClockEventsRecent,
  kGpuHealthStatus,
  kGpuRecoveryAction,
  kGpuRowRemapPending,
  kGpuLastXidInfo,
  kGpuPcieAerErrors,
  kNvswitchSxidErrors,
  kGpuNvlinkRecoveries,
  kGpuNvlinkRecoveryEvents,
  kGpuRepairPending,
  // MIG instances (series carry mig_labels(), see series.h)
  kGpuMigMode,
  kGpuMigInfo,
  kGpuMigMemoryTotal,
  kGpuMigMemoryUsed,
  kGpuMigMemoryFree,
  kGpuMigGraphicsEngineActive,
  kGpuMigSmActive,
  kGpuMigSmOccupancy,
  kGpuMigTensorActive,
  kGpuMigDramActive,
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
  kGpuJobInfo,
  kKubeletAllocatableDevices,
  // serving
  kServingLatency,
  kServingLatencyP99,
  kServingRequestsRunning,
  kServingRequestsWaiting,
  kServingRequestDuration,
  kServingRequestsSucceeded,
  kServingTimeToFirstToken,
  kServingInterTokenLatency,
  kServingQueueTime,
  kServingKvCacheUsage,
  kServingPreemptions,
  kServingPromptTokens,
  kServingGenerationTokens,
  kServingRequestsWaitingByReason,
  kServingPrefixCacheHitRatio,
  kServingBatchMaxTokens,
  kServingEngineInfo,
  // agent
  kAgentSourceUp,
  kAgentSourceDownReason,
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
  kAgentPushGroups,
  kAgentPushSeries,
  kAgentPushRejected,
  kAgentSeriesDropped,
  kAgentHistoryBytes,
  kAgentHistoryBytesPerSample,
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

// How a GPU field reads on a MIG instance. With MIG on, dcgm-exporter
// monitors each GPU instance instead of the GPU (its default, -d f): every
// row comes once per instance. Quantities of the instance (its framebuffer,
// its engines) are the instance's own: kOwn, with `own` its gpu_mig_* field;
// device-wide quantities (clocks, temperatures, power, energy, errors) are
// the parent GPU's: kDevice; what has no per-instance value (GPU-wide
// utilisation, PCIe and NVLink rates): kNone. One table for --dcgm-names
// and for reading a scraped dcgm-exporter back.
enum class MigRead : uint8_t { kDevice, kOwn, kNone };
MigRead mig_read(FieldId gpu_field, FieldId& own);

// dcgm-exporter's names: one row per DCGM_FI_* metric gpulens can emit under
// `--dcgm-names`, each reading one catalog field (or, for a label row, the
// GPU's identity). The rows of dcgm-exporter's etc/default-counters.csv keep
// that file's type and help text; the name is exported verbatim, as
// dcgm-exporter exports the CSV's first column.
enum class DcgmValue : uint8_t {
  kInt,     // DCGM_FT_INT64: printed as an integer ("%d")
  kDouble,  // DCGM_FT_DOUBLE: printed with six decimals ("%f")
  kLabel,   // a `label` row: the GPU's string value becomes a label on every series
};
// The generations of dcgm-exporter's names (the order is the release order).
enum class DcgmGeneration : uint8_t { kClassic, kDcgm49, kDcgm410 };
// One label name and value of a DCGM row (a compile-time table, so views).
struct DcgmLabel {
  std::string_view name, value;
  bool empty() const { return name.empty(); }
};

struct DcgmRow {
  std::string_view name;  // e.g. "DCGM_FI_DEV_FB_USED"
  uint16_t id;            // DCGM field id
  MetricType type;        // gauge or counter, as dcgm-exporter's CSV types it
  DcgmValue value;
  FieldId field;          // the catalog field it reads
  double scale = 1.0;     // our unit -> DCGM's (bytes -> MiB is 2^-20)
  // Only the series of `field` whose extra labels are exactly this one
  // label (empty name: none), so that one field with a label can feed two
  // DCGM names.
  DcgmLabel extra = {};
  std::string_view help = {};
  bool default_counter = false;  // a row of dcgm-exporter's etc/default-counters.csv
  // Sum over every series of `field` and `field2` of the GPU (all NVLink
  // links, both directions) instead of one series.
  FieldId field2 = FieldId::kCount;
  // The dcgm-exporter release whose default names include this row's name,
  // and the older name it replaces ("" = none): DCGM 4.6/4.7 renamed most
  // fields, dcgm-exporter 4.9 writes the new names by default and 4.10
  // renames the profiling byte rates (docs/scrape.md lists them).
  DcgmGeneration since = DcgmGeneration::kClassic;
  std::string_view renames = {};
};
std::span<const DcgmRow> dcgm_rows();
const DcgmRow* find_dcgm_row(std::string_view name);
// Whether `--dcgm-names=<naming>` writes this row: the rows of that naming's
// release (kDcgm410 rows are read, never written), less those a row of the
// release renames. Classic: dcgm-exporter up to 4.8, what NVIDIA's dashboard
// 12239 and existing alert rules query.
bool dcgm_written(const DcgmRow& row, DcgmGeneration naming);
// A renamed utilisation ratio (DCGM_FI_DEV_GPU_UTIL_RATIO, ...): DCGM 4.6.x
// gave the name to the percent field (203), DCGM 4.7 to a new ratio field
// (1613). A reader takes a value above 1 as percent (a ratio is at most 1).
bool dcgm_percent_or_ratio(const DcgmRow& row);
// The driver-version label row a naming writes (DCGM_FI_DRIVER_VERSION,
// DCGM_FI_SYSTEM_DRIVER_VERSION).
std::string_view dcgm_driver_row(DcgmGeneration naming);
// The first classic DCGM name that reads `id` ("" when none), and all of them.
std::string_view dcgm_name(FieldId id);
std::string dcgm_names_of(FieldId id);  // joined with ", "

// Histogram bucket bounds (seconds) of kServingLatency, shared by every
// producer so that buckets line up.
std::span<const double> latency_buckets();

}  // namespace gpulens
