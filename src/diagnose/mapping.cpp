// Name tables for the three naming worlds, and the builder that joins the
// mapped series into a SignalSet.
#include "diagnose/mapping.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "model/catalog.h"

namespace gpulens::diagnose {
namespace {

using F = FieldId;
using K = Binding::Kind;
using T = Binding::Transform;

// A catalog field's name: the catalog spells each native name once.
std::string_view native(FieldId id) { return field(id).name; }

constexpr double kMiB = 1024.0 * 1024.0;
// NVML clock-event bits (reference §2.6).
constexpr uint64_t kThermalBits = 0x20 | 0x40;      // sw + hw thermal slowdown
constexpr uint64_t kPowerBits = 0x04 | 0x80;        // sw power cap + hw power brake

Binding gpu(GpuSig s, double scale = 1.0, bool counter = false) {
  return {.kind = K::kGpu, .sig = static_cast<uint8_t>(s), .counter = counter, .scale = scale};
}
Binding host(HostSig s, bool counter = false, double scale = 1.0) {
  return {.kind = K::kHost, .sig = static_cast<uint8_t>(s), .counter = counter, .scale = scale};
}
Binding carried(CarriedSig s) { return {.kind = K::kCarried, .sig = static_cast<uint8_t>(s)}; }
Binding mask(GpuSig s, uint64_t m) {
  Binding b = gpu(s);
  b.transform = T::kMask;
  b.mask = m;
  return b;
}

std::vector<Binding> labelled_bindings(std::string_view name, LabelSpan labels);

// The catalog's DCGM rows, bound through the native name of the field each
// reads: DCGM's unit * (1 / the row's scale) = the native unit. A row read
// with extra labels (ECC errors by type) binds as its native name with those
// labels; a row that sums two fields (NVLink both ways) or carries a label
// binds nothing, as does one whose native name the diagnosis does not read.
void dcgm_bindings(std::unordered_map<std::string_view, std::vector<Binding>>& t) {
  for (const DcgmRow& row : dcgm_rows()) {
    if (row.value == DcgmValue::kLabel || row.field2 != FieldId::kCount || row.scale == 0) continue;
    const std::string_view name = native(row.field);
    std::vector<Binding> b;
    if (row.extra.empty()) {
      const auto it = t.find(name);
      if (it == t.end()) continue;
      b = it->second;
    } else {
      const LabelPair extra[] = {{row.extra.name, row.extra.value}};
      b = labelled_bindings(name, extra);
    }
    if (b.empty()) continue;
    // The reciprocal of a decimal unit factor (1e-6 Hz -> MHz) to 15
    // significant digits, so that it is the factor itself (1e6, not
    // 999999.9999999999).
    char reciprocal[32];
    std::snprintf(reciprocal, sizeof reciprocal, "%.15g", 1.0 / row.scale);
    const double to_native = std::strtod(reciprocal, nullptr);
    for (Binding& x : b) {
      x.scale *= to_native;
      if (dcgm_percent_or_ratio(row)) x.transform = T::kPercentOrRatio;
    }
    t[row.name] = std::move(b);
  }
}

// Names whose binding does not depend on labels.
const std::unordered_map<std::string_view, std::vector<Binding>>& simple_table() {
  static const std::unordered_map<std::string_view, std::vector<Binding>> table = [] {
    using G = GpuSig;
    using H = HostSig;
    std::unordered_map<std::string_view, std::vector<Binding>> t;
    // gpulens native
    t[native(F::kGpuUtilization)] = {gpu(G::kGpuUtil)};
    t[native(F::kGpuSmActive)] = {gpu(G::kSmActive)};
    t[native(F::kGpuSmOccupancy)] = {gpu(G::kSmOccupancy)};
    t[native(F::kGpuGraphicsEngineActive)] = {gpu(G::kGrActive)};
    t[native(F::kGpuTensorActive)] = {gpu(G::kTensorActive)};
    t[native(F::kGpuDramActive)] = {gpu(G::kDramActive)};
    t[native(F::kGpuMemoryUsed)] = {gpu(G::kFbUsed)};
    t[native(F::kGpuMemoryFree)] = {gpu(G::kFbFree)};
    t[native(F::kGpuMemoryFragmentation)] = {gpu(G::kFragmentation)};
    // gpulens native, per MIG instance (MIG labels: an entity of its own)
    t[native(F::kGpuMigGraphicsEngineActive)] = {gpu(G::kGrActive)};
    t[native(F::kGpuMigSmActive)] = {gpu(G::kSmActive)};
    t[native(F::kGpuMigSmOccupancy)] = {gpu(G::kSmOccupancy)};
    t[native(F::kGpuMigTensorActive)] = {gpu(G::kTensorActive)};
    t[native(F::kGpuMigDramActive)] = {gpu(G::kDramActive)};
    t[native(F::kGpuMigMemoryUsed)] = {gpu(G::kFbUsed)};
    t[native(F::kGpuMigMemoryFree)] = {gpu(G::kFbFree)};
    t[native(F::kGpuAllocatorRetries)] = {gpu(G::kAllocRetryRate, 1.0, true)};
    t[native(F::kGpuAllocatorOoms)] = {gpu(G::kAllocOomRate, 1.0, true)};
    t[native(F::kGpuPcieRxBytes)] = {gpu(G::kPcieRxBps, 1.0, true)};
    t[native(F::kGpuPcieTxBytes)] = {gpu(G::kPcieTxBps, 1.0, true)};
    t[native(F::kGpuPcieRxRate)] = {gpu(G::kPcieRxBps)};
    t[native(F::kGpuPcieTxRate)] = {gpu(G::kPcieTxBps)};
    t[native(F::kGpuPcieRxUtil)] = {gpu(G::kPcieRxUtil)};
    t[native(F::kGpuPcieTxUtil)] = {gpu(G::kPcieTxUtil)};
    t[native(F::kGpuPciePeak)] = {gpu(G::kPciePeak)};
    t[native(F::kGpuPcieLinkGen)] = {gpu(G::kLinkGen)};
    t[native(F::kGpuPcieLinkGenMax)] = {gpu(G::kLinkGenMax)};
    t[native(F::kGpuPcieLinkWidth)] = {gpu(G::kLinkWidth)};
    t[native(F::kGpuPcieLinkWidthMax)] = {gpu(G::kLinkWidthMax)};
    t[native(F::kGpuPcieLinkGenCalibrated)] = {gpu(G::kLinkGenCalibrated)};
    t[native(F::kGpuPcieLinkWidthCalibrated)] = {gpu(G::kLinkWidthCalibrated)};
    t[native(F::kGpuNvlinkRxBytes)] = {gpu(G::kNvlinkRxBps, 1.0, true)};
    t[native(F::kGpuNvlinkTxBytes)] = {gpu(G::kNvlinkTxBps, 1.0, true)};
    t[native(F::kGpuNvlinkRxRate)] = {gpu(G::kNvlinkRxBps)};
    t[native(F::kGpuNvlinkTxRate)] = {gpu(G::kNvlinkTxBps)};
    t[native(F::kGpuNvlinkUtil)] = {gpu(G::kNvlinkUtil)};
    t[native(F::kGpuTemperature)] = {gpu(G::kTemperature)};
    t[native(F::kGpuPower)] = {gpu(G::kPower)};
    t[native(F::kGpuPowerLimit)] = {gpu(G::kPowerLimit)};
    t[native(F::kGpuSmClock)] = {gpu(G::kSmClock)};
    t[native(F::kGpuSmClockMax)] = {gpu(G::kSmClockMax)};
    t[native(F::kGpuClockEventReasons)] = {mask(G::kThermalThrottle, kThermalBits), mask(G::kPowerThrottle, kPowerBits)};
    t[native(F::kGpuLastXid)] = {gpu(G::kLastXid)};
    t[native(F::kGpuUp)] = {gpu(G::kGpuUp)};
    t[native(F::kGpuRowRemapFailure)] = {gpu(G::kRowRemapFailure)};
    t[native(F::kGpuRecoveryAction)] = {gpu(G::kRecoveryAction)};
    t[native(F::kGpuNumaNode)] = {gpu(G::kNumaNode)};
    t[native(F::kGpuTopology)] = {{.kind = K::kPeerPath}};
    t[native(F::kGpuCpuAffinity)] = {{.kind = K::kLocalCpus}};
    t[native(F::kHostProcessCpuAffinity)] = {{.kind = K::kProcess}};
    t[native(F::kGpuJobInfo)] = {{.kind = K::kJob}};
    t["kube_pod_labels"] = {{.kind = K::kPodLabels}};
    t[native(F::kHostPressureCpuWaiting)] = {host(H::kPsiCpu, true)};
    t[native(F::kHostPressureIoWaiting)] = {host(H::kPsiIo, true)};
    t[native(F::kHostDiskIoTime)] = {host(H::kDiskBusy, true)};
    t[native(F::kHostInfinibandReceiveBytes)] = {host(H::kIbRxBps, true)};
    t[native(F::kHostInfinibandTransmitBytes)] = {host(H::kIbTxBps, true)};
    t[native(F::kHostInfinibandRate)] = {host(H::kIbRate)};
    t[native(F::kServingRequestsRunning)] = {host(H::kRequestsRunning)};
    t[native(F::kServingRequestsWaiting)] = {host(H::kRequestsWaiting)};
    t[native(F::kServingRequestDuration)] = {{.kind = K::kTritonDuration, .counter = true}};
    t[native(F::kServingRequestsSucceeded)] = {{.kind = K::kTritonSuccess, .counter = true}};
    t[native(F::kServingLatencyP99)] = {host(H::kLatencyP99)};
    t[native(F::kServingKvCacheUsage)] = {host(H::kKvCacheUsage)};
    t[native(F::kServingPreemptions)] = {host(H::kPreemptionRate, true)};
    t[native(F::kServingPromptTokens)] = {host(H::kPromptTokensRate, true)};
    t[native(F::kServingGenerationTokens)] = {host(H::kGenerationTokensRate, true)};
    t[native(F::kServingPrefixCacheHitRatio)] = {host(H::kPrefixCacheHitRatio)};
    t[native(F::kServingBatchMaxTokens)] = {host(H::kBatchMaxTokens)};
    t[native(F::kGpuHealthStatus)] = {gpu(G::kHealthStatus)};
    t[native(F::kGpuClockEventsRecent)] = {carried(CarriedSig::kClockEventsRecent)};
    t[native(F::kGpuP2pStatus)] = {carried(CarriedSig::kP2pStatus)};
    t[native(F::kServingEngineInfo)] = {carried(CarriedSig::kEngineInfo)};
    // dcgm-exporter (reference §4.4, §4.5): the catalog's rows own the
    // DCGM_FI_* names (dcgm_rows()); each binds as the native field it reads,
    // in DCGM's unit — added by dcgm_bindings() below.
    // Read, never written: DCGM_FI_DEV_POWER_MGMT_LIMIT (field 157) has no
    // catalog row, since gpulens writes the enforced limit (field 158) under
    // --dcgm-names; an exporter configured with 157 gives the same watts.
    t["DCGM_FI_DEV_POWER_MGMT_LIMIT"] = {gpu(G::kPowerLimit)};
    // dcgm-exporter's own families (reference §3.6; docs/scrape.md)
    t["DCGM_EXP_GPU_HEALTH_STATUS"] = {gpu(G::kHealthStatus)};
    t["DCGM_EXP_CLOCK_EVENTS_COUNT"] = {carried(CarriedSig::kClockEventsRecent)};
    t["DCGM_EXP_P2P_STATUS"] = {carried(CarriedSig::kP2pStatus)};
    // node_exporter
    t["node_pressure_cpu_waiting_seconds_total"] = {host(H::kPsiCpu, true)};
    t["node_pressure_io_waiting_seconds_total"] = {host(H::kPsiIo, true)};
    t["node_disk_io_time_seconds_total"] = {host(H::kDiskBusy, true)};
    t["node_infiniband_port_data_received_bytes_total"] = {host(H::kIbRxBps, true)};
    t["node_infiniband_port_data_transmitted_bytes_total"] = {host(H::kIbTxBps, true)};
    t["node_infiniband_rate_bytes_per_second"] = {host(H::kIbRate)};
    // vLLM
    t["vllm:num_requests_running"] = {host(H::kRequestsRunning)};
    t["vllm:num_requests_waiting"] = {host(H::kRequestsWaiting)};
    // V0's name and V1's for the same ratio of KV-cache blocks in use (0..1
    // in both, despite "perc"; docs/serving.md).
    t["vllm:gpu_cache_usage_perc"] = {host(H::kKvCacheUsage)};
    t["vllm:kv_cache_usage_perc"] = {host(H::kKvCacheUsage)};
    t["vllm:num_preemptions_total"] = {host(H::kPreemptionRate, true)};
    t["vllm:prompt_tokens_total"] = {host(H::kPromptTokensRate, true)};
    t["vllm:generation_tokens_total"] = {host(H::kGenerationTokensRate, true)};
    // V1's prefix cache, in tokens: looked up, and found (their rates' ratio).
    t["vllm:prefix_cache_hits_total"] = {{.kind = K::kPrefixHits, .counter = true}};
    t["vllm:prefix_cache_queries_total"] = {{.kind = K::kPrefixQueries, .counter = true}};
    // SGLang, TGI (reference: inprocess-and-protocol facts §6)
    t["sglang:num_running_reqs"] = {host(H::kRequestsRunning)};
    t["sglang:num_queue_reqs"] = {host(H::kRequestsWaiting)};
    t["sglang:token_usage"] = {host(H::kKvCacheUsage)};  // KV-cache tokens in use over the pool, 0..1
    t["sglang:prompt_tokens_total"] = {host(H::kPromptTokensRate, true)};
    t["sglang:generation_tokens_total"] = {host(H::kGenerationTokensRate, true)};
    t["sglang:cache_hit_rate"] = {host(H::kPrefixCacheHitRatio)};  // prefix (radix) cache, 0..1
    t["tgi_batch_current_size"] = {host(H::kRequestsRunning)};
    t["tgi_queue_size"] = {host(H::kRequestsWaiting)};
    t["tgi_batch_current_max_tokens"] = {host(H::kBatchMaxTokens)};
    // Triton
    t["nv_inference_request_duration_us"] = {{.kind = K::kTritonDuration, .counter = true, .scale = 1e-6}};
    t["nv_inference_count"] = {{.kind = K::kTritonCount, .counter = true}};
    t["nv_inference_request_success"] = {{.kind = K::kTritonSuccess, .counter = true}};
    t["nv_inference_pending_request_count"] = {host(H::kRequestsWaiting)};
    dcgm_bindings(t);
    return t;
  }();
  return table;
}

// Names whose binding depends on labels (handled in map_series()).
// Latency histograms (their _bucket series) by the p99 signal each gives:
// end to end, time to first token, between output tokens, queued. vLLM V0's
// time_per_output_token is V1's inter_token_latency (renamed in V1).
struct LatencyHistogram {
  std::string_view bucket;
  HostSig p99;
};
constexpr LatencyHistogram kLatencyHistograms[] = {
    {"serving_request_latency_seconds_bucket", HostSig::kLatencyP99},
    {"vllm:e2e_request_latency_seconds_bucket", HostSig::kLatencyP99},
    {"sglang:e2e_request_latency_seconds_bucket", HostSig::kLatencyP99},
    {"tgi_request_duration_bucket", HostSig::kLatencyP99},
    {"serving_time_to_first_token_seconds_bucket", HostSig::kTtftP99},
    {"vllm:time_to_first_token_seconds_bucket", HostSig::kTtftP99},
    {"sglang:time_to_first_token_seconds_bucket", HostSig::kTtftP99},
    {"serving_inter_token_latency_seconds_bucket", HostSig::kInterTokenP99},
    {"vllm:time_per_output_token_seconds_bucket", HostSig::kInterTokenP99},
    {"vllm:inter_token_latency_seconds_bucket", HostSig::kInterTokenP99},
    {"sglang:time_per_output_token_seconds_bucket", HostSig::kInterTokenP99},
    {"serving_queue_time_seconds_bucket", HostSig::kQueueTimeP99},
    {"vllm:request_queue_time_seconds_bucket", HostSig::kQueueTimeP99},
    {"tgi_request_queue_duration_bucket", HostSig::kQueueTimeP99},
};

const std::vector<std::string_view>& labelled_names() {
  static const std::vector<std::string_view> names{
      native(F::kHostCpuSeconds), "node_cpu_seconds_total", native(F::kGpuClockEventActive),
      native(F::kGpuXidErrors), native(F::kGpuEccErrors), native(F::kHostNetworkReceiveBytes),
      native(F::kHostNetworkTransmitBytes), native(F::kHostNetworkSpeed), "node_network_receive_bytes_total",
      "node_network_transmit_bytes_total", "node_network_speed_bytes",
      native(F::kGpuAllocatorExternalFragmentation), "nv_inference_request_summary_us",
      native(F::kGpuXidErrorsRecent), "DCGM_EXP_XID_ERRORS_COUNT", native(F::kServingRequestsWaitingByReason),
      "vllm:num_requests_waiting_by_reason",
  };
  return names;
}

std::string_view label_of(LabelSpan labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return {};
}

bool ethernet_device(std::string_view dev) {
  for (std::string_view p : non_ethernet_prefixes()) {
    if (dev.starts_with(p)) return false;
  }
  return !dev.empty();
}

std::optional<double> parse_double(std::string_view s) {
  if (s == "+Inf" || s == "Inf" || s == "inf") return std::numeric_limits<double>::infinity();
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

bool is_ip(std::string_view h) {
  return !h.empty() && (h.find_first_not_of("0123456789.") == std::string_view::npos || h.find(':') != h.npos);
}

}  // namespace

std::span<const std::string_view> non_ethernet_prefixes() {
  static constexpr std::string_view kPrefixes[] = {"lo", "docker", "veth", "virbr", "cali",
                                                   "flannel", "cni", "tunl", "ib", "kube"};
  return kPrefixes;
}

bool known_name(std::string_view name) {
  if (name == kSimulatedFamily || simple_table().contains(name)) return true;
  for (const LatencyHistogram& h : kLatencyHistograms) {
    if (h.bucket == name) return true;
  }
  const std::vector<std::string_view>& labelled = labelled_names();
  return std::find(labelled.begin(), labelled.end(), name) != labelled.end();
}

std::vector<std::string_view> known_names() {
  std::vector<std::string_view> out = labelled_names();
  for (const LatencyHistogram& h : kLatencyHistograms) out.push_back(h.bucket);
  out.push_back(kSimulatedFamily);
  for (const auto& [name, b] : simple_table()) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

static bool duplicate_rank(std::string_view name, LabelSpan labels) {
  if (!name.starts_with("sglang:")) return false;
  for (std::string_view rank : {"tp_rank", "pp_rank"}) {
    const std::string_view r = label_of(labels, rank);
    if (!r.empty() && r != "0") return true;
  }
  return false;
}

std::vector<Binding> map_series(std::string_view name, LabelSpan labels) {
  // SGLang with metrics for all schedulers: every tensor- (pipeline-)
  // parallel rank repeats the engine's counts; rank 0 speaks for it.
  if (duplicate_rank(name, labels)) return {};
  const auto& table = simple_table();
  if (auto it = table.find(name); it != table.end()) return it->second;
  return labelled_bindings(name, labels);
}

namespace {

// Names whose binding depends on labels.
std::vector<Binding> labelled_bindings(std::string_view name, LabelSpan labels) {
  using G = GpuSig;
  using H = HostSig;
  if (name == native(F::kHostCpuSeconds) || name == "node_cpu_seconds_total") {
    std::vector<Binding> out{host(H::kCpuTotal, true)};
    const std::string_view mode = label_of(labels, "mode");
    if (mode == "idle") out.push_back(host(H::kCpuIdle, true));
    if (mode == "iowait") out.push_back(host(H::kCpuIowaitRaw, true));
    return out;
  }
  if (name == native(F::kGpuClockEventActive)) {
    const std::string_view reason = label_of(labels, "reason");
    if (reason.find("thermal") != reason.npos) return {gpu(G::kThermalThrottle)};
    if (reason.find("power") != reason.npos) return {gpu(G::kPowerThrottle)};
    return {};
  }
  if (name == native(F::kGpuXidErrors)) {
    std::vector<Binding> out{gpu(G::kXidRate, 1.0, true)};
    if (auto code = parse_double(label_of(labels, "xid"))) {
      Binding b = gpu(G::kLastXid, 1.0, true);
      b.transform = T::kEventCode;
      b.code = *code;
      out.push_back(b);
    }
    return out;
  }
  if (name == native(F::kGpuXidErrorsRecent) || name == "DCGM_EXP_XID_ERRORS_COUNT") {
    // XIDs counted in dcgm-exporter's window: while any is, its code is the
    // last XID. The zero-valued series of a quiet GPU has no xid: code 0.
    Binding b = gpu(G::kLastXid);
    b.transform = T::kEventCode;
    b.code = parse_double(label_of(labels, "xid")).value_or(0);
    return {b};
  }
  if (name == native(F::kGpuAllocatorExternalFragmentation)) {
    // The small pool (requests up to 1 MiB in 2 MiB segments) is in slivers
    // by design and never serves a large allocation: judge the others.
    if (label_of(labels, "pool").starts_with("small")) return {};
    return {gpu(G::kExternalFragmentation)};
  }
  if (name == native(F::kGpuEccErrors)) {
    const std::string_view type = label_of(labels, "type");
    if (type.starts_with("uncorrect")) return {gpu(G::kEccUncorrectedRate, 1.0, true)};
    return {};
  }
  const bool rx = name.find("receive") != name.npos;
  if (name.ends_with("network_receive_bytes_total") || name.ends_with("network_transmit_bytes_total")) {
    if (!ethernet_device(label_of(labels, "device"))) return {};
    return {host(rx ? H::kNicRxBps : H::kNicTxBps, true)};
  }
  if (name.ends_with("network_speed_bytes")) {
    if (!ethernet_device(label_of(labels, "device"))) return {};
    Binding b = host(H::kNicSpeed);
    b.negative_is_unknown = true;
    return {b};
  }
  if (name == native(F::kServingRequestsWaitingByReason) || name == "vllm:num_requests_waiting_by_reason") {
    // vLLM V1: "capacity" waits for KV-cache space or a batch slot (what
    // kv_cache_pressure judges); another reason ("deferred") is only kept.
    const std::string_view reason = label_of(labels, "reason");
    if (reason.empty()) return {};
    if (reason == "capacity") return {host(H::kWaitingForCapacity)};
    return {carried(CarriedSig::kWaitingOtherReason)};
  }
  if (name == "nv_inference_request_summary_us") {
    // Triton's summary: only its p99 (the other quantiles, _sum and _count
    // are not read: docs/scrape.md).
    auto q = parse_double(label_of(labels, "quantile"));
    if (!q || std::fabs(*q - 0.99) > 1e-9) return {};
    return {host(H::kLatencyP99, false, 1e-6)};
  }
  for (const LatencyHistogram& h : kLatencyHistograms) {
    if (h.bucket != name) continue;
    auto le = parse_double(label_of(labels, "le"));
    if (!le) return {};
    return {{.kind = K::kLatencyBucket, .sig = static_cast<uint8_t>(h.p99), .counter = true, .le = *le}};
  }
  return {};
}

}  // namespace

std::string host_key(LabelSpan labels) {
  std::string_view h = label_of(labels, "hostname");
  if (h.empty()) h = label_of(labels, "Hostname");
  if (h.empty()) {
    h = label_of(labels, "instance");
    if (h.starts_with('[')) {  // [ipv6]:port
      h = h.substr(1, h.find(']') == h.npos ? h.npos : h.find(']') - 1);
    } else if (auto colon = h.rfind(':'); colon != h.npos && h.find(':') == colon) {
      h = h.substr(0, colon);
    }
  }
  if (!is_ip(h)) h = h.substr(0, h.find('.'));
  std::string out(h);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

namespace {

// The serving signals: an engine's own.
bool is_serving(HostSig s) {
  switch (s) {
    case HostSig::kLatencyP99:
    case HostSig::kLatencyMean:
    case HostSig::kRequestsRunning:
    case HostSig::kRequestsWaiting:
    case HostSig::kKvCacheUsage:
    case HostSig::kPreemptionRate:
    case HostSig::kPromptTokensRate:
    case HostSig::kGenerationTokensRate:
    case HostSig::kTtftP99:
    case HostSig::kInterTokenP99:
    case HostSig::kQueueTimeP99:
    case HostSig::kWaitingForCapacity:
    case HostSig::kPrefixCacheHitRatio:
    case HostSig::kBatchMaxTokens: return true;
    default: return false;
  }
}

// The kind of serving engine a series is from: by its family's name, or a
// gpulens serving_* series' engine label; "engine" for a gpulens series
// that names none; "" when not a serving series.
std::string engine_kind(std::string_view name, LabelSpan labels) {
  if (name.starts_with("vllm:")) return "vllm";
  if (name.starts_with("sglang:")) return "sglang";
  if (name.starts_with("tgi_")) return "tgi";
  if (name.starts_with("nv_inference_")) return "triton";
  if (name.starts_with("serving_")) {
    const std::string_view e = label_of(labels, "engine");
    for (std::string_view k : {"vllm", "sglang", "tgi", "triton"}) {
      if (e == k) return std::string(k);
    }
    return "engine";
  }
  return "";
}

}  // namespace

bool SignalSetBuilder::add(std::string_view name, LabelSpan labels, Series points, bool already_rate) {
  std::string key = host_key(labels);
  if (!label_of(labels, "hostname").empty() || !label_of(labels, "Hostname").empty()) {
    if (!named_hosts_.contains(key)) named_hosts_.insert(key);
  }
  return add_for_host(key, name, labels, std::move(points), already_rate);
}

bool SignalSetBuilder::add_for_host(std::string_view host_name, std::string_view name, LabelSpan labels,
                                    Series points, bool already_rate) {
  if (name == kSimulatedFamily) {
    ++known_;
    HostAcc& h = hosts_[std::string(host_name)];
    if (std::any_of(points.begin(), points.end(), [](const Point& p) { return p.v == 1; })) {
      h.simulated = true;
      if (h.scenario.empty()) h.scenario = label_of(labels, "scenario");
    }
    return true;
  }
  const std::vector<Binding> bindings = map_series(name, labels);
  if (bindings.empty()) {
    ++unknown_;
    return false;
  }
  ++known_;
  if (!points.empty()) {
    min_t_ = std::min(min_t_, points.front().t_ms);
    max_t_ = std::max(max_t_, points.back().t_ms);
  }
  if (bindings[0].kind == K::kPodLabels) {
    // kube-state-metrics runs anywhere: its pods are joined by namespace/pod, not host.
    const std::string_view ns = label_of(labels, "namespace"), pod = label_of(labels, "pod");
    for (std::string_view owner : {"label_training_kubeflow_org_job_name", "label_jobset_sigs_k8s_io_jobset_name",
                                   "label_batch_kubernetes_io_job_name", "label_leaderworkerset_sigs_k8s_io_name"}) {
      const std::string_view job = label_of(labels, owner);
      if (!job.empty() && !pod.empty()) {
        pod_jobs_[std::string(ns) + "/" + std::string(pod)] = std::string(ns) + "/" + std::string(job);
        break;
      }
    }
    return true;
  }
  HostAcc& h = hosts_[std::string(host_name)];
  // A serving engine's series also go to that engine, judged on its own.
  EngineAcc* engine = nullptr;
  if (const std::string kind = engine_kind(name, labels); !kind.empty()) {
    std::string_view where = label_of(labels, "endpoint");
    if (where.empty()) where = label_of(labels, "instance");
    const std::string_view ns = label_of(labels, "namespace"), pod = label_of(labels, "pod");
    std::string pod_name = pod.empty() ? std::string() : std::string(ns) + "/" + std::string(pod);
    engine = &h.engines[kind + '\x1f' + std::string(where.empty() ? std::string_view(pod_name) : where)];
    if (engine->kind.empty()) {
      engine->kind = kind;
      engine->endpoint = where.empty() ? "" : std::string(where);
    }
    if (engine->model.empty()) engine->model = label_of(labels, "model_name");
    if (engine->model.empty()) engine->model = label_of(labels, "model");
    if (engine->pid.empty()) engine->pid = label_of(labels, "pid");
    if (engine->pod.empty()) engine->pod = std::move(pod_name);
  }
  // The last binding (most series have one) takes the points without a copy.
  for (size_t i = 0; i + 1 < bindings.size(); ++i) feed(h, bindings[i], labels, points, already_rate, engine);
  feed(h, bindings.back(), labels, std::move(points), already_rate, engine);
  return true;
}

SignalSetBuilder::GpuAcc& SignalSetBuilder::gpu_of(HostAcc& h, LabelSpan labels) {
  std::string index(label_of(labels, "gpu"));
  if (index.empty()) index = std::string(label_of(labels, "UUID"));
  if (index.empty()) index = std::string(label_of(labels, "gpu_uuid"));
  if (index.empty()) index = std::string(label_of(labels, "DCGM_FI_DEV_UUID"));
  std::string_view gi = label_of(labels, "GPU_I_ID");
  if (gi.empty()) gi = label_of(labels, "gpu_instance_id");
  const std::string parent = index;
  if (!gi.empty()) index += "/gi" + std::string(gi);
  GpuAcc& g = h.gpus[index];
  if (!gi.empty() && g.mig.empty()) {
    std::string_view profile = label_of(labels, "GPU_I_PROFILE");
    if (profile.empty()) profile = label_of(labels, "mig_profile");
    g.mig = {.gpu = parent, .gpu_instance = std::string(gi), .profile = std::string(profile),
             .uuid = std::string(label_of(labels, "mig_uuid"))};
  }
  if (g.uuid.empty()) {
    std::string_view u = label_of(labels, "UUID");
    if (u.empty()) u = label_of(labels, "gpu_uuid");
    if (u.empty()) u = label_of(labels, "uuid");
    if (u.empty()) u = label_of(labels, "DCGM_FI_DEV_UUID");  // a label row of newer dcgm-exporter CSVs
    g.uuid = u;
  }
  if (g.pod.empty()) {
    const std::string_view pod = label_of(labels, "pod");
    if (!pod.empty()) g.pod = std::string(label_of(labels, "namespace")) + "/" + std::string(pod);
  }
  if (g.model.empty()) {
    std::string_view m = label_of(labels, "modelName");
    if (m.empty()) m = label_of(labels, "gpu_name");
    if (m.empty()) m = label_of(labels, "DCGM_FI_DEV_NAME");
    g.model = m;
  }
  return g;
}

void SignalSetBuilder::feed(HostAcc& h, const Binding& b, LabelSpan labels, Series points,
                            bool already_rate, EngineAcc* engine) {
  const bool prefix = b.kind == K::kPrefixHits || b.kind == K::kPrefixQueries;
  if (engine && engine->invalid.empty() && (b.kind == K::kHost || b.kind == K::kLatencyBucket || prefix)) {
    // A value no engine can mean: the engine is not judged (docs/serving.md).
    const auto sig = static_cast<HostSig>(b.sig);
    for (const Point& p : points) {
      const bool ratio =
          b.kind == K::kHost && (sig == HostSig::kKvCacheUsage || sig == HostSig::kPrefixCacheHitRatio);
      if (!std::isfinite(p.v) || p.v < 0 || (ratio && p.v > 1) || p.v > 1e12) {
        const std::string_view what = signal_name(b.kind == K::kHost ? sig
                                                  : prefix             ? HostSig::kPrefixCacheHitRatio
                                                                       : HostSig::kLatencyP99);
        const char* why = !std::isfinite(p.v) ? "not a number" : p.v < 0 ? "negative" : ratio && p.v <= 1e12 ? "above 1" : "absurd";
        char m[200];
        std::snprintf(m, sizeof m, "%.*s %g (%s)", static_cast<int>(what.size()), what.data(), p.v, why);
        engine->invalid = m;
        break;
      }
    }
  }
  Series s;
  if (b.counter && !already_rate) {
    const int64_t step = median_step_ms(points);
    s = counter_rate(points, std::max<int64_t>(5 * step, 60'000));
  } else {
    s = std::move(points);
  }
  if (b.negative_is_unknown) std::erase_if(s, [](const Point& p) { return p.v < 0; });
  const bool percent = b.transform == T::kPercentOrRatio &&
                       std::any_of(s.begin(), s.end(), [](const Point& p) { return p.v > 1; });
  for (Point& p : s) {
    switch (b.transform) {
      case T::kPercentOrRatio: p.v *= percent ? 0.01 * b.scale : b.scale; break;
      case T::kNone: p.v *= b.scale; break;
      case T::kMask: p.v = (static_cast<uint64_t>(std::max(0.0, p.v)) & b.mask) ? 1.0 : 0.0; break;
      case T::kEventCode: p.v = p.v > 0 ? b.code : 0.0; break;
    }
  }
  switch (b.kind) {
    case K::kGpu: {
      GpuAcc& g = gpu_of(h, labels);
      const auto sig = static_cast<GpuSig>(b.sig);
      if (const std::string_view job = label_of(labels, "hpc_job"); !job.empty() && !s.empty()) {
        // dcgm-exporter's HPC job mapping (--hpc-job-mapping-dir): a Slurm job.
        auto& seen = g.jobs[std::string(job)];
        seen.first = std::min(seen.first, s.front().t_ms);
        seen.last = std::max(seen.last, s.back().t_ms);
        seen.source = "slurm";
      }
      const std::string_view pid = label_of(labels, "pid");
      if (!pid.empty() && (sig == GpuSig::kFragmentation || sig == GpuSig::kExternalFragmentation ||
                           sig == GpuSig::kAllocRetryRate || sig == GpuSig::kAllocOomRate)) {
        std::string who = "pid " + std::string(pid);
        const std::string_view ns = label_of(labels, "namespace"), pod = label_of(labels, "pod");
        if (!pod.empty()) who += " (" + std::string(ns) + (ns.empty() ? "" : "/") + std::string(pod) + ")";
        g.by_process[{sig, who}].push_back(s);
      }
      if (sig == GpuSig::kHealthStatus) {
        std::string_view watch = label_of(labels, "watch"), error = label_of(labels, "error");
        if (watch.empty()) watch = label_of(labels, "health_watch");
        if (error.empty()) error = label_of(labels, "health_error_code");
        std::string key(watch.empty() ? std::string_view("?") : watch);
        if (!error.empty()) key += " (" + std::string(error) + ")";
        g.health_watches[key].push_back(s);
      }
      g.parts[b.sig].push_back(std::move(s));
      break;
    }
    case K::kPeerPath: {
      const std::string_view peer = label_of(labels, "peer"), path = label_of(labels, "path");
      if (!peer.empty() && !path.empty()) gpu_of(h, labels).peer_paths[std::string(peer)] = path;
      break;
    }
    case K::kLocalCpus: {
      const std::string_view cpus = label_of(labels, "cpus");
      if (!cpus.empty()) gpu_of(h, labels).local_cpus = cpus;
      break;
    }
    case K::kProcess: {
      ProcessPlacement p{.pid = std::string(label_of(labels, "pid")),
                         .gpu = std::string(label_of(labels, "gpu")),
                         .cpus = std::string(label_of(labels, "cpus")),
                         .numa_nodes = std::string(label_of(labels, "numa_nodes")),
                         .present = {}};
      if (p.pid.empty() || p.gpu.empty()) break;
      std::string key = p.pid + '\x1f' + p.gpu + '\x1f' + p.cpus + '\x1f' + p.numa_nodes;
      h.presence[key].push_back(std::move(s));
      h.processes.try_emplace(std::move(key), std::move(p));
      break;
    }
    case K::kHost: {
      // Network links are also kept per device, to judge each against its own speed.
      const auto sig = static_cast<HostSig>(b.sig);
      const bool ib = sig == HostSig::kIbRxBps || sig == HostSig::kIbTxBps || sig == HostSig::kIbRate;
      const bool nic = sig == HostSig::kNicRxBps || sig == HostSig::kNicTxBps || sig == HostSig::kNicSpeed;
      if (ib || nic) {
        std::string dev(label_of(labels, "device"));
        if (ib && !label_of(labels, "port").empty()) dev += "/" + std::string(label_of(labels, "port"));
        LinkAcc& l = h.links[{ib, dev}];
        const int part = sig == HostSig::kNicRxBps || sig == HostSig::kIbRxBps   ? 0
                         : sig == HostSig::kNicTxBps || sig == HostSig::kIbTxBps ? 1
                                                                                 : 2;
        l.parts[part].push_back(s);
      }
      if (engine && is_serving(sig)) engine->parts[b.sig].push_back(s);
      h.parts[b.sig].push_back(std::move(s));
      break;
    }
    case K::kLatencyBucket:
      if (engine) engine->buckets[b.sig][b.le].push_back(s);
      h.buckets[b.sig][b.le].push_back(std::move(s));
      break;
    case K::kTritonDuration:
      if (engine) engine->triton_duration.push_back(s);
      h.triton_duration.push_back(std::move(s));
      break;
    case K::kTritonCount:
      if (engine) engine->triton_count.push_back(s);
      h.triton_count.push_back(std::move(s));
      break;
    case K::kTritonSuccess:
      if (engine) engine->triton_success.push_back(s);
      h.triton_success.push_back(std::move(s));
      break;
    case K::kPrefixHits:
    case K::kPrefixQueries:
      if (engine) (b.kind == K::kPrefixHits ? engine->prefix_hits : engine->prefix_queries).push_back(std::move(s));
      break;
    case K::kCarried: break;  // /metrics and history only
    case K::kJob: {
      const std::string_view job = label_of(labels, "job_id");
      if (job.empty() || s.empty()) break;
      std::string_view source = label_of(labels, "source");
      if (source.empty()) source = "environment";
      auto& seen = gpu_of(h, labels).jobs[std::string(job)];
      seen.first = std::min(seen.first, s.front().t_ms);
      if (s.back().t_ms >= seen.last) {
        seen.last = s.back().t_ms;
        seen.source = std::string(source);
      }
      break;
    }
    case K::kPodLabels: break;  // joined in add_for_host()
  }
}

double histogram_quantile(double q, std::span<const std::pair<double, double>> buckets) {
  if (buckets.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double total = buckets.back().second;
  if (!(total > 0)) return std::numeric_limits<double>::quiet_NaN();
  const double rank = q * total;
  double lower = 0, below = 0;
  for (const auto& [le, cum] : buckets) {
    if (cum >= rank) {
      if (std::isinf(le)) return lower;  // beyond the last finite bound: report that bound
      const double in_bucket = cum - below;
      return in_bucket > 0 ? lower + (le - lower) * (rank - below) / in_bucket : le;
    }
    lower = le;
    below = cum;
  }
  return lower;
}

namespace {

Combine combine_of(GpuSig s) {
  switch (s) {
    case GpuSig::kNvlinkRxBps:
    case GpuSig::kNvlinkTxBps:
    case GpuSig::kXidRate:
    case GpuSig::kAllocRetryRate:
    case GpuSig::kAllocOomRate:
    case GpuSig::kEccUncorrectedRate: return Combine::kSum;
    default: return Combine::kMax;
  }
}

Combine combine_of(HostSig s) {
  switch (s) {
    case HostSig::kCpuTotal:
    case HostSig::kCpuIdle:
    case HostSig::kCpuIowaitRaw:
    case HostSig::kIbRxBps:
    case HostSig::kIbTxBps:
    case HostSig::kRequestsRunning:
    case HostSig::kRequestsWaiting:
    case HostSig::kWaitingForCapacity:
    case HostSig::kBatchMaxTokens:
    case HostSig::kPreemptionRate:
    case HostSig::kPromptTokensRate:
    case HostSig::kGenerationTokensRate: return Combine::kSum;
    default: return Combine::kMax;
  }
}

Series merge(const std::vector<Series>& parts, Combine op) {
  std::vector<const Series*> ptrs;
  for (const Series& s : parts) ptrs.push_back(&s);
  return combine(ptrs, op);
}

// a / b on equal timestamps (b > 0).
Series ratio(const Series& a, const Series& b, double scale = 1.0) {
  Series out;
  size_t j = 0;
  for (const Point& p : a) {
    while (j < b.size() && b[j].t_ms < p.t_ms) ++j;
    if (j < b.size() && b[j].t_ms == p.t_ms && b[j].v > 0) out.push_back({p.t_ms, scale * p.v / b[j].v});
  }
  return out;
}

// One link's utilisation: max(rx, tx) over its speed, the speed held from
// its last sample (a speed is a gauge scraped beside the counters, but need
// not share their timestamps). No speed: not judged (empty).
LinkSignals judge_link(const std::string& device, bool infiniband, const std::array<std::vector<Series>, 3>& parts) {
  LinkSignals out{.device = device, .infiniband = infiniband};
  const Series speed = merge(parts[2], Combine::kMax);
  const Series rx = merge(parts[0], Combine::kMax), tx = merge(parts[1], Combine::kMax);
  std::vector<const Series*> dirs;
  if (!rx.empty()) dirs.push_back(&rx);
  if (!tx.empty()) dirs.push_back(&tx);
  if (speed.empty() || dirs.empty()) return out;
  const Series traffic = combine(dirs, Combine::kMax);
  size_t j = 0;
  double held = speed.front().v;  // before the first speed sample: the first
  for (const Point& p : traffic) {
    for (; j < speed.size() && speed[j].t_ms <= p.t_ms; ++j) held = speed[j].v;
    if (held > 0) out.util.push_back({p.t_ms, p.v / held});
  }
  for (const Point& p : speed) out.speed = std::max(out.speed, p.v);
  return out;
}

Series latency_p99(const std::map<double, std::vector<Series>>& buckets) {
  if (buckets.empty()) return {};
  std::vector<std::pair<double, Series>> per_le;
  for (const auto& [le, parts] : buckets) per_le.emplace_back(le, merge(parts, Combine::kSum));
  // Timestamps of the +Inf (largest) bucket drive the output.
  Series out;
  std::vector<size_t> pos(per_le.size(), 0);
  std::vector<std::pair<double, double>> cum(per_le.size());
  for (const Point& p : per_le.back().second) {
    bool complete = true;
    for (size_t i = 0; i < per_le.size(); ++i) {
      const Series& s = per_le[i].second;
      while (pos[i] < s.size() && s[pos[i]].t_ms < p.t_ms) ++pos[i];
      if (pos[i] >= s.size() || s[pos[i]].t_ms != p.t_ms) {
        complete = false;
        break;
      }
      cum[i] = {per_le[i].first, s[pos[i]].v};
    }
    if (!complete) continue;
    const double v = histogram_quantile(0.99, cum);
    if (!std::isnan(v)) out.push_back({p.t_ms, v});
  }
  return out;
}

}  // namespace

namespace {

// Moves the parts of `from` into `into` where `into` has none: one naming
// per signal, so that a summed signal is not counted twice.
template <typename Parts>
void take_missing(Parts& into, Parts& from) {
  if (into.empty()) into = std::move(from);
}

}  // namespace

void SignalSetBuilder::build_engines(HostAcc& h, HostSignals& hs) {
  std::map<std::string, std::string> gpu_pods;  // whole GPU index -> "namespace/pod"
  for (const auto& [index, g] : h.gpus) {
    if (g.mig.empty() && !g.pod.empty()) gpu_pods[index] = g.pod;
  }
  for (auto& [key, e] : h.engines) {
    EngineSignals es{.kind = e.kind, .endpoint = e.endpoint, .model = e.model, .pid = e.pid, .pod = e.pod};
    es.invalid = e.invalid;
    for (size_t i = 0; i < kHostSigCount; ++i) es.sigs[i] = merge(e.parts[i], combine_of(static_cast<HostSig>(i)));
    for (const auto& [sig, by_le] : e.buckets) {
      const Series from_buckets = latency_p99(by_le);
      Series& p99 = es.sigs[sig];
      p99 = combine({&p99, &from_buckets}, Combine::kMax);
    }
    // Requests completed per second: the count (largest bucket) of its
    // end-to-end latency histogram, else Triton's successes.
    if (auto it = e.buckets.find(static_cast<uint8_t>(HostSig::kLatencyP99)); it != e.buckets.end() && !it->second.empty()) {
      es.completions = merge(it->second.rbegin()->second, Combine::kSum);
    } else if (!e.triton_success.empty() || !e.triton_count.empty()) {
      es.completions = merge(e.triton_success.empty() ? e.triton_count : e.triton_success, Combine::kSum);
    }
    if (!e.triton_duration.empty()) {
      const Series dur = merge(e.triton_duration, Combine::kSum);
      es.sig(HostSig::kLatencyMean) = ratio(dur, es.completions);
    }
    // vLLM V1's prefix cache: tokens found over tokens looked up, rate over
    // rate (no lookups: no ratio); SGLang's own ratio where it gave one.
    if (es.sig(HostSig::kPrefixCacheHitRatio).empty() && !e.prefix_hits.empty() && !e.prefix_queries.empty()) {
      Series r = ratio(merge(e.prefix_hits, Combine::kSum), merge(e.prefix_queries, Combine::kSum));
      std::erase_if(r, [](const Point& p) { return p.v > 1; });  // more found than looked up: no ratio
      es.sig(HostSig::kPrefixCacheHitRatio) = std::move(r);
    }
    hs.engines.push_back(std::move(es));
  }
  // Each engine to its GPUs: by its pid on the GPUs' process lists, by its
  // pod, or as the host's only engine; else unjoined.
  for (EngineSignals& es : hs.engines) {
    std::set<std::string> gpus;
    if (!es.pid.empty()) {
      for (const ProcessPlacement& p : hs.processes) {
        if (p.pid == es.pid) gpus.insert(p.gpu);
      }
      if (!gpus.empty()) es.joined_by = "pid";
    }
    if (gpus.empty() && !es.pod.empty()) {
      for (const auto& [index, pod] : gpu_pods) {
        if (pod == es.pod) gpus.insert(index);
      }
      if (!gpus.empty()) es.joined_by = "pod";
    }
    if (gpus.empty() && hs.engines.size() == 1) {
      for (const GpuSignals& g : hs.gpus) gpus.insert(g.index);
      es.joined_by = "only engine";
    }
    for (const GpuSignals& g : hs.gpus) {  // in the host's GPU order
      if (gpus.contains(g.index) || (!g.mig.empty() && es.joined_by == "only engine")) es.gpus.push_back(g.index);
    }
  }
}

void SignalSetBuilder::join_by_uuid() {
  for (bool joined = true; joined;) {
    joined = false;
    std::map<std::string, std::string> owner;  // GPU (UUID, GPU instance) -> host
    std::string a, b;
    for (const auto& [name, h] : hosts_) {
      for (const auto& [index, g] : h.gpus) {
        if (g.uuid.empty()) continue;
        auto [it, fresh] = owner.try_emplace(g.uuid + '\x1f' + g.mig.gpu_instance, name);
        if (!fresh && it->second != name) {
          a = it->second;
          b = name;
          break;
        }
      }
      if (!b.empty()) break;
    }
    if (b.empty()) break;
    // The name a hostname/Hostname label gives wins over the scrape's instance.
    if (named_hosts_.contains(b) && !named_hosts_.contains(a)) std::swap(a, b);
    HostAcc& into = hosts_[a];
    HostAcc& from = hosts_[b];
    for (auto& entry : from.gpus) {  // not a structured binding: clang 14 cannot capture one
      const std::string& index = entry.first;
      GpuAcc& g = entry.second;
      auto same = std::find_if(into.gpus.begin(), into.gpus.end(), [&](const auto& kv) {
        return kv.second.uuid == g.uuid && kv.second.mig.gpu_instance == g.mig.gpu_instance;
      });
      if (same == into.gpus.end()) {
        into.gpus.try_emplace(index, std::move(g));
        continue;
      }
      GpuAcc& to = same->second;
      for (size_t i = 0; i < kGpuSigCount; ++i) take_missing(to.parts[i], g.parts[i]);
      for (auto& [key, parts] : g.by_process) take_missing(to.by_process[key], parts);
      for (auto& [key, parts] : g.health_watches) take_missing(to.health_watches[key], parts);
      for (auto& [peer, path] : g.peer_paths) to.peer_paths.try_emplace(peer, path);
      if (to.local_cpus.empty()) to.local_cpus = std::move(g.local_cpus);
      if (to.model.empty()) to.model = std::move(g.model);
      if (to.mig.empty()) to.mig = std::move(g.mig);
      if (to.pod.empty()) to.pod = std::move(g.pod);
      for (auto& [job, seen] : g.jobs) {
        auto [it, fresh] = to.jobs.try_emplace(job, seen);
        if (fresh) continue;
        it->second.first = std::min(it->second.first, seen.first);
        if (seen.last > it->second.last) {
          it->second.last = seen.last;
          it->second.source = seen.source;
        }
      }
    }
    for (size_t i = 0; i < kHostSigCount; ++i) take_missing(into.parts[i], from.parts[i]);
    if (into.buckets.empty()) into.buckets = std::move(from.buckets);
    take_missing(into.triton_duration, from.triton_duration);
    take_missing(into.triton_count, from.triton_count);
    take_missing(into.triton_success, from.triton_success);
    for (auto& [key, p] : from.processes) into.processes.try_emplace(key, std::move(p));
    for (auto& [key, parts] : from.presence) take_missing(into.presence[key], parts);
    for (auto& [key, l] : from.links) into.links.try_emplace(key, std::move(l));
    for (auto& [key, e] : from.engines) into.engines.try_emplace(key, std::move(e));
    if (from.simulated && !into.simulated) {
      into.simulated = true;
      into.scenario = std::move(from.scenario);
    }
    hosts_.erase(b);
    joined = true;
  }
}

SignalSet SignalSetBuilder::build(std::optional<int64_t> from_ms, std::optional<int64_t> to_ms) {
  join_by_uuid();
  // One machine recorded under two names (dcgm-exporter's Hostname and
  // node_exporter's instance): join them.
  std::vector<std::string> gpu_hosts, other_hosts;
  for (const auto& [name, h] : hosts_) (h.gpus.empty() ? other_hosts : gpu_hosts).push_back(name);
  if (gpu_hosts.size() == 1 && other_hosts.size() == 1) {
    HostAcc& into = hosts_[gpu_hosts[0]];
    HostAcc& from = hosts_[other_hosts[0]];
    for (size_t i = 0; i < kHostSigCount; ++i) {
      for (Series& s : from.parts[i]) into.parts[i].push_back(std::move(s));
    }
    for (auto& [sig, by_le] : from.buckets) {
      for (auto& [le, parts] : by_le) {
        for (Series& s : parts) into.buckets[sig][le].push_back(std::move(s));
      }
    }
    for (Series& s : from.triton_duration) into.triton_duration.push_back(std::move(s));
    for (Series& s : from.triton_count) into.triton_count.push_back(std::move(s));
    for (Series& s : from.triton_success) into.triton_success.push_back(std::move(s));
    for (auto& [key, p] : from.processes) into.processes.try_emplace(key, std::move(p));
    for (auto& [key, parts] : from.presence) {
      for (Series& s : parts) into.presence[key].push_back(std::move(s));
    }
    for (auto& [key, l] : from.links) {
      for (size_t i = 0; i < l.parts.size(); ++i) {
        for (Series& s : l.parts[i]) into.links[key].parts[i].push_back(std::move(s));
      }
    }
    for (auto& [key, e] : from.engines) into.engines.try_emplace(key, std::move(e));
    if (from.simulated && !into.simulated) {
      into.simulated = true;
      into.scenario = from.scenario;
    }
    hosts_.erase(other_hosts[0]);
  }

  // An engine scraped under its pod's address (Prometheus' Kubernetes
  // discovery: instance = the pod IP) lands on a host of its own, without
  // GPUs: it moves to the host whose GPU serves its pod.
  std::map<std::string, std::string> pod_host;  // "namespace/pod" -> host with a GPU of that pod
  for (const auto& [name, h] : hosts_) {
    for (const auto& [index, g] : h.gpus) {
      if (!g.pod.empty()) pod_host.try_emplace(g.pod, name);
    }
  }
  for (auto& [name, h] : hosts_) {
    if (!h.gpus.empty()) continue;
    for (auto it = h.engines.begin(); it != h.engines.end();) {
      auto to = it->second.pod.empty() ? pod_host.end() : pod_host.find(it->second.pod);
      if (to == pod_host.end()) {
        ++it;
        continue;
      }
      hosts_[to->second].engines.try_emplace(it->first, std::move(it->second));
      it = h.engines.erase(it);
    }
  }

  SignalSet set;
  set.from_ms = from_ms.value_or(min_t_ == INT64_MAX ? 0 : min_t_);
  set.to_ms = to_ms.value_or(max_t_ == INT64_MIN ? 0 : max_t_);
  for (auto& [name, h] : hosts_) {
    if (h.gpus.empty()) continue;  // host data without GPUs: nothing to diagnose
    HostSignals hs;
    hs.name = name.empty() ? "localhost" : name;
    hs.simulated = h.simulated;
    hs.scenario = h.scenario;
    for (size_t i = 0; i < kHostSigCount; ++i) hs.sigs[i] = merge(h.parts[i], combine_of(static_cast<HostSig>(i)));
    const Series& total = hs.sig(HostSig::kCpuTotal);
    if (!total.empty() && !hs.sig(HostSig::kCpuIdle).empty()) {
      Series busy = ratio(hs.sig(HostSig::kCpuIdle), total);
      Series iow = ratio(hs.sig(HostSig::kCpuIowaitRaw), total);
      size_t j = 0;
      for (Point& p : busy) {  // busy = 1 - idle/total - iowait/total
        while (j < iow.size() && iow[j].t_ms < p.t_ms) ++j;
        const double w = j < iow.size() && iow[j].t_ms == p.t_ms ? iow[j].v : 0.0;
        p.v = std::clamp(1.0 - p.v - w, 0.0, 1.0);
      }
      hs.sig(HostSig::kCpuBusy) = std::move(busy);
      hs.sig(HostSig::kIowait) = std::move(iow);
    }
    // A p99 a server computed itself (Triton's summary) and one derived from
    // a latency histogram (vLLM, SGLang, TGI, gpulens): the larger per
    // timestamp, the worst of what the node serves.
    for (const auto& [sig, by_le] : h.buckets) {
      const Series from_buckets = latency_p99(by_le);
      Series& p99 = hs.sigs[sig];
      p99 = combine({&p99, &from_buckets}, Combine::kMax);
    }
    if (!h.triton_duration.empty()) {
      const Series dur = merge(h.triton_duration, Combine::kSum);
      const Series cnt = merge(h.triton_success.empty() ? h.triton_count : h.triton_success, Combine::kSum);
      hs.sig(HostSig::kLatencyMean) = ratio(dur, cnt);
    }
    std::vector<const Series*> nic_utils, ib_utils;
    for (auto& [key, l] : h.links) {
      LinkSignals link = judge_link(key.second, key.first, l.parts);
      if (link.util.empty()) continue;
      hs.links.push_back(std::move(link));
    }
    for (const LinkSignals& l : hs.links) (l.infiniband ? ib_utils : nic_utils).push_back(&l.util);
    hs.sig(HostSig::kNicUtil) = combine(nic_utils, Combine::kMax);
    hs.sig(HostSig::kIbUtil) = combine(ib_utils, Combine::kMax);
    for (auto& [key, p] : h.processes) {
      p.present = merge(h.presence[key], Combine::kMax);
      hs.processes.push_back(std::move(p));
    }
    for (auto& [index, g] : h.gpus) {
      GpuSignals gs;
      gs.index = index;
      gs.uuid = g.uuid;
      gs.model = g.model;
      gs.peer_paths = std::move(g.peer_paths);
      gs.local_cpus = std::move(g.local_cpus);
      gs.mig = std::move(g.mig);
      // The job: the one seen last (gpu_job_info, hpc_job), else the pod's
      // owner. A job whose claim overlaps that one's in time holds the GPU
      // too (docs/jobs.md); one that ended before it started was an earlier
      // job on the GPU and gives way.
      const GpuAcc::JobSeen* primary = nullptr;
      for (const auto& [job, seen] : g.jobs) {
        if (primary == nullptr || seen.last > primary->last) {
          primary = &seen;
          gs.job = job;
          gs.job_source = seen.source;
        }
      }
      for (const auto& [job, seen] : g.jobs) {
        if (&seen == primary) continue;
        // Sharing one instant at the ends is a hand-over (a query's step
        // can show the old job's last point beside the new one's first).
        const bool overlaps = seen.first < primary->last && primary->first < seen.last;
        const bool same_span = seen.first == primary->first && seen.last == primary->last;  // e.g. one scrape
        if (overlaps || same_span) gs.also_jobs.push_back({job, seen.source});
      }
      if (gs.job.empty() && !g.pod.empty()) {
        if (auto it = pod_jobs_.find(g.pod); it != pod_jobs_.end()) {
          gs.job = it->second;
          gs.job_source = "kubernetes";
        }
      }
      for (size_t i = 0; i < kGpuSigCount; ++i) gs.sigs[i] = merge(g.parts[i], combine_of(static_cast<GpuSig>(i)));
      for (auto& [key, parts] : g.by_process) gs.by_process[key] = merge(parts, combine_of(key.first));
      for (auto& [key, parts] : g.health_watches) gs.health_watches[key] = merge(parts, Combine::kMax);
      hs.gpus.push_back(std::move(gs));
    }
    // By GPU ("2" < "10"), each GPU's MIG instances after it ("0", "0/gi1", "0/gi2", "1").
    auto numeric_less = [](std::string_view a, std::string_view b) {
      return a.size() != b.size() ? a.size() < b.size() : a < b;
    };
    std::sort(hs.gpus.begin(), hs.gpus.end(), [&](const GpuSignals& a, const GpuSignals& b) {
      const std::string_view pa = a.mig.empty() ? std::string_view(a.index) : std::string_view(a.mig.gpu);
      const std::string_view pb = b.mig.empty() ? std::string_view(b.index) : std::string_view(b.mig.gpu);
      if (pa != pb) return numeric_less(pa, pb);
      if (a.mig.empty() != b.mig.empty()) return a.mig.empty();
      return numeric_less(a.mig.gpu_instance, b.mig.gpu_instance);
    });
    build_engines(h, hs);
    if (hs.sig(HostSig::kPrefixCacheHitRatio).empty()) {
      // vLLM's ratio exists per engine (its counters'): the host's view,
      // as of SGLang's gauges, is the largest.
      std::vector<const Series*> prefix;
      for (const EngineSignals& e : hs.engines) prefix.push_back(&e.sig(HostSig::kPrefixCacheHitRatio));
      hs.sig(HostSig::kPrefixCacheHitRatio) = combine(prefix, Combine::kMax);
    }
    set.hosts.push_back(std::move(hs));
  }
  hosts_.clear();
  named_hosts_.clear();
  return set;
}

}  // namespace gpulens::diagnose
