// The rule set itself: fleet recording rules and the alerts, for native and
// dcgm-exporter metric names. Thresholds and durations come from RuleOptions.
#include "rules/rules.h"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "diagnose/signals.h"
#include "model/catalog.h"
#include "util/duration.h"

namespace gpulens::rules {
namespace {

// Everything that differs between the two naming schemes.
struct Vocabulary {
  bool dcgm;
  std::string gpu_by;  // labels that identify one GPU series
  std::string who;     // template naming the GPU in descriptions
  std::string util, temp, occupancy, power, mem_used, mem_total;
  double util_scale;   // value of util for ratio 1.0
  std::string util_value;  // template printing util's $value
  std::string short_who = "GPU {{ $labels.gpu }} on {{ $labels.instance }}";  // ... in summaries
};

Vocabulary vocabulary(Names names) {
  if (names == Names::kDcgm) {
    return {true, "instance, job, gpu, UUID, modelName",
            "GPU {{ $labels.gpu }} ({{ $labels.modelName }}, {{ $labels.UUID }}) on {{ $labels.instance }}",
            "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_PROF_SM_OCCUPANCY",
            "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_TOTAL", 100.0,
            "{{ $value | humanize }} %"};
  }
  return {false, "instance, job, gpu, gpu_uuid, gpu_name",
          "GPU {{ $labels.gpu }} ({{ $labels.gpu_name }}, {{ $labels.gpu_uuid }}) on {{ $labels.instance }}",
          "gpu_utilization_ratio", "gpu_temperature_celsius", "gpu_sm_occupancy_ratio",
          "gpu_power_watts", "gpu_memory_used_bytes", "gpu_memory_total_bytes", 1.0,
          "{{ $value | humanizePercentage }}"};
}

// Clock-event reasons that cut clocks (power cap, HW slowdown, thermal, power
// brake); idle, application clocks, sync boost and display clocks do not.
constexpr uint64_t kThrottleBits = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

std::string throttle_reason_regex() {
  std::string re;
  for (const auto& r : clock_reasons()) {
    if (r.bit & kThrottleBits) re += (re.empty() ? "" : "|") + std::string(r.label);
  }
  return re;
}

std::string pct(double ratio) { return promql_number(ratio * 100) + " %"; }
std::string dur(int64_t ms) { return format_duration(ms); }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// An alert with the annotations every gpulens alert carries.
Rule alert(const RuleOptions& o, std::string name, std::string severity, std::string expr, int64_t for_ms,
           std::string summary, std::string description) {
  Rule r;
  r.alert = std::move(name);
  r.expr = std::move(expr);
  r.for_ms = for_ms;
  r.labels = {{"severity", std::move(severity)}};
  r.annotations = {{"summary", std::move(summary)},
                   {"description", std::move(description)},
                   {"runbook_url", o.runbook_base + "#runbook-" + lower(r.alert)}};
  return r;
}

Rule record(std::string name, std::string expr) {
  Rule r;
  r.record = std::move(name);
  r.expr = std::move(expr);
  return r;
}

std::string latency_p99(const RuleOptions& o) {
  std::string by;
  for (const auto& l : o.join_labels()) by += l + ", ";
  return "histogram_quantile(0.99, sum by (" + by + "le) (rate(" + o.latency_metric + "_bucket[" +
         dur(o.duration_ms("sm_occupancy_low.window")) + "])))";
}

std::string join_on(const RuleOptions& o) {
  std::string on;
  for (const auto& l : o.join_labels()) on += (on.empty() ? "" : ", ") + l;
  return "on (" + on + ")";
}

std::vector<Rule> recording_rules(const RuleOptions& o, const Vocabulary& v) {
  const std::string util = v.dcgm ? v.util + " / 100" : v.util;
  const std::string mib = v.dcgm ? " * 1048576" : "";
  std::vector<Rule> r = {
      record("instance:gpu_utilization_ratio:avg", "avg by (instance, job) (" + util + ")"),
      record("instance:gpu_sm_occupancy_ratio:avg", "avg by (instance, job) (" + v.occupancy + ")"),
      record("instance:gpu_memory_used_bytes:sum", "sum by (instance, job) (" + v.mem_used + ")" + mib),
      record("instance:gpu_memory_total_bytes:sum", "sum by (instance, job) (" + v.mem_total + ")" + mib),
      record("instance:gpu_power_watts:sum", "sum by (instance, job) (" + v.power + ")"),
      record("instance:gpu_temperature_celsius:max", "max by (instance, job) (" + v.temp + ")"),
      record("instance:gpus:count", "count by (instance, job) (" + v.temp + ")"),
      record("job:gpu_utilization_ratio:avg", "avg by (job) (" + util + ")"),
      record("job:gpu_sm_occupancy_ratio:avg", "avg by (job) (" + v.occupancy + ")"),
      record("job:gpu_power_watts:sum", "sum by (job) (" + v.power + ")"),
      record("job:gpus:count", "count by (job) (" + v.temp + ")"),
  };
  if (v.dcgm) {
    r.push_back(record("gpu:gpu_pcie_bandwidth_bytes_per_second:max",
                       "max by (" + v.gpu_by +
                           ") ({__name__=~\"DCGM_FI_PROF_PCIE_(TX|RX)_BYTES\"})"));
  } else {
    r.push_back(record("gpu:gpu_pcie_bandwidth_util_ratio:max",
                       "max by (" + v.gpu_by + ") ({__name__=~\"gpu_pcie_(tx|rx)_bandwidth_util_ratio\"})"));
    r.push_back(record("job:gpus_up:sum", "sum by (job) (gpu_up)"));
    r.push_back(record("job:gpu_memory_fragmentation_ratio:max", "max by (job) (gpu_memory_fragmentation_ratio)"));
    r.push_back(record("job:gpulens_findings:count",
                       "count by (job, cause, severity) (gpulens_finding == 1)"));
  }
  r.push_back(record("instance:" + o.latency_metric + ":p99", latency_p99(o)));
  return r;
}

// The nominal per-direction PCIe peak of a dcgm-exporter GPU, from the link's
// current width and generation (gen 3 and later: 0.9846 GB/s per lane,
// doubling each generation), unless the user gave a measured one. group_left
// keeps every label of the left side (plain on () would keep only these).
std::string dcgm_pcie_peak(const RuleOptions& o) {
  double peak = o.number("pcie_saturation.peak_bytes_per_second");
  if (peak > 0) return promql_number(peak);
  return "on (instance, gpu, UUID) group_left () (DCGM_FI_DEV_PCIE_LINK_WIDTH * 0.9846e9 * 2 ^ (DCGM_FI_DEV_PCIE_LINK_GEN - 3))";
}

std::vector<Rule> alerting_rules(const RuleOptions& o, const Vocabulary& v) {
  std::vector<Rule> r;
  const double util_low = o.number("gpu_util_low.threshold");
  const int64_t util_for = o.duration_ms("gpu_util_low.for");
  r.push_back(alert(o, "GPULowUtilization", "warning", v.util + " < " + promql_number(util_low * v.util_scale),
                    util_for, v.short_who + ": utilisation below " + pct(util_low),
                    v.who + " has been " + v.util_value + " utilised for more than " + dur(util_for) +
                        " (threshold " + pct(util_low) +
                        "). Low utilisation is a symptom: find the cause before adding GPUs."));

  const double temp = o.number("temperature_high.threshold");
  const int64_t temp_for = o.duration_ms("temperature_high.for");
  r.push_back(alert(o, "GPUTemperatureHigh", "warning", v.temp + " > " + promql_number(temp), temp_for,
                    v.short_who + ": temperature above " + promql_number(temp) + " °C",
                    v.who + " is at {{ $value | humanize }} °C, above " + promql_number(temp) + " °C for more than " +
                        dur(temp_for) + "; clocks will be cut if it keeps rising."));

  if (!v.dcgm) {
    const double frag = o.number("memory_fragmentation.threshold");
    const int64_t frag_for = o.duration_ms("memory_fragmentation.for");
    // A push may name its GPU by UUID alone, without a pid: the process is
    // then left out of the description rather than printed empty.
    // The real measure first: external fragmentation from the process's
    // allocator snapshot (free bytes in pieces; the small pool is in pieces
    // by design); the slack 1 - allocated/reserved only where no snapshot
    // measure is pushed for that process. Each says which it is.
    const std::string f = promql_number(frag);
    const std::string process = "{{ with $labels.pid }}, process {{ . }}{{ end }}";
    r.push_back(alert(
        o, "GPUMemoryFragmentationHigh", "warning",
        "label_replace(gpu_allocator_external_fragmentation_ratio{pool!~\"small.*\"} > " + f +
            ", \"measure\", \"external fragmentation (1 - largest free block / free bytes)\", \"\", \"\")\nor\n"
            "label_replace(gpu_memory_fragmentation_ratio > " + f +
            " unless on (instance, job, gpu, pid) gpu_allocator_external_fragmentation_ratio, \"measure\", \"slack "
            "(1 - allocated/reserved)\", \"\", \"\")",
        frag_for, v.short_who + ": allocator fragmentation above " + pct(frag),
        v.who + process + ": {{ $labels.measure }} is {{ $value | humanizePercentage }} for more than " +
            dur(frag_for) + "; large allocations may fail although memory looks free."));
    const int64_t retry_window = o.duration_ms("allocator_retries.window");
    r.push_back(alert(o, "GPUAllocatorRetrying", "warning",
                      "increase(gpu_allocator_retries_total[" + dur(retry_window) +
                          "]) > 0\nor\nincrease(gpu_allocator_ooms_total[" + dur(retry_window) + "]) > 0",
                      0, v.short_who + ": the in-process allocator flushed its cache or ran out of memory",
                      v.who + process + ": {{ $value | humanize }} allocator retries or OOMs in the last " +
                          dur(retry_window) +
                          "; each retry frees the cache and synchronises every stream (a latency spike)."));
  }

  const double pcie = o.number("pcie_saturation.threshold");
  const int64_t pcie_for = o.duration_ms("pcie_saturation.for");
  std::string pcie_expr;
  if (v.dcgm) {
    const std::string peak = dcgm_pcie_peak(o);
    pcie_expr = "DCGM_FI_PROF_PCIE_TX_BYTES / " + peak + " > " + promql_number(pcie) +
                "\nor\nDCGM_FI_PROF_PCIE_RX_BYTES / " + peak + " > " + promql_number(pcie);
  } else {
    pcie_expr = "gpu_pcie_tx_bandwidth_util_ratio > " + promql_number(pcie) +
                " or gpu_pcie_rx_bandwidth_util_ratio > " + promql_number(pcie);
  }
  r.push_back(alert(o, "GPUPCIeBandwidthSaturation", "warning", pcie_expr, pcie_for,
                    v.short_who + ": PCIe above " + pct(pcie) + " of peak",
                    v.who + " moves {{ $value | humanizePercentage }} of its PCIe peak in one direction for more "
                            "than " +
                        dur(pcie_for) + " (threshold " + pct(pcie) +
                        "); host-device copies are likely holding up kernels."));

  const double occ = o.number("sm_occupancy_low.threshold");
  const double p99 = o.number("sm_occupancy_low.p99_latency_seconds");
  const int64_t occ_for = o.duration_ms("sm_occupancy_low.for");
  r.push_back(alert(o, "GPULowSMOccupancy", "warning",
                    v.occupancy + " < " + promql_number(occ) + "\nand " + join_on(o) + "\n" + latency_p99(o) +
                        " > " + promql_number(p99),
                    occ_for, v.short_who + ": SM occupancy below " + pct(occ) + " with p99 latency above " +
                                 promql_number(p99 * 1000) + " ms",
                    v.who + " runs at {{ $value | humanizePercentage }} SM occupancy while p99 latency of " +
                        o.latency_metric + " is above " + promql_number(p99 * 1000) + " ms, for more than " +
                        dur(occ_for) +
                        ": kernels too small or launch-bound. Low occupancy with healthy latency does not fire."));

  // An inference engine's saturation (docs/serving.md): its own series,
  // labelled engine and endpoint, the same under either GPU naming.
  const double kv = o.number("kv_cache_pressure.threshold");
  const std::string kv_window = dur(o.duration_ms("kv_cache_pressure.window"));
  const int64_t kv_for = o.duration_ms("kv_cache_pressure.for");
  const std::string engine = "engine {{ $labels.engine }} at {{ $labels.endpoint }} on {{ $labels.instance }}";
  r.push_back(alert(
      o, "ServingKVCachePressure", "warning",
      "serving_kv_cache_usage_ratio >= " + promql_number(kv) +
          "\nand on (instance, job, engine, endpoint) (\n  rate(serving_preemptions_total[" + kv_window +
          "]) > 0\n  or serving_requests_waiting >= 1\n)",
      kv_for, "Inference " + engine + ": KV cache full, requests preempted or queued",
      "The KV cache of inference " + engine + " is {{ $value | humanizePercentage }} full while it preempts "
          "requests or queues them, for more than " + dur(kv_for) + " (threshold " + pct(kv) +
          "). Change the engine before adding GPUs: fewer concurrent sequences, a shorter max model length, more "
          "cache memory, prefix caching, KV-cache quantisation."));
  const std::string ov_window = dur(o.duration_ms("overload.window"));
  const int64_t ov_for = o.duration_ms("overload.for");
  r.push_back(alert(
      o, "ServingOverload", "warning",
      "serving_requests_waiting >= 1\nand delta(serving_requests_waiting[" + ov_window +
          "]) > 0\nunless on (instance, job, engine, endpoint) serving_kv_cache_usage_ratio >= " + promql_number(kv),
      ov_for, "Inference " + engine + ": queue growing",
      "The queue of inference " + engine + " has grown for more than " + dur(ov_for) + " (now {{ $value }} waiting, more than " +
          ov_window + " earlier) while its KV cache is not full: more requests arrive than it serves. "
          "If its GPUs are busy with useful work, add replicas; gpulens diagnose says whether they are."));

  // A counter series born with its first XID has no increase(): the second
  // branch catches it, but only for targets scraped a window ago, so that a
  // restarted Prometheus does not page for old errors.
  const std::string xw = dur(o.duration_ms("xid_errors.window"));
  if (v.dcgm) {
    r.push_back(alert(o, "GPUXidError", "critical",
                      "(DCGM_FI_DEV_XID_ERRORS > 0 and changes(DCGM_FI_DEV_XID_ERRORS[" + xw +
                          "]) > 0)\nor\n(DCGM_FI_DEV_XID_ERRORS > 0 unless DCGM_FI_DEV_XID_ERRORS offset " + xw +
                          ")\n  and on (instance, job) (up offset " + xw + ")",
                      0, v.short_who + ": XID error {{ $value }}",
                      v.who + " reported XID {{ $value }} within the last " + xw +
                          " (the last XID code; repeats of the same code count once)."));
  } else {
    r.push_back(alert(o, "GPUXidError", "critical",
                      "increase(gpu_xid_errors_total[" + xw + "]) > 0\nor\n(gpu_xid_errors_total > 0 unless " +
                          "gpu_xid_errors_total offset " + xw + ")\n  and on (instance, job) (up offset " + xw + ")",
                      0, v.short_who + ": XID {{ $labels.xid }} error",
                      v.who + " reported {{ $value | humanize }} XID {{ $labels.xid }} error(s) within the last " + xw +
                          "."));
  }

  // A DCGM health watch at FAIL: the threshold of the diagnosis rule
  // hardware_errors. No for: a failed watch is a fact, as an XID is; WARN
  // does not fire. dcgm-exporter labels the watch health_watch and its
  // DCGM_FR_* code health_error_code; gpulens calls them watch and error.
  const std::string fail = promql_number(diagnose::kHealthFail);
  const std::string watch = v.dcgm ? "{{ $labels.health_watch }}" : "{{ $labels.watch }}";
  const std::string code = v.dcgm ? "{{ $labels.health_error_code }}" : "{{ $labels.error }}";
  const std::string health = v.dcgm ? "DCGM_EXP_GPU_HEALTH_STATUS" : "gpu_health_status";
  r.push_back(alert(o, "GPUHealthWatchFailed", "critical", health + " >= " + fail, 0,
                    v.short_who + ": DCGM health watch " + watch + " failed (" + code + ")",
                    v.who + " failed its DCGM health watch " + watch + " with " + code + " (" + health +
                        " {{ $value }}: 0 pass, 10 warn, " + fail +
                        " fail): a hardware fault; drain the node and have the GPU serviced."));

  const int64_t thr_for = o.duration_ms("clock_throttle.for");
  if (v.dcgm) {
    // Bits 0x4 power cap, 0x8 HW slowdown, 0x20/0x40 thermal, 0x80 power
    // brake; idle (0x1), app clocks (0x2), sync boost (0x10) and display
    // (0x100) are not throttling. PromQL has no bitwise AND: mask by arithmetic.
    r.push_back(alert(
        o, "GPUClockThrottled", "warning",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS % 256\n- DCGM_FI_DEV_CLOCK_THROTTLE_REASONS % 4\n"
        "- (floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 16) % 2) * 16\n> 0",
        thr_for, v.short_who + ": clocks throttled",
        v.who + " has had clocks cut by thermal or power reasons for more than " + dur(thr_for) +
            " (reason bits {{ $value }}: 4 power cap, 8 HW slowdown, 32 SW thermal, 64 HW thermal, 128 power "
            "brake)."));
  } else {
    r.push_back(alert(o, "GPUClockThrottled", "warning",
                      "gpu_clock_event_active{reason=~\"" + throttle_reason_regex() + "\"} == 1", thr_for,
                      v.short_who + ": clocks throttled ({{ $labels.reason }})",
                      v.who + " has had clocks cut by {{ $labels.reason }} for more than " + dur(thr_for) +
                          " (gpu_clock_event_active {{ $value }})."));
  }

  // The definition of diagnose/pcie_link.h, shared with the diagnosis rule
  // pcie_link_degraded: below the maximum or (native names) the calibrated
  // link, in either dimension, while GPU utilisation or PCIe traffic says the
  // link is in use.
  const double busy = o.number("pcie_link_degraded.busy_threshold");
  const double busy_pcie = o.number("pcie_link_degraded.busy_pcie_threshold");
  const int64_t link_for = o.duration_ms("pcie_link_degraded.for");
  std::string link_expr;
  if (v.dcgm) {
    const std::string peak = dcgm_pcie_peak(o);
    link_expr = "(\n  DCGM_FI_DEV_PCIE_LINK_GEN / on (instance, gpu, UUID) group_left DCGM_FI_DEV_PCIE_MAX_LINK_GEN < 1\n"
                "  or\n  DCGM_FI_DEV_PCIE_LINK_WIDTH / on (instance, gpu, UUID) group_left DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH < 1\n)\n"
                "and on (instance, gpu, UUID)\n(\n  DCGM_FI_DEV_GPU_UTIL >= " + promql_number(busy * 100) +
                "\n  or\n  DCGM_FI_PROF_PCIE_TX_BYTES / " + peak + " >= " + promql_number(busy_pcie) +
                "\n  or\n  DCGM_FI_PROF_PCIE_RX_BYTES / " + peak + " >= " + promql_number(busy_pcie) + "\n)";
  } else {
    link_expr = "(\n  gpu_pcie_link_generation / gpu_pcie_link_generation_max < 1\n"
                "  or\n  gpu_pcie_link_generation / gpu_pcie_link_generation_calibrated < 1\n"
                "  or\n  gpu_pcie_link_width / gpu_pcie_link_width_max < 1\n"
                "  or\n  gpu_pcie_link_width / gpu_pcie_link_width_calibrated < 1\n)\n"
                "and\n(\n  gpu_utilization_ratio >= " + promql_number(busy) +
                "\n  or\n  gpu_pcie_tx_bandwidth_util_ratio >= " + promql_number(busy_pcie) +
                "\n  or\n  gpu_pcie_rx_bandwidth_util_ratio >= " + promql_number(busy_pcie) + "\n)";
  }
  const std::string baseline = v.dcgm ? "maximum" : "maximum or calibrated";
  r.push_back(alert(o, "GPUPCIeLinkDegraded", "warning", link_expr, link_for,
                    v.short_who + ": PCIe link below its " + baseline + " generation or width",
                    v.who + " has trained its PCIe link at {{ $value | humanizePercentage }} of its " + baseline +
                        " generation or width while in use (utilisation at least " + pct(busy) +
                        " or PCIe traffic at least " + pct(busy_pcie) + " of its peak) for more than " +
                        dur(link_for) + "; reseat or check the slot and riser."));

  const int64_t lost_for = o.duration_ms("gpu_lost.for");
  if (v.dcgm) {
    r.push_back(alert(o, "GPULost", "critical",
                      "last_over_time(DCGM_FI_DEV_GPU_TEMP[15m]) unless DCGM_FI_DEV_GPU_TEMP\n"
                      "unless on (instance) up == 0",
                      lost_for, v.short_who + ": GPU lost",
                      v.who + " stopped reporting while its exporter is up (last temperature {{ $value }} °C): the GPU "
                              "fell off the bus or its driver lost it (check dmesg for XID 79)."));
  } else {
    r.push_back(alert(o, "GPULost", "critical", "gpu_up == 0", lost_for, v.short_who + ": GPU lost",
                      v.who + " has not answered for more than " + dur(lost_for) +
                          " (gpu_up {{ $value }}): it fell off the bus or its driver lost it (check dmesg for XID 79)."));
  }

  // The driver's own verdict (NVML recovery action, CUDA 12.8+ drivers) and
  // a row remap waiting for a reset: facts, no for. dcgm-exporter exports
  // neither, so the dcgm variant has no such alerts.
  if (!v.dcgm) {
    r.push_back(alert(o, "GPUNeedsReset", "critical",
                      "gpu_recovery_action == 1 or gpu_recovery_action == 4 or gpu_row_remap_pending == 1", 0,
                      v.short_who + ": GPU needs a reset",
                      v.who + " needs a GPU reset: the driver's recovery action asks for one (1 reset, 4 drain and "
                              "reset), or a memory row remap waits for it (value {{ $value }})."));
    r.push_back(alert(o, "GPUNeedsReboot", "critical", "gpu_recovery_action == 2", 0,
                      v.short_who + ": node needs a reboot",
                      v.who + " needs the node rebooted: the driver's recovery action is {{ $value }} (node reboot); "
                              "a GPU reset is not enough."));
  }

  const int64_t down_for = o.duration_ms("agent_down.for");
  const std::string down_name = v.dcgm ? "GPUExporterDown" : "GpulensAgentDown";
  r.push_back(alert(o, down_name, "critical", "up{job=\"" + o.job + "\"} == 0", down_for,
                    "GPU metrics exporter on {{ $labels.instance }} is down",
                    "Prometheus has failed to scrape job " + o.job + " on {{ $labels.instance }} for more than " +
                        dur(down_for) + " (up {{ $value }}): no GPU metrics or alerts from that node."));

  if (!v.dcgm) {
    const int64_t src_for = o.duration_ms("source_down.for");
    r.push_back(alert(o, "GpulensSourceDown", "warning", "gpulens_source_up == 0", src_for,
                      "gpulens source {{ $labels.source }} on {{ $labels.instance }} is failing",
                      "Collection from source {{ $labels.source }} on {{ $labels.instance }} has failed for more "
                      "than " +
                          dur(src_for) + " (gpulens_source_up {{ $value }}); the other sources keep working."));
  }

  // The simulator's made-up GPUs must never pass for a production node's.
  // Both variants carry it: `--dcgm-names` still exports gpulens_simulated.
  const int64_t sim_for = o.duration_ms("simulated_data.for");
  r.push_back(alert(o, "GpulensSimulatedData", "warning", "gpulens_simulated == 1", sim_for,
                    "gpulens on {{ $labels.instance }} serves SIMULATED GPU data",
                    "The agent on {{ $labels.instance }} (job {{ $labels.job }}) exports simulated GPU data "
                    "(gpulens_simulated {{ $value }}, scenario {{ $labels.scenario }}), not a real GPU's: it was "
                    "started with --source sim. Every GPU series and alert from that target is made up."));
  return r;
}

}  // namespace

std::string promql_number(double v) {
  // 12 digits: exact for every threshold a user types, and 0.2 * 100 prints
  // as 20, not 20.000000000000004.
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

std::vector<Group> build_rules(const RuleOptions& o, Names names) {
  const Vocabulary v = vocabulary(names);
  const std::string prefix = v.dcgm ? "gpulens-dcgm" : "gpulens";
  return {
      {prefix + "-recording", o.evaluation_interval_ms, recording_rules(o, v)},
      {prefix + "-alerts", o.evaluation_interval_ms, alerting_rules(o, v)},
  };
}

}  // namespace gpulens::rules
