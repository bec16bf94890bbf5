// The series behind each evidence signal's name, over the window, bounded.
#include "diagnose/evidence_series.h"

#include <algorithm>
#include <cmath>

#include "model/pcie.h"

namespace gpulens::diagnose {
namespace {

// a op b on equal timestamps.
template <typename Op>
Series pair_points(const Series& a, const Series& b, Op op) {
  Series out;
  size_t j = 0;
  for (const auto& p : a) {
    while (j < b.size() && b[j].t_ms < p.t_ms) ++j;
    if (j < b.size() && b[j].t_ms == p.t_ms) {
      const double v = op(p.v, b[j].v);
      if (std::isfinite(v)) out.push_back({p.t_ms, v});
    }
  }
  return out;
}

// The series behind an evidence signal's name (the names rules.cpp gives).
Series judged_series(std::string_view name, const HostSignals& h, const GpuSignals& g) {
  auto sig = [&](GpuSig s) { return g.sig(s); };
  auto host = [&](HostSig s) { return h.sig(s); };
  auto ratio = [](double a, double b) { return b > 0 ? a / b : NAN; };
  auto maxv = [](double a, double b) { return std::max(a, b); };
  if (name == "temperature") return sig(GpuSig::kTemperature);
  if (name == "sm_clock_ratio") return pair_points(sig(GpuSig::kSmClock), sig(GpuSig::kSmClockMax), ratio);
  if (name == "power_over_limit") return pair_points(sig(GpuSig::kPower), sig(GpuSig::kPowerLimit), ratio);
  if (name == "pcie_util") {
    if (!g.sig(GpuSig::kPcieRxUtil).empty()) return pair_points(sig(GpuSig::kPcieRxUtil), sig(GpuSig::kPcieTxUtil), maxv);
    const Series bps = pair_points(sig(GpuSig::kPcieRxBps), sig(GpuSig::kPcieTxBps), maxv);
    return pair_points(bps, sig(GpuSig::kPciePeak), ratio);
  }
  if (name == "pcie_util_full_link") {
    // The traffic over the nominal peak of the link at its maximum generation
    // and width (as rules.cpp judges it), not over the measured peak.
    Series full = pair_points(sig(GpuSig::kLinkGenMax), sig(GpuSig::kLinkWidthMax), [](double gen, double width) {
      return pcie_link_bytes_per_second(static_cast<int>(gen), static_cast<int>(width));
    });
    std::erase_if(full, [](const Point& p) { return !(p.v > 0); });
    if (!g.sig(GpuSig::kPcieRxBps).empty() || !g.sig(GpuSig::kPcieTxBps).empty()) {
      return pair_points(pair_points(sig(GpuSig::kPcieRxBps), sig(GpuSig::kPcieTxBps), maxv), full, ratio);
    }
    // Only the agent's utilisation: back to bytes through the current link.
    const Series now = pair_points(sig(GpuSig::kLinkGen), sig(GpuSig::kLinkWidth), [](double gen, double width) {
      return pcie_link_bytes_per_second(static_cast<int>(gen), static_cast<int>(width));
    });
    const Series util = pair_points(sig(GpuSig::kPcieRxUtil), sig(GpuSig::kPcieTxUtil), maxv);
    return pair_points(pair_points(util, now, [](double u, double b) { return u * b; }), full, ratio);
  }
  if (name == "dram_active") return sig(GpuSig::kDramActive);
  if (name == "tensor_active") return sig(GpuSig::kTensorActive);
  // The rules' utilisation: GPU util, else graphics engine active.
  if (name == "gpu_util") return sig(g.sig(GpuSig::kGpuUtil).empty() ? GpuSig::kGrActive : GpuSig::kGpuUtil);
  if (name == "sm_active") return sig(GpuSig::kSmActive);
  if (name == "gr_engine_active") return sig(GpuSig::kGrActive);
  if (name == "sm_occupancy") return sig(GpuSig::kSmOccupancy);
  if (name == "nvlink_util") return sig(GpuSig::kNvlinkUtil);
  if (name == "fragmentation") return sig(GpuSig::kFragmentation);
  if (name == "external_fragmentation") return sig(GpuSig::kExternalFragmentation);
  if (name == "fb_used") return sig(GpuSig::kFbUsed);
  if (name == "fb_used_ratio") {
    return pair_points(sig(GpuSig::kFbUsed), sig(GpuSig::kFbFree), [](double u, double f) { return u + f > 0 ? u / (u + f) : NAN; });
  }
  if (name == "gpu_up") return sig(GpuSig::kGpuUp);
  if (name == "thermal_throttle") return sig(GpuSig::kThermalThrottle);
  if (name == "power_throttle") return sig(GpuSig::kPowerThrottle);
  if (name == "link_gen") return sig(GpuSig::kLinkGen);
  if (name == "link_width") return sig(GpuSig::kLinkWidth);
  // Judged: the current link against the one recorded by `gpulens calibrate`
  // (the evidence's threshold), so the chart is the current link.
  if (name == "link_gen_calibrated") return sig(GpuSig::kLinkGen);
  if (name == "link_width_calibrated") return sig(GpuSig::kLinkWidth);
  if (name == "gpu_numa_node") return sig(GpuSig::kNumaNode);  // against the node the process may run on
  if (name == "last_xid") return sig(GpuSig::kLastXid);
  if (name == "ecc_uncorrected_rate") return sig(GpuSig::kEccUncorrectedRate);
  if (name == "row_remap_failure") return sig(GpuSig::kRowRemapFailure);
  if (name == "health_status") return sig(GpuSig::kHealthStatus);  // worst DCGM health watch
  if (name == "allocator_retries_per_second") return sig(GpuSig::kAllocRetryRate);
  if (name == "allocator_ooms_per_second") return sig(GpuSig::kAllocOomRate);
  if (name == "host_cpu_busy") return host(HostSig::kCpuBusy);
  if (name == "iowait") return host(HostSig::kIowait);
  if (name == "psi_cpu") return host(HostSig::kPsiCpu);
  if (name == "psi_io") return host(HostSig::kPsiIo);
  if (name == "disk_busy") return host(HostSig::kDiskBusy);
  if (name == "nic_util") {
    if (!h.sig(HostSig::kNicUtil).empty()) return host(HostSig::kNicUtil);
    return pair_points(pair_points(host(HostSig::kNicRxBps), host(HostSig::kNicTxBps), maxv), host(HostSig::kNicSpeed), ratio);
  }
  if (name == "ib_util") return host(HostSig::kIbUtil);
  if (name == "latency_p99") return host(HostSig::kLatencyP99);    // seconds, as the SLO
  if (name == "latency_mean") return host(HostSig::kLatencyMean);  // seconds
  if (name == "kv_cache_usage") return host(HostSig::kKvCacheUsage);
  if (name == "preemption_rate") return host(HostSig::kPreemptionRate);
  if (name == "requests_waiting") return host(HostSig::kRequestsWaiting);
  if (name == "requests_running") return host(HostSig::kRequestsRunning);
  if (name == "ttft_p99") return host(HostSig::kTtftP99);  // seconds
  if (name == "requests_waiting_for_capacity") return host(HostSig::kWaitingForCapacity);
  if (name == "prefix_cache_hit_ratio") return host(HostSig::kPrefixCacheHitRatio);
  if (name == "batch_max_tokens") return host(HostSig::kBatchMaxTokens);
  if (name == "ib_bps") return pair_points(host(HostSig::kIbRxBps), host(HostSig::kIbTxBps), [](double a, double b) { return a + b; });
  // gpu_topology_path: the path to a peer GPU is a placement fact, not a
  // series; its evidence detail names it.
  return {};
}

// At most `n` points: means of equal-time buckets.
Series downsample_evidence(const Series& s, size_t n) {
  if (s.size() <= n) return s;
  Series out;
  const int64_t t0 = s.front().t_ms, span = std::max<int64_t>(1, s.back().t_ms - t0 + 1);
  size_t i = 0;
  for (size_t b = 0; b < n && i < s.size(); ++b) {
    const int64_t end = t0 + static_cast<int64_t>((static_cast<double>(b + 1) / static_cast<double>(n)) * static_cast<double>(span));
    double sum = 0;
    size_t k = 0;
    int64_t t = s[i].t_ms;
    for (; i < s.size() && s[i].t_ms < end; ++i, ++k) sum += s[i].v;
    if (k) out.push_back({t, sum / static_cast<double>(k)});
  }
  return out;
}

}  // namespace

Series evidence_series(const SignalSet& set, std::string_view host, std::string_view gpu, std::string_view signal) {
  auto h = std::find_if(set.hosts.begin(), set.hosts.end(), [&](const auto& x) { return x.name == host; });
  if (h == set.hosts.end()) return {};
  auto g = std::find_if(h->gpus.begin(), h->gpus.end(), [&](const auto& x) { return x.index == gpu; });
  if (g == h->gpus.end()) return {};
  Series s = judged_series(signal, *h, *g);
  std::erase_if(s, [&](const Point& p) { return p.t_ms < set.from_ms || p.t_ms > set.to_ms; });
  return downsample_evidence(s, kMaxEvidencePoints);
}

void attach_evidence_series(const SignalSet& set, Report& report) {
  for (HostReport& hr : report.hosts) {
    for (GpuReport& gr : hr.gpus) {
      for (Finding& f : gr.findings) {
        for (Evidence& e : f.evidence) e.series = evidence_series(set, hr.host, gr.gpu, e.signal);
      }
    }
  }
}

}  // namespace gpulens::diagnose
