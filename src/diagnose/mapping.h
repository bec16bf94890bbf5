// Mapping metric names from three naming worlds onto canonical signals.
//
// gpulens' own names (gpu_sm_active_ratio, host_cpu_seconds_total{mode} ...),
// dcgm-exporter (DCGM_FI_DEV_*, DCGM_FI_PROF_*, in the classic names and in
// DCGM 4.6/4.7's that dcgm-exporter 4.9 and 4.10 write, derived from the
// catalog's DCGM rows; labels gpu/UUID/modelName/Hostname or hostname, and
// the label rows DCGM_FI_DEV_UUID/_NAME), node_exporter (node_cpu_seconds_total, node_pressure_*,
// node_disk_*, node_network_*, node_infiniband_*) and serving engines (vLLM
// vllm:*, SGLang sglang:*, TGI tgi_*, Triton nv_inference_*) all land in one
// SignalSet with fixed units:
// DCGM percentages become ratios, MiB become bytes, MHz become hertz, counters
// become per-second rates, clock-event bitmasks become thermal/power flags,
// latency histograms become a p99 series each (end to end beside Triton's
// own summary p99, time to first token, inter-token, queue time), the
// engines' KV-cache usage one ratio (vLLM V0 gpu_cache_usage_perc, V1
// kv_cache_usage_perc, SGLang token_usage), the prefix-cache hit ratio one
// ratio (vLLM V1's hits over queries, rate over rate; SGLang cache_hit_rate),
// requests waiting for capacity (vLLM V1 num_requests_waiting_by_reason
// {reason="capacity"}), TGI's batch_current_max_tokens the batch's tokens,
// SGLang series of a tp_rank or
// pp_rank other than 0 nothing (every rank repeats the engine's counts),
// dcgm-exporter's windowed XID counts the last XID, its health watches a
// health status.
//
// A MIG instance (labels GPU_I_ID/GPU_I_PROFILE of dcgm-exporter, or
// gpu_instance_id/mig_profile/mig_uuid of gpulens' gpu_mig_* series) is an
// entity of its own, "<gpu>/gi<id>", never merged into its GPU; the compute
// instances of one GPU instance are one entity.
//
// Series join by host: the `hostname`/`Hostname` label, else the host part of
// `instance` (domain stripped unless it is an IP address). Hosts that hold a
// GPU of the same UUID are one machine named twice (gpulens' native names
// under the scrape's `instance`, its --dcgm-names under `Hostname`): they
// join, and each signal of a GPU comes from one naming, never added up.
// When the data then holds exactly one GPU host and one other host name,
// they are the same machine (a recording of one node) and everything joins.
//
//   SignalSetBuilder b;
//   b.add("DCGM_FI_DEV_GPU_UTIL", {{"gpu","0"},{"Hostname","n1"}}, points);
//   SignalSet set = b.build();
//
// The scrape source maps scraped names onto the field catalog through this
// same table (sources/scrape/catalog_targets.h): a foreign name fills the
// catalog field whose own name has the same bindings here.
//
// Thread-safety: a builder is used from one thread.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnose/signals.h"
#include "expfmt/text.h"

namespace gpulens::diagnose {

using LabelPair = expfmt::Label;
using LabelSpan = expfmt::LabelSpan;

// What one input series feeds: a GPU signal, a host signal, or an input to a
// derived host signal (latency histogram bucket, Triton duration/count).
struct Binding {
  // kPeerPath, kLocalCpus, kProcess: placement facts read from the labels
  // of info series (gpu_topology_info, gpu_cpu_affinity_info,
  // host_gpu_process_affinity_info).
  // kCarried: a series no rule judges (sig: a CarriedSig), known here so
  // that the scrape maps it onto its catalog field by this same table.
  // kPrefixHits, kPrefixQueries: vLLM V1's prefix-cache counters, whose
  // rates' ratio is the engine's kPrefixCacheHitRatio.
  // kJob: gpu_job_info{gpu, job, source} (docs/jobs.md); kPodLabels:
  // kube-state-metrics' kube_pod_labels, whose job-owner label names the job
  // of the GPUs a pod uses (joined by namespace/pod to the GPU series).
  enum class Kind : uint8_t {
    kGpu, kHost, kLatencyBucket, kTritonDuration, kTritonCount, kTritonSuccess, kPeerPath, kLocalCpus, kProcess,
    kCarried, kJob, kPodLabels, kPrefixHits, kPrefixQueries
  };
  // kPercentOrRatio: a DCGM utilisation under its _RATIO name, percent in
  // DCGM 4.6.x and a ratio from 4.7 (model/catalog.h dcgm_percent_or_ratio):
  // a series with a value above 1 is percent (scaled by 0.01), else a ratio.
  enum class Transform : uint8_t { kNone, kMask, kEventCode, kPercentOrRatio };
  Kind kind = Kind::kGpu;
  uint8_t sig = 0;            // GpuSig or HostSig
  bool counter = false;       // input is a cumulative counter: take its rate
  double scale = 1.0;         // applied after the rate
  Transform transform = Transform::kNone;
  uint64_t mask = 0;          // kMask: value = (uint64(v) & mask) != 0
  double code = 0;            // kEventCode: value = code while the rate is > 0, else 0
  double le = 0;              // kLatencyBucket: upper bound
  // A negative value means "unknown" (a link speed: sysfs -1, which
  // node_exporter writes as -125000 bytes): such points are absent.
  bool negative_is_unknown = false;
};

// What a Binding::Kind::kCarried series is (dcgm-exporter's DCGM_EXP_*
// families the diagnosis does not judge: docs/scrape.md says why).
// serving_engine_info names an engine's model (its label model); the
// engine entity reads it from the labels.
// serving_requests_waiting_by_reason of a reason other than "capacity"
// (vLLM's "deferred") is kept, not judged.
enum class CarriedSig : uint8_t { kClockEventsRecent, kP2pStatus, kEngineInfo, kWaitingOtherReason };

// Bindings of one series (empty: not a name diagnosis uses). A series may feed
// more than one signal (CPU mode idle feeds both "total" and "idle").
std::vector<Binding> map_series(std::string_view name, LabelSpan labels);

// gpulens' own mark of simulated data (gpulens_simulated{scenario} 1): no
// signal, but the builder marks its host simulated (HostSignals::simulated),
// so that every report of that data says so.
inline constexpr std::string_view kSimulatedFamily = "gpulens_simulated";

// True when map_series() could return bindings for some label set of `name`,
// or `name` is kSimulatedFamily; lets a parser drop unknown families before
// storing their points.
bool known_name(std::string_view name);

// Every family name map_series() knows (sample names, e.g. *_bucket).
std::vector<std::string_view> known_names();

// Prefixes of network interfaces that never carry training or serving
// traffic between nodes (loopback, bridges, container and CNI devices), and
// of IPoIB devices (their traffic is counted on the InfiniBand port): the
// NIC signals leave them out. The web page keeps a copy (report_test checks it).
std::span<const std::string_view> non_ethernet_prefixes();

// The host a series belongs to ("" when it carries no host label).
std::string host_key(LabelSpan labels);

class SignalSetBuilder {
 public:
  // Adds one input series. `already_rate`: counters were converted upstream
  // (the live history keeps rates). Returns false when the name is unknown.
  bool add(std::string_view name, LabelSpan labels, Series points, bool already_rate = false);
  // Adds an input series under an explicit host (overrides labels).
  bool add_for_host(std::string_view host, std::string_view name, LabelSpan labels, Series points,
                    bool already_rate = false);

