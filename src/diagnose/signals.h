// Canonical signals: what diagnosis reads, whatever produced the data.
//
// Three naming worlds (gpulens, dcgm-exporter + node_exporter, serving
// engines) are mapped (mapping.h) onto one small vocabulary of signals, each a
// time series of (t_ms, value) in a fixed unit: ratios in 0..1, bytes per
// second, watts, celsius, hertz. Counters arrive here already turned into
// per-second rates. A signal nobody provided is an empty series: absent, never
// zero, so that a rule can say "not assessed: no profiling fields".
//
//   const Series& sm = gpu.sig(GpuSig::kSmActive);
//   if (sm.empty()) ...            // the source had no DCGM profiling fields
//
// Thread-safety: plain values.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpulens::diagnose {

struct Point {
  int64_t t_ms;
  double v;
};
using Series = std::vector<Point>;  // sorted by time

enum class GpuSig : uint8_t {
  kGpuUtil,          // ratio: a kernel ran during the period (coarse)
  kSmActive,         // ratio
  kSmOccupancy,      // ratio
  kGrActive,         // ratio: graphics/compute engine active
  kTensorActive,     // ratio
  kDramActive,       // ratio: memory bandwidth utilisation
  kFbUsed,           // bytes
  kFbFree,           // bytes
  kFragmentation,    // ratio (in-process allocator)
  kPcieRxBps,        // bytes/s host -> device
  kPcieTxBps,        // bytes/s device -> host
  kPcieRxUtil,       // ratio of the peak, when the source computed it
  kPcieTxUtil,
  kPciePeak,         // bytes/s per direction, calibrated or nominal
  kLinkGen,
  kLinkGenMax,
  kLinkWidth,
  kLinkWidthMax,
  kLinkGenCalibrated,    // link at calibration time (gpulens calibrate)
  kLinkWidthCalibrated,
  kNvlinkRxBps,
  kNvlinkTxBps,
  kNvlinkUtil,       // ratio
  kTemperature,      // celsius
  kPower,            // watts
  kPowerLimit,       // watts
  kSmClock,          // hertz
  kSmClockMax,       // hertz
  kThermalThrottle,  // 1 while a thermal clock-event reason holds
  kPowerThrottle,    // 1 while a power-cap/brake reason holds
  kXidRate,          // XID events per second (from counters)
  kLastXid,          // code of the most recent XID (0: none)
  kGpuUp,            // 1 answering, 0 lost
  kEccUncorrectedRate,
  kRowRemapFailure,
  kNumaNode,         // NUMA node the GPU is attached to (gpu_numa_node)
  kExternalFragmentation,  // ratio: 1 - largest free block / free bytes, worst large pool (allocator snapshot)
  kAllocRetryRate,   // allocator retries per second (cache flushed and allocation retried)
  kAllocOomRate,     // allocator out-of-memory errors per second
  kHealthStatus,     // worst DCGM health watch result: 0 pass, 10 warn, 20 fail (dcgm-exporter)
  kRecoveryAction,   // NVML's recovery action: 0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain and reset
  kCount
};

enum class HostSig : uint8_t {
  kCpuTotal,      // cpu-seconds/s over all modes (= online CPUs); input to kCpuBusy
  kCpuIdle,       // cpu-seconds/s idle
  kCpuIowaitRaw,  // cpu-seconds/s iowait
  kCpuBusy,       // ratio: 1 - (idle + iowait) / total  (derived)
  kIowait,        // ratio: iowait / total                (derived)
  kPsiCpu,        // ratio of time some task waited for a CPU
  kPsiIo,         // ratio of time some task waited for IO
  kDiskBusy,      // ratio, busiest disk
  kNicRxBps,      // busiest Ethernet NIC
  kNicTxBps,
  kNicSpeed,      // bytes/s line rate of the fastest NIC
  kIbRxBps,       // all InfiniBand/RoCE ports
  kIbTxBps,
  kLatencyP99,    // seconds (from a latency histogram)
  kLatencyMean,   // seconds (Triton: duration / count)
  kRequestsRunning,
  kRequestsWaiting,
  kIbRate,        // bytes/s rate of the fastest InfiniBand/RoCE port
  kNicUtil,       // ratio: the busiest Ethernet interface's traffic (rx or tx) over its own speed (derived)
  kIbUtil,        // ratio: the busiest InfiniBand/RoCE port's traffic over its own rate (derived)
  // An inference engine's saturation (docs/serving.md), in the engine's own
  // meaning: vLLM's KV-cache usage, SGLang's token usage.
  kKvCacheUsage,       // ratio of the engine's KV-cache blocks (tokens) in use, the fullest engine
  kPreemptionRate,     // preempted requests per second (vLLM)
  kPromptTokensRate,   // prompt tokens per second
  kGenerationTokensRate,  // generated tokens per second
  kTtftP99,            // seconds: time to first token, p99 (from its histogram)
  kInterTokenP99,      // seconds: time between output tokens, p99 (from its histogram)
  kQueueTimeP99,       // seconds: time a request waited in the queue, p99 (from its histogram)
  kWaitingForCapacity, // requests waiting for KV-cache space or a batch slot (vLLM V1 reason="capacity")
  kPrefixCacheHitRatio,  // ratio of looked-up prompt tokens the prefix cache held (vLLM V1 counters, SGLang)
  kBatchMaxTokens,     // tokens the running batch may grow to (TGI; its cap is --max-batch-total-tokens)
  kCount
};

