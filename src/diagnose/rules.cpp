// One function per cause. Conditions use the Thresholds; evidence names the
// canonical signals (signals.h) so that the report can print them.
#include "diagnose/rules.h"

#include <algorithm>
#include <cstddef>
#include <cmath>
#include <cstdio>

#include "diagnose/pcie_link.h"
#include "model/xid.h"
#include "model/pcie.h"

namespace gpulens::diagnose {
namespace {

using G = GpuSig;
using H = HostSig;

constexpr int8_t kUnknown = -1;
double nan() { return std::nan(""); }

// XIDs that mean the GPU or its memory is failing, not the application
// (48 DBE, 62/64 internal/ECC, 74 NVLink, 79 fell off the bus, 92 high SBE
// rate, 94/95 contained/uncontained ECC, 119/120 GSP).
bool fatal_xid(double x) {
  static constexpr int kFatal[] = {48, 62, 64, 74, 79, 92, 94, 95, 119, 120};
  return std::find(std::begin(kFatal), std::end(kFatal), static_cast<int>(x)) != std::end(kFatal);
}

std::string gbps(double bps) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GB/s", bps / 1e9);
  return b;
}

double percentile(Aligned v, double q) {
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  if (v.empty()) return nan();
  const size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<ptrdiff_t>(k), v.end());
  return v[k];
}

// Element-wise helpers over aligned vectors.
Aligned ratio(const Aligned& a, double d) {
  Aligned out(a.size(), nan());
  if (!(d > 0)) return out;
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] / d;
  return out;
}
Aligned max_of(const Aligned& a, const Aligned& b) {
  Aligned out(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    out[i] = !known(a[i]) ? b[i] : !known(b[i]) ? a[i] : std::max(a[i], b[i]);
  }
  return out;
}