  size_t unknown_series() const { return unknown_; }
  size_t known_series() const { return known_; }

  // Joins hosts, combines parts, derives CPU busy, iowait and latency p99.
  // The window defaults to the span of the data.
  SignalSet build(std::optional<int64_t> from_ms = {}, std::optional<int64_t> to_ms = {});

 private:
  struct GpuAcc {
    std::string uuid, model;
    // A job's claim on the GPU: when it was seen first and last, and its source.
    struct JobSeen {
      int64_t first = INT64_MAX, last = INT64_MIN;
      std::string source;
    };
    std::map<std::string, JobSeen> jobs;  // by job id
    std::string pod;  // "namespace/pod" of dcgm-exporter's pod mapping
    MigInstance mig;
    std::map<std::string, std::string> peer_paths;
    std::string local_cpus;
    std::vector<std::vector<Series>> parts = std::vector<std::vector<Series>>(kGpuSigCount);
    std::map<std::pair<GpuSig, std::string>, std::vector<Series>> by_process;  // allocator signals per pid
    std::map<std::string, std::vector<Series>> health_watches;                  // kHealthStatus per watch
  };
  struct EngineAcc {
    std::string kind, endpoint, model, pid, pod;
    std::vector<std::vector<Series>> parts = std::vector<std::vector<Series>>(kHostSigCount);
    std::map<uint8_t, std::map<double, std::vector<Series>>> buckets;
    std::vector<Series> triton_duration, triton_count, triton_success;
    std::vector<Series> prefix_hits, prefix_queries;  // rates of vLLM's prefix-cache counters
    std::string invalid;  // the first value no engine can mean
  };
  struct LinkAcc {
    std::array<std::vector<Series>, 3> parts;  // rx, tx, speed
  };
  struct HostAcc {
    std::vector<std::vector<Series>> parts = std::vector<std::vector<Series>>(kHostSigCount);
    std::map<uint8_t, std::map<double, std::vector<Series>>> buckets;  // p99 HostSig -> le -> bucket rates
    std::vector<Series> triton_duration, triton_count, triton_success;
    std::map<std::string, GpuAcc> gpus;              // by index
    // by pid, gpu, cpus, numa_nodes: a changed affinity is a new entry
    std::map<std::string, ProcessPlacement> processes;
    std::map<std::string, std::vector<Series>> presence;
    std::map<std::pair<bool, std::string>, LinkAcc> links;  // (infiniband, device) -> rx, tx, speed
    bool simulated = false;  // kSimulatedFamily at 1
    std::string scenario;
    std::map<std::string, EngineAcc> engines;  // by kind and endpoint
  };
  GpuAcc& gpu_of(HostAcc& host, LabelSpan labels);
  // The host's engines with their own signals, each joined to its GPUs.
  void build_engines(HostAcc& host, HostSignals& hs);
  // Joins hosts that hold a GPU of the same UUID (one machine, two namings).
  void join_by_uuid();
  void feed(HostAcc& host, const Binding& b, LabelSpan labels, Series points, bool already_rate,
            EngineAcc* engine = nullptr);

  std::map<std::string, HostAcc> hosts_;
  std::map<std::string, std::string> pod_jobs_;  // "namespace/pod" -> job (kube_pod_labels)
  std::set<std::string, std::less<>> named_hosts_;  // keyed by a hostname/Hostname label, not instance
  size_t unknown_ = 0;
  size_t known_ = 0;
  int64_t min_t_ = INT64_MAX;
  int64_t max_t_ = INT64_MIN;
};

// p99 (or any q) of a cumulative histogram given per-bucket values sorted by
// upper bound (the last bound may be +Inf). Linear within the bucket; NaN when
// the total is zero.
double histogram_quantile(double q, std::span<const std::pair<double, double>> buckets);

}  // namespace gpulens::diagnose