inline constexpr size_t kGpuSigCount = static_cast<size_t>(GpuSig::kCount);
inline constexpr size_t kHostSigCount = static_cast<size_t>(HostSig::kCount);

// DCGM's health result FAIL (dcgmHealthResult: PASS 0, WARN 10, FAIL 20): a
// health watch (PCIE, MEM, ...) at it is a hardware fault, for the diagnosis
// rule hardware_errors and the alert GPUHealthWatchFailed alike.
inline constexpr double kHealthFail = 20;

std::string_view signal_name(GpuSig s);
std::string_view signal_name(HostSig s);

// Placement facts (topology cause). Static per GPU: the path to each peer
// GPU as nvidia-smi topo -m names it (NVLINK, PIX, PXB, PHB, NODE, SYS) and
// the CPUs close to the GPU (kernel list syntax, "0-47"). Empty: unknown.
// A MIG GPU instance diagnosed as an entity of its own, beside its GPU:
// its index is "<gpu>/gi<id>" ("0/gi7"). Sources name it by dcgm-exporter's
// GPU_I_ID/GPU_I_PROFILE or gpulens' gpu_instance_id/mig_profile/mig_uuid.
struct MigInstance {
  std::string gpu;           // the parent GPU's index
  std::string gpu_instance;  // the GPU instance id; empty: a whole GPU
  std::string profile;       // "3g.40gb"
  std::string uuid;          // "MIG-..." where the source gives it
  bool empty() const { return gpu_instance.empty(); }
  // "MIG 3g.40gb, GPU instance 7 of GPU 0"
  std::string describe() const {
    return "MIG " + (profile.empty() ? std::string("instance") : profile) + ", GPU instance " + gpu_instance +
           " of GPU " + gpu;
  }
};

struct GpuSignals {
  std::string index;  // "0", "1", ... as labelled; "0/gi7" for a MIG instance
  std::string uuid;
  std::string model;
  std::map<std::string, std::string> peer_paths;  // peer index -> path
  std::string local_cpus;
  MigInstance mig;    // set on a MIG instance
  // The training job the GPU runs (docs/jobs.md): its id and where that came
  // from ("slurm", "kubernetes", "environment"); empty: no job information,
  // the GPU counts in its host's job.
  std::string job;
  std::string job_source;
  // Other jobs that claim the GPU at the same time as `job` (their claims'
  // spans overlap): the GPU belongs to each of them (docs/jobs.md). A job
  // that ended before `job` started is not listed.
  struct JobClaim {
    std::string job, source;
    bool operator==(const JobClaim&) const = default;
  };
  std::vector<JobClaim> also_jobs;
  std::array<Series, kGpuSigCount> sigs;
  Series& sig(GpuSig s) { return sigs[static_cast<size_t>(s)]; }
  const Series& sig(GpuSig s) const { return sigs[static_cast<size_t>(s)]; }
  // The in-process allocator signals per pushing process ("pid 4242", with
  // " (namespace/pod)" when known): which process a memory finding is about.
  std::map<std::pair<GpuSig, std::string>, Series> by_process;
  // kHealthStatus per DCGM health watch, "PCIE (DCGM_FR_PCI_REPLAY_RATE)":
  // which watch a hardware finding is about.
  std::map<std::string, Series> health_watches;
};