class Rules {
 public:
  Rules(const GpuContext& ctx, std::vector<NotAssessed>& na, std::vector<std::string>& notes)
      : c_(ctx), th_(ctx.th), na_(na), notes_(notes), n_(ctx.t.size()) {
    util_ = A(c_.gpu.sig(G::kGpuUtil).empty() ? c_.gpu.sig(G::kGrActive) : c_.gpu.sig(G::kGpuUtil));
    busy_ = A(c_.busy_series());
    // Bursty work (a loader that feeds the GPU in spurts) flips per sample;
    // the input and idle rules judge the trailing two-minute mean.
    util_avg_ = trailing_mean(util_, std::max<int64_t>(120'000, 4 * c_.step_ms));
    busy_avg_ = trailing_mean(busy_, std::max<int64_t>(120'000, 4 * c_.step_ms));
    busy_name_ = !has(G::kSmActive) ? (!has(G::kGrActive) ? EvidenceName("gpu_util") : EvidenceName("gr_engine_active"))
                                     : EvidenceName("sm_active");
    pcie_util_ = pcie_utilisation();
  }

  std::vector<RuleResult> run() {
    std::vector<RuleResult> out;
    auto add = [&](RuleResult r) {
      if (r.holds.empty()) return;
      if (r.cause != "hardware_errors") {
        for (size_t i = 0; i < n_; ++i) {
          if (c_.t[i] >= c_.cutoff_ms) r.holds[i] = 0;
        }
      }
      out.push_back(std::move(r));
    };
    add(hardware_errors());
    add(input_pipeline());
    add(host_transfer());
    add(memory_bandwidth());
    add(network_fallback());
    add(communication());
    auto [launch, small] = occupancy();
    // An engine whose KV cache is full or whose queue outgrows it explains
    // its latency: kernel_launch is not chosen where either holds (and
    // small_batch, below, nowhere another cause holds).
    auto [kv_pressure, overload] = serving();
    for (const RuleResult* serving : {&kv_pressure, &overload}) {
      if (serving->holds.empty() || launch.holds.empty()) continue;
      for (size_t i = 0; i < n_; ++i) {
        if (serving->holds[i] == 1) launch.holds[i] = 0;
      }
    }
    add(std::move(kv_pressure));
    add(std::move(overload));
    add(std::move(launch));
    add(topology_rule(c_, util_, na_));
    add(thermal_throttle());
    add(power_cap());
    add(pcie_link_degraded());
    add(memory_fragmentation());
    add(memory_pressure());
    add(idle());
    // small_batch is what is left: only where no other cause holds.
    if (!small.holds.empty()) {
      for (const RuleResult& r : out) {
        for (size_t i = 0; i < n_; ++i) {
          if (r.holds[i] == 1) small.holds[i] = 0;
        }
      }
      add(std::move(small));
    }
    return out;
  }

 private:
  // Mean of the known values in (t - span, t], per point.
  Aligned trailing_mean(const Aligned& v, int64_t span_ms) const {
    Aligned out(n_, nan());
    double sum = 0;
    size_t cnt = 0, lo = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (known(v[i])) { sum += v[i]; ++cnt; }
      while (c_.t[lo] <= c_.t[i] - span_ms) {
        if (known(v[lo])) { sum -= v[lo]; --cnt; }
        ++lo;
      }
      if (cnt && known(v[i])) out[i] = sum / static_cast<double>(cnt);
    }
    return out;
  }

  Aligned A(const Series& s) const { return c_.align(s); }
  Aligned A(G s) const { return A(c_.gpu.sig(s)); }
  // The serving causes of the engines joined to this GPU (each judged on its
  // own series; one engine per GPU is the layout, and with two the one whose
  // cause holds longer is kept); engines of the host joined to no GPU are
  // said to be unjoined.
  std::pair<RuleResult, RuleResult> serving() {
    std::pair<RuleResult, RuleResult> out;
    auto held = [](const RuleResult& r) { return std::count(r.holds.begin(), r.holds.end(), int8_t{1}); };
    for (const EngineSignals& e : c_.host.engines) {
      if (std::find(e.gpus.begin(), e.gpus.end(), c_.gpu.index) == e.gpus.end()) {
        if (e.gpus.empty()) {
          const std::string why = "engine " + e.describe() +
                                  " is joined to no GPU (no pid on a GPU's process list, no pod shared with a GPU, "
                                  "not the host's only engine)";
          na_.push_back({"kv_cache_pressure", why});
          na_.push_back({"overload", why});
        }
        continue;
      }
      auto [kv, over] = serving_rules(c_, e, util_, busy_, na_);
      if (out.first.holds.empty() || held(kv) > held(out.first)) out.first = std::move(kv);
      if (out.second.holds.empty() || held(over) > held(out.second)) out.second = std::move(over);
    }
    return out;
  }

  Aligned A(H s) const { return A(c_.host.sig(s)); }
  bool has(G s) const { return !c_.gpu.sig(s).empty(); }
  bool has(H s) const { return !c_.host.sig(s).empty(); }
  void not_assessed(std::string_view cause, std::string reason) { na_.push_back({std::string(cause), std::move(reason)}); }

  RuleResult make(std::string_view cause, std::string_view layer, Severity sev, int64_t for_ms) const {
    RuleResult r;
    r.cause = cause;
    r.layer = layer;
    r.severity = sev;
    r.for_ms = for_ms;
    r.holds.assign(n_, kUnknown);
    return r;
  }

  // PCIe utilisation (max of RX, TX) over the peak, choosing the peak by
  // calibration, the agent's own figure, the link, then the GPU model.
  Aligned pcie_utilisation() {
    if (has(G::kPcieRxUtil) || has(G::kPcieTxUtil)) {
      pcie_basis_ = "the agent's measured peak";
      return max_of(A(G::kPcieRxUtil), A(G::kPcieTxUtil));
    }
    if (!has(G::kPcieRxBps) && !has(G::kPcieTxBps)) return Aligned(n_, nan());
    double peak = th_.pcie_peak_bytes_per_second;
    pcie_basis_ = "calibrated";
    if (!(peak > 0) && has(G::kPciePeak)) {
      peak = c_.gpu.sig(G::kPciePeak).back().v;
      pcie_basis_ = "the agent's peak";
    }
    if (!(peak > 0)) {
      const Series& gen = c_.gpu.sig(has(G::kLinkGen) ? G::kLinkGen : G::kLinkGenMax);
      const Series& width = c_.gpu.sig(has(G::kLinkWidth) ? G::kLinkWidth : G::kLinkWidthMax);
      double best_gen = 0, best_width = 0;
      for (const Point& p : gen) best_gen = std::max(best_gen, p.v);
      for (const Point& p : width) best_width = std::max(best_width, p.v);
      peak = pcie_link_bytes_per_second(static_cast<int>(best_gen), static_cast<int>(best_width));
      pcie_basis_ = "nominal for the link (Gen" + std::to_string(static_cast<int>(best_gen)) + " x" +
                    std::to_string(static_cast<int>(best_width)) + ")";
    }
    if (!(peak > 0)) {
      peak = pcie_model_bytes_per_second(c_.gpu.model);
      pcie_basis_ = "nominal for " + c_.gpu.model;
    }
    if (!(peak > 0)) return Aligned(n_, nan());
    pcie_peak_ = peak;
    return max_of(ratio(A(G::kPcieRxBps), peak), ratio(A(G::kPcieTxBps), peak));
  }

  // PCIe throughput over the nominal peak of the link at its maximum
  // generation and width; NaN without those maxima.
  Aligned full_link_utilisation() const {
    Aligned out(n_, nan());
    if (!has(G::kLinkGenMax) || !has(G::kLinkWidthMax)) return out;
    double gmax = 0, wmax = 0;
    for (const Point& p : c_.gpu.sig(G::kLinkGenMax)) gmax = std::max(gmax, p.v);
    for (const Point& p : c_.gpu.sig(G::kLinkWidthMax)) wmax = std::max(wmax, p.v);
    const double full = pcie_link_bytes_per_second(static_cast<int>(gmax), static_cast<int>(wmax));
    if (!(full > 0)) return out;
    if (has(G::kPcieRxBps) || has(G::kPcieTxBps)) {
      return max_of(ratio(A(G::kPcieRxBps), full), ratio(A(G::kPcieTxBps), full));
    }
    // Only the agent's utilisation: back to bytes through the current link.
    const Aligned gen = A(G::kLinkGen), width = A(G::kLinkWidth);
    for (size_t i = 0; i < n_; ++i) {
      if (!known(pcie_util_[i]) || !known(gen[i]) || !known(width[i])) continue;
      out[i] = pcie_util_[i] * pcie_link_bytes_per_second(static_cast<int>(gen[i]), static_cast<int>(width[i])) / full;
    }
    return out;
  }

  RuleResult hardware_errors() {
    const bool any = has(G::kLastXid) || has(G::kXidRate) || has(G::kGpuUp) || has(G::kRowRemapFailure) ||
                     has(G::kEccUncorrectedRate) || has(G::kHealthStatus) || has(G::kRecoveryAction);
    if (!any) {
      not_assessed("hardware_errors", "no XID, ECC, row-remap or gpu_up signals");
      return {};
    }
    RuleResult r = make("hardware_errors", "health", Severity::kWarning, 0);
    const Aligned xid = A(G::kLastXid), rate = A(G::kXidRate), up = A(G::kGpuUp), remap = A(G::kRowRemapFailure),
                  ecc = A(G::kEccUncorrectedRate), health = A(G::kHealthStatus), recovery = A(G::kRecoveryAction);
    double code = 0, asked = 0;  // the last XID; the driver's last recovery action other than none
    bool lost = false;
    for (size_t i = 0; i < n_; ++i) {
      const bool failed = health[i] >= kHealthFail;
      const bool needs = recovery[i] >= 1;
      const bool fault =
          (xid[i] >= 1) || (rate[i] > 0) || (up[i] == 0) || (remap[i] >= 1) || (ecc[i] > 0) || failed || needs;
      r.holds[i] = fault ? 1 : 0;
      if (!fault) continue;
      if (xid[i] >= 1) code = std::round(xid[i]);
      if (needs) asked = std::round(recovery[i]);
      if (up[i] == 0) lost = true;
      // Draining peer-to-peer traffic (3) is a step, not yet a verdict.
      const bool driver_says = needs && asked != 3;
      if (fatal_xid(xid[i]) || up[i] == 0 || remap[i] >= 1 || ecc[i] > 0 || failed || driver_says) {
        r.severity = Severity::kCritical;
      }
    }
    // The DCGM health watches that failed while the fault held, by name and code.
    std::string watches;
    for (const auto& [watch, series] : c_.gpu.health_watches) {
      const Aligned w = A(series);
      bool failed = false;
      for (size_t i = 0; i < n_ && !failed; ++i) failed = r.holds[i] == 1 && w[i] >= kHealthFail;
      if (failed) watches += (watches.empty() ? "" : ", ") + watch;
    }
    if (has(G::kLastXid)) r.evidence.push_back({"last_xid", xid, 0});
    if (has(G::kGpuUp)) r.evidence.push_back({"gpu_up", up, 1});
    if (has(G::kEccUncorrectedRate)) r.evidence.push_back({"ecc_uncorrected_rate", ecc, 0});
    if (has(G::kRowRemapFailure)) r.evidence.push_back({"row_remap_failure", remap, 0});
    if (has(G::kHealthStatus)) r.evidence.push_back({"health_status", health, kHealthFail, watches});
    std::string what = code > 0 ? "XID " + std::to_string(static_cast<int>(code)) : "";
    if (!watches.empty()) what += (what.empty() ? "" : "; ") + std::string("DCGM health watch failed: ") + watches;
    r.action = what.empty() ? "Hardware fault. " : "Hardware fault (" + what + "). ";
    r.action += hardware_action(code, asked, lost);
    return r;
  }

  // What to do, in the driver's terms when it gave them (the recovery
  // action), else after the XID table (model/xid.h).
  static std::string hardware_action(double code, double asked, bool lost) {
    std::string out;
    const XidAdvice* advice = code > 0 ? xid_advice(static_cast<long long>(code)) : nullptr;
    if (advice != nullptr) {
      out += "XID " + std::to_string(advice->code) + ": " + std::string(advice->meaning) + " (usually " +
             std::string(xid_owner_name(advice->owner)) + "). ";
    }
    const std::string_view driver = recovery_action_name(asked);
    if (asked >= 1 && !driver.empty()) {
      out += "The driver's recovery action: " + std::string(driver) + " (gpu_recovery_action " +
             std::to_string(static_cast<int>(asked)) + "). ";
      if (asked == 1 || asked == 4) out += "Drain the GPU's jobs, then reset it (nvidia-smi -r -i <gpu>)";
      else if (asked == 2) out += "Drain the node, then reboot it";
      else out += "Stop peer-to-peer (NVLink) traffic to the GPU, then read gpu_recovery_action again";
      out += advice != nullptr && advice->rma_if_repeats ? "; if the XID comes back after that, collect "
                                                           "nvidia-bug-report.sh and RMA the GPU."
                                                         : ".";
      return out;
    }
    XidAction action = advice != nullptr ? advice->action : XidAction::kResetGpu;
    if (lost && action != XidAction::kRebootNode) action = XidAction::kRebootNode;  // no device left to reset
    switch (action) {
      case XidAction::kNone:
        out += "Nothing to do for the GPU now; watch whether it repeats";
        break;
      case XidAction::kRestartApplication:
        out += "Fix or restart the application; the GPU is fine unless the XID repeats under other applications";
        break;
      case XidAction::kResetGpu:
        out += "Drain the GPU's jobs, collect dmesg and nvidia-bug-report.sh, reset the GPU (nvidia-smi -r -i <gpu>) "
               "and restart the job";
        break;
      case XidAction::kRebootNode:
        out += "Drain the node, collect dmesg and nvidia-bug-report.sh, reboot the node (a GPU reset is not enough) "
               "and restart the job without this GPU until it is back";
        break;
      case XidAction::kRecoveryAction:
        out += "Do what the driver's recovery action says (gpu_recovery_action: 1 reset the GPU, 2 reboot the "
               "node, 4 drain and reset)";
        break;
    }
    if (advice == nullptr || advice->rma_if_repeats) out += "; if it repeats, replace (RMA) the GPU";
    out += ".";
    return out;
  }

  RuleResult input_pipeline() {
    const bool cpu_known = has(H::kCpuBusy) || has(H::kPsiCpu);
    const bool io_known = has(H::kIowait) || has(H::kPsiIo) || has(H::kDiskBusy);
    if (!cpu_known && !io_known) {
      not_assessed("input_pipeline", "no host CPU or IO signals (node_exporter or the gpulens host source)");
      return {};
    }
    RuleResult r = make("input_pipeline", "host", Severity::kWarning, th_.default_for_ms);
    const Aligned cpu = A(H::kCpuBusy), psi_cpu = A(H::kPsiCpu), iow = A(H::kIowait), psi_io = A(H::kPsiIo),
                  disk = A(H::kDiskBusy);
    size_t cpu_points = 0, io_points = 0;
    for (size_t i = 0; i < n_; ++i) {
      if (!known(util_avg_[i]) || !known(busy_avg_[i])) continue;
      const bool cpu_sat = cpu[i] >= th_.cpu_busy || psi_cpu[i] >= th_.psi_cpu;
      const bool io_sat = iow[i] >= th_.iowait || psi_io[i] >= th_.psi_io || disk[i] >= th_.disk_busy;
      const bool host_known = known(cpu[i]) || known(psi_cpu[i]) || known(iow[i]) || known(psi_io[i]) || known(disk[i]);
      if (!host_known) continue;
      const bool starved = util_avg_[i] > th_.active_util && busy_avg_[i] < th_.starved_sm_active;
      const bool quiet_link = !known(pcie_util_[i]) || pcie_util_[i] < th_.pcie_quiet;
      const bool h = starved && quiet_link && (cpu_sat || io_sat);
      r.holds[i] = h ? 1 : 0;
      if (h) {
        cpu_points += cpu_sat;
        io_points += io_sat;
      }
    }
    r.evidence.push_back({busy_name_, busy_avg_, th_.starved_sm_active});
    if (io_points > cpu_points) {
      if (has(H::kIowait)) r.evidence.push_back({"iowait", iow, th_.iowait});
      if (has(H::kPsiIo)) r.evidence.push_back({"psi_io", psi_io, th_.psi_io});
      if (has(H::kDiskBusy)) r.evidence.push_back({"disk_busy", disk, th_.disk_busy});
      r.action = "The GPU waits for data while the host waits on storage: cache or pre-shard the dataset on "
                 "local NVMe, read larger sequential files (WebDataset, TFRecord), raise prefetch depth, and "
                 "check the filesystem's throughput.";
    } else {
      if (has(H::kCpuBusy)) r.evidence.push_back({"host_cpu_busy", cpu, th_.cpu_busy});
      if (has(H::kPsiCpu)) r.evidence.push_back({"psi_cpu", psi_cpu, th_.psi_cpu});
      r.action = "The GPU waits for data while the host CPUs are saturated: raise DataLoader num_workers, "
                 "enable pin_memory and prefetching, move decoding and augmentation to the GPU (DALI), or give "
                 "the job more cores. Confirm with py-spy on the loader processes.";
    }
    if (known(percentile(pcie_util_, 0.5))) r.evidence.push_back({"pcie_util", pcie_util_, th_.pcie_quiet});
    return r;
  }

  RuleResult host_transfer() {
    if (!known(percentile(pcie_util_, 0.5))) {
      not_assessed("host_transfer", has(G::kPcieRxBps) || has(G::kPcieTxBps)
                                        ? "no PCIe peak: no link generation/width and an unknown GPU model "
                                          "(set diagnose.pcie_peak_bytes_per_second)"
                                        : "no PCIe throughput (DCGM_FI_PROF_PCIE_RX_BYTES / gpu_pcie_rx_bytes_total)");
      return {};
    }
    RuleResult r = make("host_transfer", "io", Severity::kWarning, th_.pcie_for_ms);
    for (size_t i = 0; i < n_; ++i) {
      if (known(pcie_util_[i])) r.holds[i] = pcie_util_[i] >= th_.pcie_util;
    }
    r.evidence.push_back({"pcie_util", pcie_util_, th_.pcie_util});
    // The same traffic against the link the GPU should have (max gen x max
    // width): under pcie_util there, a degraded link explains it (explain.h).
    const Aligned full = full_link_utilisation();
    if (known(percentile(full, 0.5))) r.evidence.push_back({"pcie_util_full_link", full, th_.pcie_util});
    r.action = "Host-device copies saturate PCIe (peak: " +
               (pcie_peak_ > 0 ? gbps(pcie_peak_) + ", " : std::string()) + pcie_basis_ +
               "): keep data on the GPU between steps, use pinned memory and overlap copies with compute "
               "(non_blocking, CUDA streams), avoid .cpu()/.item() in the loop.";
    return r;
  }

  RuleResult memory_bandwidth() {
    if (!has(G::kDramActive)) {
      not_assessed("memory_bandwidth", "no DRAM activity (DCGM_FI_PROF_DRAM_ACTIVE / gpu_mem_bandwidth_util_ratio)");
      return {};
    }
    RuleResult r = make("memory_bandwidth", "memory", Severity::kWarning, th_.default_for_ms);
    const Aligned dram = A(G::kDramActive), tensor = A(G::kTensorActive);
    for (size_t i = 0; i < n_; ++i) {
      if (!known(dram[i])) continue;
      r.holds[i] = dram[i] >= th_.dram_active && (!known(tensor[i]) || tensor[i] < th_.tensor_idle) &&
                   util_[i] > th_.active_util;
    }
    r.evidence.push_back({"dram_active", dram, th_.dram_active});
    if (has(G::kTensorActive)) r.evidence.push_back({"tensor_active", tensor, th_.tensor_idle});
    r.action = "Kernels are bound by DRAM bandwidth while the tensor cores idle: fuse element-wise ops "
               "(torch.compile), use FlashAttention and bf16/fp16, raise the batch size to raise arithmetic "
               "intensity.";
    return r;
  }

  // Each Ethernet interface against its own speed (HostSignals::links);
  // without per-device data, the busiest NIC against the fastest's speed.
  Aligned nic_util() const {
    if (has(H::kNicUtil)) return A(H::kNicUtil);
    if (!has(H::kNicSpeed)) return Aligned(n_, nan());
    const Aligned speed = A(H::kNicSpeed);
    Aligned u = max_of(A(H::kNicRxBps), A(H::kNicTxBps));
    for (size_t i = 0; i < n_; ++i) u[i] = speed[i] > 0 ? u[i] / speed[i] : nan();
    return u;
  }

  // The link of a kind that was busiest (mean utilisation) while the rule
  // held: "eth2 at 97 % of its 25 Gb/s". Empty without per-device data.
  std::string busiest_link(bool infiniband, const std::vector<int8_t>& holds) const {
    const LinkSignals* best = nullptr;
    double best_mean = -1;
    for (const LinkSignals& l : c_.host.links) {
      if (l.infiniband != infiniband) continue;
      const Aligned u = A(l.util);
      double sum = 0;
      size_t n = 0;
      for (size_t i = 0; i < n_ && i < holds.size(); ++i) {
        if (holds[i] && known(u[i])) { sum += u[i]; ++n; }
      }
      if (n > 0 && sum / static_cast<double>(n) > best_mean) { best_mean = sum / static_cast<double>(n); best = &l; }
    }
    if (best == nullptr) return {};
    char b[160];
    std::snprintf(b, sizeof b, "%s at %.0f %% of its %.0f Gb/s", best->device.c_str(), 100 * best_mean,
                  best->speed * 8 / 1e9);
    return b;
  }

  RuleResult network_fallback() {
    if (!has(H::kIbRxBps) && !has(H::kIbTxBps)) {
      not_assessed("network_fallback", "no InfiniBand/RoCE port counters (node_infiniband_*)");
      return {};
    }
    if (!has(H::kNicRxBps) || !has(H::kNicSpeed)) {
      not_assessed("network_fallback", "no Ethernet NIC throughput and speed (node_network_*)");
      return {};
    }
    RuleResult r = make("network_fallback", "io", Severity::kWarning, th_.default_for_ms);
    const Aligned rx = A(H::kIbRxBps), tx = A(H::kIbTxBps), nic = nic_util();
    Aligned ib(n_, nan());
    for (size_t i = 0; i < n_; ++i) {
      ib[i] = (known(rx[i]) ? rx[i] : 0) + (known(tx[i]) ? tx[i] : 0);
      if (!known(rx[i]) && !known(tx[i])) ib[i] = nan();
      if (!known(ib[i]) || !known(nic[i]) || !known(util_[i])) continue;
      r.holds[i] = ib[i] < th_.ib_idle_bytes_per_second && nic[i] >= th_.nic_util && util_[i] > th_.active_util &&
                   (!known(busy_[i]) || busy_[i] < th_.starved_sm_active);
    }
    r.evidence.push_back({"nic_util", nic, th_.nic_util, busiest_link(false, r.holds)});
    r.evidence.push_back({"ib_bps", ib, th_.ib_idle_bytes_per_second});
    r.evidence.push_back({busy_name_, busy_, th_.starved_sm_active});
    r.action = "Multi-node traffic runs over the Ethernet NIC at line rate while the InfiniBand ports idle: NCCL "
               "fell back to TCP sockets. Run with NCCL_DEBUG=INFO and look for NET/Socket; check "
               "NCCL_IB_DISABLE, NCCL_IB_HCA, NCCL_SOCKET_IFNAME and that the IB devices are visible in the "
               "container.";
    return r;
  }

  RuleResult communication() {
    Aligned nv(n_, nan());
    if (has(G::kNvlinkUtil)) {
      nv = A(G::kNvlinkUtil);
    } else if (has(G::kNvlinkRxBps) || has(G::kNvlinkTxBps)) {
      double peak = th_.nvlink_peak_bytes_per_second;
      if (!(peak > 0)) peak = nvlink_model_bytes_per_second(c_.gpu.model);
      nv = max_of(ratio(A(G::kNvlinkRxBps), peak), ratio(A(G::kNvlinkTxBps), peak));
    }
    const Aligned nic = nic_util();
    const Aligned ib = has(H::kIbUtil) ? A(H::kIbUtil) : Aligned(n_, nan());
    const bool nv_known = known(percentile(nv, 0.5));
    const bool nic_known = known(percentile(nic, 0.5));
    const bool ib_known = known(percentile(ib, 0.5));
    if (!nv_known && !nic_known && !ib_known) {
      not_assessed("communication", "no NVLink throughput with a known peak and no network throughput");
      return {};
    }
    RuleResult r = make("communication", "io", Severity::kWarning, th_.default_for_ms);
    for (size_t i = 0; i < n_; ++i) {
      if (!known(util_[i]) || !known(busy_[i])) continue;
      const bool link_busy = nv[i] >= th_.nvlink_util || nic[i] >= th_.nvlink_util || ib[i] >= th_.nvlink_util;
      r.holds[i] = util_[i] >= th_.busy_util && busy_[i] < th_.starved_sm_active && link_busy;
    }
    r.evidence.push_back({"gpu_util", util_, th_.busy_util});
    r.evidence.push_back({busy_name_, busy_, th_.starved_sm_active});
    if (nv_known) r.evidence.push_back({"nvlink_util", nv, th_.nvlink_util});
    if (nic_known) r.evidence.push_back({"nic_util", nic, th_.nvlink_util, busiest_link(false, r.holds)});
    if (ib_known) r.evidence.push_back({"ib_util", ib, th_.nvlink_util, busiest_link(true, r.holds)});
    r.action = "Collective communication dominates: the GPU looks busy while its SMs wait in NCCL. Overlap "
               "communication with compute (DDP buckets, FSDP prefetch), accumulate gradients, check the "
               "topology with nvidia-smi topo -m, confirm with NCCL_DEBUG=INFO or Nsight Systems.";
    return r;
  }

  // A serving latency judged against its own bound: the SLO, else the
  // degraded factor times its window's 10th percentile.
  struct Latency {
    EvidenceName name;
    Aligned values;
    double limit = 0;
    std::string who;  // "engine vllm at ... (model)"; "" the host's
  };
  // The latencies the GPU's occupancy is judged against: those of the
  // engines joined to it (their p99, else their mean; an engine whose
  // values cannot be meant is not read), each only while its page answers.
  // The host's latency only where no engine of the host gives one (series
  // without an engine, as older recordings have): another GPU's engine is
  // never this GPU's latency. Empty: none; no_latency_ says why.
  std::vector<Latency> latencies() {
    std::vector<Latency> out;
    auto add = [&](EvidenceName name, Aligned values, std::string who) {
      if (!known(percentile(values, 0.5))) return;
      double limit = th_.latency_p99_slo_seconds;
      if (!(limit > 0)) limit = th_.latency_degraded_factor * percentile(values, 0.1);
      out.push_back({name, std::move(values), limit, std::move(who)});
    };
    bool engines_have_latency = false;
    for (const EngineSignals& e : c_.host.engines) {
      const bool p99 = !e.sig(H::kLatencyP99).empty();
      if (!p99 && e.sig(H::kLatencyMean).empty()) continue;
      engines_have_latency = true;
      if (!e.invalid.empty() || std::find(e.gpus.begin(), e.gpus.end(), c_.gpu.index) == e.gpus.end()) continue;
      add(p99 ? EvidenceName("latency_p99") : EvidenceName("latency_mean"),
          engine_aligned(c_, e.sig(p99 ? H::kLatencyP99 : H::kLatencyMean)),
          e.kind == "engine" && e.endpoint.empty() ? "" : "engine " + e.describe());  // a node-wide series: no name
    }
    if (engines_have_latency) {
      no_latency_ = "no serving latency from an engine on this GPU (an engine's latency judges only its own GPUs)";
    } else {
      const bool p99 = has(H::kLatencyP99);
      add(p99 ? EvidenceName("latency_p99") : EvidenceName("latency_mean"), A(p99 ? H::kLatencyP99 : H::kLatencyMean),
          "");
      no_latency_ = "no serving latency (vLLM, Triton or gpulens serving histogram)";
    }
    return out;
  }

  std::pair<RuleResult, RuleResult> occupancy() {
    if (!has(G::kSmOccupancy)) {
      not_assessed("kernel_launch", "no SM occupancy (DCGM_FI_PROF_SM_OCCUPANCY is off in dcgm-exporter's defaults)");
      not_assessed("small_batch", "no SM occupancy");
      return {};
    }
    const Aligned occ = A(G::kSmOccupancy);
    // "Low occupancy is a problem only with high p99": the p99 of the
    // engines on this GPU, each against its own baseline (docs/serving.md).
    const std::vector<Latency> lats = latencies();
    Aligned degraded(n_, nan());
    for (const Latency& l : lats) {
      for (size_t i = 0; i < n_; ++i) {
        if (!known(l.values[i])) continue;
        const bool bad = l.values[i] > l.limit;
        if (bad || !known(degraded[i])) degraded[i] = bad ? 1 : 0;
      }
    }
    RuleResult launch;
    if (lats.empty()) {
      not_assessed("kernel_launch", no_latency_ + ": low occupancy is reported as small_batch");
    } else {
      launch = make("kernel_launch", "compute", Severity::kWarning, th_.occupancy_for_ms);
      for (size_t i = 0; i < n_; ++i) {
        if (!known(occ[i]) || !known(util_[i]) || !known(degraded[i])) continue;
        launch.holds[i] = util_[i] >= th_.busy_util && occ[i] < th_.sm_occupancy && degraded[i] == 1;
      }
      launch.evidence.push_back({"gpu_util", util_, th_.busy_util});
      launch.evidence.push_back({"sm_occupancy", occ, th_.sm_occupancy});
      for (const Latency& l : lats) launch.evidence.push_back({l.name, l.values, l.limit, l.who});
      launch.action = "Many small kernels: occupancy is low while latency degraded. Batch requests (continuous "
                      "batching, a larger max batch), capture CUDA Graphs or use torch.compile to cut launch "
                      "overhead, fuse kernels; profile with Nsight Systems.";
    }
    RuleResult small = make("small_batch", "compute", Severity::kInfo, th_.occupancy_for_ms);
    for (size_t i = 0; i < n_; ++i) {
      if (!known(occ[i]) || !known(util_[i])) continue;
      small.holds[i] = util_[i] > th_.active_util && occ[i] < th_.sm_occupancy && degraded[i] != 1;
    }
    small.evidence.push_back({"sm_occupancy", occ, th_.sm_occupancy});
    for (const Latency& l : lats) small.evidence.push_back({l.name, l.values, l.limit, l.who});
    small.action = "Low SM occupancy with healthy latency: the GPU has headroom. Larger batches or more "
                   "concurrent work (MPS, MIG, more replicas per GPU) would raise throughput. Not an alarm.";
    return {std::move(launch), std::move(small)};
  }

  Aligned clock_cut() const {
    Aligned cut(n_, nan());
    if (!has(G::kSmClock) || !has(G::kSmClockMax)) return cut;
    const Aligned clk = A(G::kSmClock), max = A(G::kSmClockMax);
    for (size_t i = 0; i < n_; ++i) {
      if (known(clk[i]) && max[i] > 0) cut[i] = clk[i] / max[i];
    }
    return cut;
  }

  RuleResult thermal_throttle() {
    if (!has(G::kThermalThrottle) && !has(G::kTemperature)) {
      not_assessed("thermal_throttle", "no clock-event reasons and no temperature");
      return {};
    }
    RuleResult r = make("thermal_throttle", "health", Severity::kWarning, th_.thermal_for_ms);
    const Aligned flag = A(G::kThermalThrottle), temp = A(G::kTemperature), clk = clock_cut();
    for (size_t i = 0; i < n_; ++i) {
      const bool cut = !known(clk[i]) || clk[i] < th_.clock_cut;
      if (known(flag[i])) {
        r.holds[i] = flag[i] >= 1 && cut;
      } else if (known(temp[i])) {
        r.holds[i] = temp[i] > th_.temperature_celsius && cut && known(clk[i]);
      }
    }
    if (has(G::kThermalThrottle)) r.evidence.push_back({"thermal_throttle", flag, 1});
    if (has(G::kTemperature)) r.evidence.push_back({"temperature", temp, th_.temperature_celsius});
    if (known(percentile(clk, 0.5))) r.evidence.push_back({"sm_clock_ratio", clk, th_.clock_cut});
    r.action = "Clocks are cut by temperature on this GPU: check airflow, fans and inlet temperature of its slot, "
               "compare with its neighbours, and service it if it alone runs hot.";
    return r;
  }

  RuleResult power_cap() {
    if (!has(G::kPowerThrottle) && !(has(G::kPower) && has(G::kPowerLimit))) {
      not_assessed("power_cap", "no clock-event reasons and no power limit");
      return {};
    }
    RuleResult r = make("power_cap", "health", Severity::kWarning, th_.default_for_ms);
    const Aligned flag = A(G::kPowerThrottle), power = A(G::kPower), limit = A(G::kPowerLimit), clk = clock_cut();
    Aligned load(n_, nan());
    for (size_t i = 0; i < n_; ++i) {
      if (known(power[i]) && limit[i] > 0) load[i] = power[i] / limit[i];
      const bool cut = !known(clk[i]) || clk[i] < th_.clock_cut;
      const bool at_limit = !known(load[i]) || load[i] >= th_.power_at_limit;
      if (known(flag[i])) {
        r.holds[i] = flag[i] >= 1 && at_limit && cut;
      } else if (known(load[i])) {
        r.holds[i] = load[i] >= th_.power_at_limit && known(clk[i]) && cut;
      }
    }
    if (has(G::kPowerThrottle)) r.evidence.push_back({"power_throttle", flag, 1});
    if (known(percentile(load, 0.5))) r.evidence.push_back({"power_over_limit", load, th_.power_at_limit});
    if (known(percentile(clk, 0.5))) r.evidence.push_back({"sm_clock_ratio", clk, th_.clock_cut});
    r.action = "Clocks are cut by the power limit: check for a lowered limit (nvidia-smi -q -d POWER, "
               "nvidia-smi -pl), rack or PSU power capping; at full load on some parts this is by design.";
    return r;
  }

  RuleResult pcie_link_degraded() {
    const bool gen_base = has(G::kLinkGenMax) || has(G::kLinkGenCalibrated);
    const bool width_base = has(G::kLinkWidthMax) || has(G::kLinkWidthCalibrated);
    if (!(has(G::kLinkGen) && gen_base) && !(has(G::kLinkWidth) && width_base)) {
      not_assessed("pcie_link_degraded", "no current and maximum (or calibrated) PCIe link generation/width");
      return {};
    }
    RuleResult r = make("pcie_link_degraded", "io", Severity::kWarning, th_.link_degraded_for_ms);
    const Aligned gen = A(G::kLinkGen), gmax = A(G::kLinkGenMax), w = A(G::kLinkWidth), wmax = A(G::kLinkWidthMax);
    // The link recorded by `gpulens calibrate` is a baseline too: a link that
    // trained lower than when its peak was measured lost bandwidth.
    const bool have_cal = has(G::kLinkGenCalibrated) || has(G::kLinkWidthCalibrated);
    const Aligned gcal = have_cal ? A(G::kLinkGenCalibrated) : Aligned{},
                  wcal = have_cal ? A(G::kLinkWidthCalibrated) : Aligned{};
    auto at = [](const Aligned& a, size_t i) { return i < a.size() ? a[i] : std::nan(""); };
    for (size_t i = 0; i < n_; ++i) {
      // The one definition (diagnose/pcie_link.h), shared with the alert.
      const PcieLinkState s{.gen = at(gen, i), .gen_max = at(gmax, i), .gen_calibrated = at(gcal, i),
                            .width = at(w, i), .width_max = at(wmax, i), .width_calibrated = at(wcal, i),
                            .util = util_[i], .pcie = pcie_util_[i]};
      if (!pcie_link_assessable(s)) continue;
      r.holds[i] = diagnose::pcie_link_degraded(s, th_);
    }
    if (has(G::kLinkGen)) r.evidence.push_back({"link_gen", gen, percentile(gmax, 0.5)});
    if (has(G::kLinkWidth)) r.evidence.push_back({"link_width", w, percentile(wmax, 0.5)});
    if (has(G::kLinkGenCalibrated)) r.evidence.push_back({"link_gen_calibrated", gcal, percentile(gcal, 0.5)});
    if (has(G::kLinkWidthCalibrated)) r.evidence.push_back({"link_width_calibrated", wcal, percentile(wcal, 0.5)});
    r.evidence.push_back({"gpu_util", util_, th_.link_busy_util});
    if (known(percentile(pcie_util_, 0.5))) r.evidence.push_back({"pcie_util", pcie_util_, th_.link_busy_pcie});
    r.action = "The PCIe link runs below its maximum generation or width under load: reseat the GPU or riser, "
               "check BIOS PCIe settings and the slot (nvidia-smi -q: current vs max link, or vs the link "
               "recorded by gpulens calibrate).";
    return r;
  }

  // The process whose `sig` was highest at the last point the rule held
  // (or at the end when it never held): "pid 4242 (ml/trainer-0)"; "" when
  // the series carried no pid.
  std::string process_of(G sig, const std::vector<int8_t>& holds) const {
    size_t at = n_;
    for (size_t i = 0; i < n_; ++i) {
      if (holds[i] == 1) at = i;
    }
    std::string best;
    double best_v = -1;
    for (const auto& [key, series] : c_.gpu.by_process) {
      if (key.first != sig) continue;
      const Aligned v = A(series);
      double x = nan();
      if (at < n_) {
        x = v[at];
      } else {
        for (size_t i = n_; i-- > 0;) {
          if (known(v[i])) { x = v[i]; break; }
        }
      }
      if (known(x) && x > best_v) {
        best_v = x;
        best = key.second;
      }
    }
    return best;
  }

  RuleResult memory_fragmentation() {
    const bool external = has(G::kExternalFragmentation);
    if (!external && !has(G::kFragmentation)) {
      not_assessed("memory_fragmentation", "no in-process allocator data (gpu_allocator_external_fragmentation_ratio "
                                           "or gpu_memory_fragmentation_ratio, pushed by the PyTorch client)");
      return {};
    }
    RuleResult r = make("memory_fragmentation", "memory", Severity::kWarning, th_.fragmentation_for_ms);
    // The real measure is external fragmentation from the allocator's
    // snapshot (free bytes in pieces: what makes a large allocation fail);
    // 1 - allocated/reserved (slack) counts whole free segments too, so it
    // is judged only when no snapshot measure was pushed.
    const G judged = external ? G::kExternalFragmentation : G::kFragmentation;
    const Aligned f = A(judged);
    for (size_t i = 0; i < n_; ++i) {
      if (known(f[i])) r.holds[i] = f[i] >= th_.fragmentation;
    }
    const std::string who = process_of(judged, r.holds);
    const std::string of = who.empty() ? "" : "; process " + who;
    if (external) {
      r.evidence.push_back({"external_fragmentation", f, th_.fragmentation,
                            "judged: 1 - largest free block / free bytes inside reserved segments (allocator "
                            "snapshot, worst non-small pool)" + of});
      if (has(G::kFragmentation)) {
        r.evidence.push_back({"fragmentation", A(G::kFragmentation), th_.fragmentation,
                              "context, not judged: slack, 1 - allocated/reserved"});
      }
    } else {
      r.evidence.push_back({"fragmentation", f, th_.fragmentation,
                            "judged: slack, 1 - allocated/reserved (no allocator snapshot pushed; slack also "
                            "counts whole free segments, so it overstates fragmentation)" + of});
    }
    r.action = "The caching allocator is fragmented (free memory in pieces" + (who.empty() ? "" : " in " + who) +
               "): set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, avoid varying tensor shapes (pad or "
               "bucket sequence lengths), release caches only between phases.";
    return r;
  }

  RuleResult memory_pressure() {
    const bool fb = has(G::kFbUsed) && has(G::kFbFree);
    const bool retries = has(G::kAllocRetryRate), ooms = has(G::kAllocOomRate);
    if (!fb && !retries && !ooms) {
      not_assessed("memory_pressure", "no framebuffer used/free and no allocator retries/OOMs");
      return {};
    }
    RuleResult r = make("memory_pressure", "memory", Severity::kWarning, th_.default_for_ms);
    const Aligned used = A(G::kFbUsed), free = A(G::kFbFree);
    const Aligned retry = A(G::kAllocRetryRate), oom = A(G::kAllocOomRate);
    Aligned frac(n_, nan());
    for (size_t i = 0; i < n_; ++i) {
      if (known(used[i]) && known(free[i]) && used[i] + free[i] > 0) frac[i] = used[i] / (used[i] + free[i]);
      // Full framebuffer, or the allocator flushing its cache to retry
      // (each retry synchronises every stream), or OOMs raised.
      const bool full = known(frac[i]) && frac[i] >= th_.memory_used;
      const bool retrying = retries && known(retry[i]) && retry[i] > 0;
      const bool failing = ooms && known(oom[i]) && oom[i] > 0;
      if (full || retrying || failing) r.holds[i] = 1;
      else if (known(frac[i]) || (retries && known(retry[i])) || (ooms && known(oom[i]))) r.holds[i] = 0;
    }
    if (fb) r.evidence.push_back({"fb_used_ratio", frac, th_.memory_used});
    std::string who;
    if (retries) {
      who = process_of(G::kAllocRetryRate, r.holds);
      r.evidence.push_back({"allocator_retries_per_second", retry, 0,
                            who.empty() ? "" : "process " + who});
    }
    if (ooms) {
      const std::string w = process_of(G::kAllocOomRate, r.holds);
      if (who.empty()) who = w;
      r.evidence.push_back({"allocator_ooms_per_second", oom, 0, w.empty() ? "" : "process " + w});
    }
    r.action = "Device memory is nearly full and an OOM is close" + (who.empty() ? "" : " (" + who + ")") +
               ": reduce batch or sequence length, enable activation checkpointing, offload or shard optimizer "
               "state (FSDP, ZeRO).";
    return r;
  }

  RuleResult idle() {
    RuleResult r = make("idle", "compute", Severity::kWarning, th_.low_util_for_ms);
    const Aligned used = A(G::kFbUsed);
    for (size_t i = 0; i < n_; ++i) {
      if (!known(util_avg_[i])) continue;
      r.holds[i] = util_avg_[i] <= th_.idle_util && (!known(used[i]) || used[i] >= th_.idle_memory_bytes);
    }
    r.evidence.push_back({"gpu_util", util_avg_, th_.idle_util});
    if (has(G::kFbUsed)) r.evidence.push_back({"fb_used", used, th_.idle_memory_bytes});
    r.action = "The GPU holds memory but runs nothing: the job that allocated it is stuck or waiting (dead "
               "worker, debugger, notebook). Reclaim the GPU or fix the job.";
    return r;
  }

  const GpuContext& c_;
  const Thresholds& th_;
  std::vector<NotAssessed>& na_;
  [[maybe_unused]] std::vector<std::string>& notes_;
  size_t n_;
  Aligned util_, busy_, pcie_util_, util_avg_, busy_avg_;
  EvidenceName busy_name_ = "gpu_util";
  std::string pcie_basis_;
  std::string no_latency_;  // why latencies() found none
  double pcie_peak_ = 0;
};

}  // namespace

const Series& GpuContext::busy_series() const {
  if (!gpu.sig(GpuSig::kSmActive).empty()) return gpu.sig(GpuSig::kSmActive);
  if (!gpu.sig(GpuSig::kGrActive).empty()) return gpu.sig(GpuSig::kGrActive);
  return gpu.sig(GpuSig::kGpuUtil);
}

std::vector<RuleResult> evaluate_rules(const GpuContext& ctx, std::vector<NotAssessed>& not_assessed,
                                       std::vector<std::string>& notes) {
  return Rules(ctx, not_assessed, notes).run();
}

int64_t first_fatal_fault_ms(const GpuSignals& gpu) {
  int64_t first = INT64_MAX;
  auto scan = [&](GpuSig s, auto pred) {
    for (const Point& p : gpu.sig(s)) {
      if (pred(p.v)) { first = std::min(first, p.t_ms); break; }
    }
  };
  scan(GpuSig::kLastXid, [](double v) { return fatal_xid(std::round(v)); });
  scan(GpuSig::kGpuUp, [](double v) { return v == 0; });
  scan(GpuSig::kRowRemapFailure, [](double v) { return v >= 1; });
  scan(GpuSig::kEccUncorrectedRate, [](double v) { return v > 0; });
  scan(GpuSig::kHealthStatus, [](double v) { return v >= kHealthFail; });
  scan(GpuSig::kRecoveryAction, [](double v) { return v >= 1 && v != 3; });
  return first;
}

}  // namespace gpulens::diagnose
