// Every number diagnosis compares against, with the defaults of the design
// notes (the article's and the tutorial's thresholds), and how to override
// them from the `diagnose:` section of the YAML config.
//
//   diagnose:
//     pcie_util: 0.7            # ratio of the link's peak
//     pcie_for: 5m              # durations as "90s", "5m", "1h"
//     pcie_peak_bytes_per_second: 25e9   # measured with `gpulens calibrate`
//
// Ratios are 0..1, durations are how long a condition must hold before it is
// a finding: the whole duration, as a Prometheus alert's `for:` (pending
// before that; a window shorter than the duration says so).
//
// Thread-safety: plain value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>

#include "util/status.h"

namespace YAML { class Node; }

namespace gpulens::diagnose {

struct Thresholds {
  // activity
  double idle_util = 0.05;           // GPU util (2-minute mean) at or below: nothing runs
  double active_util = 0.05;         // GPU util above: a job is running
  double busy_util = 0.80;           // "GPU util high"
  double low_util = 0.20;            // tutorial alert: util < 20 % for 10 min
  double starved_sm_active = 0.50;   // SM active below: the SMs wait
  double idle_memory_bytes = 1073741824.0;  // memory held by an idle GPU's job
  // input pipeline (host)
  double cpu_busy = 0.90;
  double psi_cpu = 0.30;
  double iowait = 0.20;
  double psi_io = 0.30;
  double disk_busy = 0.90;
  double pcie_quiet = 0.30;          // PCIe below this: not transfer-bound
  // io
  double pcie_util = 0.80;           // of the measured (or nominal) peak
  double pcie_peak_bytes_per_second = 0;    // 0: from the data (calibrated, link, model)
  double nvlink_util = 0.60;
  double nvlink_peak_bytes_per_second = 0;  // per direction; 0: from the GPU model
  double nic_util = 0.70;            // Ethernet at line rate
  double ib_idle_bytes_per_second = 10e6;
  double link_busy_util = 0.50;      // GPU util at or above: a down-shifted link matters
  double link_busy_pcie = 0.10;      // PCIe TX or RX at or above this of the peak: the link is in use
  // memory
  double dram_active = 0.70;
  double tensor_idle = 0.20;
  double fragmentation = 0.50;
  double memory_used = 0.95;
  // compute / serving
  double sm_occupancy = 0.30;
  double latency_degraded_factor = 2.0;  // p99 above factor x its window baseline
  double latency_p99_slo_seconds = 0;    // > 0: absolute p99 objective instead
  // health
  double temperature_celsius = 80;
  double clock_cut = 0.90;           // SM clock below this x max: clocks are cut
  double power_at_limit = 0.95;
  // how long a condition must hold
  int64_t low_util_for_ms = 600'000;
  int64_t occupancy_for_ms = 600'000;
  int64_t fragmentation_for_ms = 300'000;
  int64_t thermal_for_ms = 300'000;
  int64_t pcie_for_ms = 180'000;
  int64_t link_degraded_for_ms = 300'000;  // a link below its baseline while in use (diagnose/pcie_link.h)
  int64_t topology_for_ms = 300'000;  // a misplaced job, while it runs
  int64_t default_for_ms = 300'000;
};

// The settable keys of a `diagnose:` section, one row per threshold; the
// config declaration (src/cli/config_keys.cpp) reads this table.
enum class ThresholdKind { kRatio, kNumber, kDuration };
struct ThresholdKey {
  const char* name;  // key under diagnose:, e.g. "pcie_util"
  ThresholdKind kind;
  std::variant<double Thresholds::*, int64_t Thresholds::*> member;  // durations: int64_t ms
  const char* help;
};
std::span<const ThresholdKey> threshold_keys();

// Applies the keys of a `diagnose:` map onto `t`. Unknown keys and bad values
// are errors naming the key.
Status apply_thresholds(const YAML::Node& section, Thresholds& t);

// Loads the `diagnose:` section of a config file (absent section: defaults).
Result<Thresholds> load_thresholds(const std::string& config_path);

}  // namespace gpulens::diagnose
