// Signal names and the series arithmetic shared by every input.
#include "diagnose/signals.h"

#include <algorithm>
#include <charconv>
#include <cstddef>

namespace gpulens::diagnose {

std::string_view signal_name(GpuSig s) {
  static constexpr std::array<std::string_view, kGpuSigCount> kNames{
      "gpu_util",       "sm_active",       "sm_occupancy",  "gr_engine_active", "tensor_active",
      "dram_active",    "fb_used",         "fb_free",       "fragmentation",    "pcie_rx_bps",
      "pcie_tx_bps",    "pcie_rx_util",    "pcie_tx_util",  "pcie_peak_bps",    "link_gen",
      "link_gen_max",   "link_width",      "link_width_max", "link_gen_calibrated", "link_width_calibrated",
      "nvlink_rx_bps",  "nvlink_tx_bps",
      "nvlink_util",    "temperature",     "power",         "power_limit",      "sm_clock",
      "sm_clock_max",   "thermal_throttle", "power_throttle", "xid_rate",       "last_xid",
      "gpu_up",         "ecc_uncorrected_rate", "row_remap_failure", "numa_node",
      "external_fragmentation", "allocator_retry_rate", "allocator_oom_rate", "health_status",
      "recovery_action"};
  return kNames[static_cast<size_t>(s)];
}

std::string_view signal_name(HostSig s) {
  static constexpr std::array<std::string_view, kHostSigCount> kNames{
      "cpu_total",   "cpu_idle",    "cpu_iowait",  "host_cpu_busy",    "iowait",
      "psi_cpu",     "psi_io",      "disk_busy",   "nic_rx_bps",       "nic_tx_bps",
      "nic_speed_bps", "ib_rx_bps", "ib_tx_bps",   "latency_p99",      "latency_mean",
      "requests_running", "requests_waiting", "ib_rate_bps", "nic_util", "ib_util",
      "kv_cache_usage", "preemption_rate", "prompt_tokens_rate", "generation_tokens_rate", "ttft_p99",
      "inter_token_p99", "queue_time_p99", "requests_waiting_for_capacity", "prefix_cache_hit_ratio",
      "batch_max_tokens"};
  return kNames[static_cast<size_t>(s)];
}

Series counter_rate(const Series& counter, int64_t max_gap_ms) {
  Series out;
  if (counter.size() < 2) return out;
  out.reserve(counter.size() - 1);
  for (size_t i = 1; i < counter.size(); ++i) {
    const Point& a = counter[i - 1];
    const Point& b = counter[i];
    const int64_t dt = b.t_ms - a.t_ms;
    if (dt <= 0 || dt > max_gap_ms || b.v < a.v) continue;
    out.push_back({b.t_ms, (b.v - a.v) * 1000.0 / static_cast<double>(dt)});
  }
  return out;
}

Series combine(const std::vector<const Series*>& parts, Combine op) {
  if (parts.empty()) return {};
  if (parts.size() == 1) return *parts[0];
  Series all;
  size_t n = 0;
  for (const Series* p : parts) n += p->size();
  all.reserve(n);
  for (const Series* p : parts) all.insert(all.end(), p->begin(), p->end());
  std::stable_sort(all.begin(), all.end(), [](const Point& a, const Point& b) { return a.t_ms < b.t_ms; });
  Series out;
  out.reserve(all.size() / parts.size() + 1);
  for (const Point& p : all) {
    if (!out.empty() && out.back().t_ms == p.t_ms) {
      out.back().v = op == Combine::kSum ? out.back().v + p.v : std::max(out.back().v, p.v);
    } else {
      out.push_back(p);
    }
  }
  return out;
}

int64_t median_step_ms(const Series& s) {
  if (s.size() < 2) return 0;
  std::vector<int64_t> d;
  d.reserve(s.size() - 1);
  for (size_t i = 1; i < s.size(); ++i) d.push_back(s[i].t_ms - s[i - 1].t_ms);
  std::nth_element(d.begin(), d.begin() + static_cast<ptrdiff_t>(d.size() / 2), d.end());
  return d[d.size() / 2];
}

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> out;
  auto number = [](std::string_view t) -> std::optional<int> {
    int v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size() || v < 0) return std::nullopt;
    return v;
  };
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t dash = item.find('-');
    const auto lo = number(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : number(item.substr(dash + 1));
    if (!lo || !hi || *hi < *lo || out.size() + static_cast<size_t>(*hi - *lo) >= 65536) return std::nullopt;
    for (int v = *lo; v <= *hi; ++v) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string EngineSignals::describe() const {
  std::string out = kind;
  if (!endpoint.empty()) out += " at " + endpoint;
  if (!model.empty()) out += " (" + model + ")";
  if (!pid.empty()) out += " pid " + pid;
  if (!pod.empty()) out += " pod " + pod;
  return out;
}

}  // namespace gpulens::diagnose