// One GPU a process uses, and where the process may run
// (host_gpu_process_affinity_info): a process on several GPUs has one entry
// per GPU. `present` holds a point (value 1) at each time it was seen.
struct ProcessPlacement {
  std::string pid;
  std::string gpu;         // GPU index
  std::string cpus;        // allowed CPUs, kernel list syntax ("0-47,96-143")
  std::string numa_nodes;  // allowed NUMA nodes, kernel list syntax ("0")
  Series present;
};

// One network link judged on its own: an Ethernet interface against its
// speed, an InfiniBand/RoCE port against its rate. Only links with a known
// speed are kept (the host source gives none to virtual interfaces and bond
// slaves; node_exporter's loopback, container and IPoIB devices are skipped).
struct LinkSignals {
  std::string device;        // "eth0", "bond0"; "mlx5_0/1" for a port
  bool infiniband = false;
  double speed = 0;          // bytes/s, the largest seen
  Series util;               // ratio: max(rx, tx) / speed
};

// One serving engine (docs/serving.md), judged on its own series: its kind
// (vllm, sglang, tgi, triton; "engine" when the series do not say), where
// it answers, and the GPUs it runs on. Only the serving signals of `sigs`
// are set (HostSig::kLatencyP99 .. kQueueTimeP99, the engine's own).
struct EngineSignals {
  std::string kind;
  std::string endpoint;  // its scrape target (label endpoint, else instance); "" unknown
  std::string model;     // label model_name where the series carry it
  std::string pid;       // its process, where its series say (label pid)
  std::string pod;       // "namespace/pod", where its series say
  // GPU indexes it runs on, joined by its pid on a GPU's process list, else
  // by a pod it shares with GPUs, else as the only engine of its host (which
  // owns all the host's GPUs); empty: unjoined. `joined_by` says which:
  // "pid", "pod", "only engine", "".
  std::vector<std::string> gpus;
  std::string joined_by;
  // Why its numbers are not judged ("" when they are): a value no engine
  // can mean (a KV-cache usage above 1, a negative count).
  std::string invalid;
  std::array<Series, kHostSigCount> sigs;
  Series completions;  // requests completed per second (its latency histogram's count)
  Series& sig(HostSig s) { return sigs[static_cast<size_t>(s)]; }
  const Series& sig(HostSig s) const { return sigs[static_cast<size_t>(s)]; }
  // "vllm at http://10.0.0.7:8000/metrics (pid 5001)"
  std::string describe() const;
};

struct HostSignals {
  std::string name;
  std::vector<EngineSignals> engines;  // by (kind, endpoint)
  std::vector<LinkSignals> links;  // by device
  std::vector<GpuSignals> gpus;  // ordered by index
  std::vector<ProcessPlacement> processes;  // ordered by (pid, gpu)
  std::array<Series, kHostSigCount> sigs;
  Series& sig(HostSig s) { return sigs[static_cast<size_t>(s)]; }
  const Series& sig(HostSig s) const { return sigs[static_cast<size_t>(s)]; }
  // The host's agent served simulated data (gpulens_simulated 1 at some
  // sample): every report of it says so. `scenario` from its label.
  bool simulated = false;
  std::string scenario;
};

struct SignalSet {
  std::vector<HostSignals> hosts;  // ordered by name
  int64_t from_ms = 0;             // the window the data covers
  int64_t to_ms = 0;
  // One point in time (a plain scrape without timestamps): from_ms == to_ms,
  // counters have no rates, and diagnosis judges only what needs no duration.
  bool point_in_time = false;
};

// --- series helpers -------------------------------------------------------

// Per-second rate of a counter: one point per consecutive pair, at the later
// time. A decrease (counter reset) or a gap longer than `max_gap_ms` yields
// no point for that interval, so neither is mistaken for a burst or a lull.
Series counter_rate(const Series& counter, int64_t max_gap_ms);

// Sorted-merge of several series with `op` on equal timestamps ("sum" or
// "max"): combines disks, NICs, CPU modes.
enum class Combine : uint8_t { kSum, kMax };
Series combine(const std::vector<const Series*>& parts, Combine op);

// Median interval between points (0 for fewer than two points).
int64_t median_step_ms(const Series& s);

// Parses a kernel list ("0-3,8,10-11") into its members, sorted; nullopt
// when malformed or absurdly large (over 65536 members).
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);

}  // namespace gpulens::diagnose
