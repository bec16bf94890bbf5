// YAML overrides for Thresholds: one table of key -> member.
#include "diagnose/thresholds.h"

#include <yaml-cpp/yaml.h>


#include "util/duration.h"

namespace gpulens::diagnose {
namespace {

const ThresholdKey kKeys[] = {
    {"idle_util", ThresholdKind::kRatio, &Thresholds::idle_util, "GPU util (2-minute mean) at or below this: nothing runs"},
    {"active_util", ThresholdKind::kRatio, &Thresholds::active_util, "GPU util above this: a job is running"},
    {"busy_util", ThresholdKind::kRatio, &Thresholds::busy_util, "GPU util above this is \"high\""},
    {"low_util", ThresholdKind::kRatio, &Thresholds::low_util, "GPU util below this for low_util_for (tutorial: 20 %)"},
    {"starved_sm_active", ThresholdKind::kRatio, &Thresholds::starved_sm_active, "SM active below this: the SMs wait"},
    {"idle_memory_bytes", ThresholdKind::kNumber, &Thresholds::idle_memory_bytes, "memory held by an idle GPU's job, in bytes"},
    {"cpu_busy", ThresholdKind::kRatio, &Thresholds::cpu_busy, "host CPU busy above this: CPU-bound input pipeline"},
    {"psi_cpu", ThresholdKind::kRatio, &Thresholds::psi_cpu, "CPU pressure (PSI some) above this"},
    {"iowait", ThresholdKind::kRatio, &Thresholds::iowait, "iowait above this"},
    {"psi_io", ThresholdKind::kRatio, &Thresholds::psi_io, "IO pressure (PSI some) above this"},
    {"disk_busy", ThresholdKind::kRatio, &Thresholds::disk_busy, "disk busy time above this"},
    {"pcie_quiet", ThresholdKind::kRatio, &Thresholds::pcie_quiet, "PCIe below this: not transfer-bound"},
    {"pcie_util", ThresholdKind::kRatio, &Thresholds::pcie_util, "PCIe TX or RX above this of the measured (or nominal) peak"},
    {"pcie_peak_bytes_per_second", ThresholdKind::kNumber, &Thresholds::pcie_peak_bytes_per_second, "PCIe peak per direction; 0: from the data (calibrated, link, model)"},
    {"nvlink_util", ThresholdKind::kRatio, &Thresholds::nvlink_util, "NVLink above this of its peak"},
    {"nvlink_peak_bytes_per_second", ThresholdKind::kNumber, &Thresholds::nvlink_peak_bytes_per_second, "NVLink peak per direction; 0: from the GPU model"},
    {"nic_util", ThresholdKind::kRatio, &Thresholds::nic_util, "Ethernet NIC above this of its line rate"},
    {"ib_idle_bytes_per_second", ThresholdKind::kNumber, &Thresholds::ib_idle_bytes_per_second, "InfiniBand below this many bytes/s is idle"},
    {"link_busy_util", ThresholdKind::kRatio, &Thresholds::link_busy_util, "GPU util at or above this: a down-shifted link matters"},
    {"link_busy_pcie", ThresholdKind::kRatio, &Thresholds::link_busy_pcie, "PCIe TX or RX at or above this of the peak: a down-shifted link matters"},
    {"dram_active", ThresholdKind::kRatio, &Thresholds::dram_active, "DRAM active above this: bandwidth-bound"},
    {"tensor_idle", ThresholdKind::kRatio, &Thresholds::tensor_idle, "tensor pipes below this: idle"},
    {"fragmentation", ThresholdKind::kRatio, &Thresholds::fragmentation, "allocator fragmentation above this (article: 50 %)"},
    {"memory_used", ThresholdKind::kRatio, &Thresholds::memory_used, "framebuffer used above this: memory pressure"},
    {"sm_occupancy", ThresholdKind::kRatio, &Thresholds::sm_occupancy, "SM occupancy below this (article: 30 %), with degraded latency"},
    {"latency_degraded_factor", ThresholdKind::kNumber, &Thresholds::latency_degraded_factor, "p99 latency above this times its window baseline is degraded"},
    {"latency_p99_slo_seconds", ThresholdKind::kNumber, &Thresholds::latency_p99_slo_seconds, "> 0: an absolute p99 objective instead, in seconds"},
    {"temperature_celsius", ThresholdKind::kNumber, &Thresholds::temperature_celsius, "GPU temperature above this, in degrees Celsius"},
    {"clock_cut", ThresholdKind::kRatio, &Thresholds::clock_cut, "SM clock below this times max: clocks are cut"},
    {"power_at_limit", ThresholdKind::kRatio, &Thresholds::power_at_limit, "power above this times the limit: at the cap"},
    {"low_util_for", ThresholdKind::kDuration, &Thresholds::low_util_for_ms, "how long low utilisation must hold"},
    {"occupancy_for", ThresholdKind::kDuration, &Thresholds::occupancy_for_ms, "how long low occupancy must hold"},
    {"fragmentation_for", ThresholdKind::kDuration, &Thresholds::fragmentation_for_ms, "how long fragmentation must hold"},
    {"thermal_for", ThresholdKind::kDuration, &Thresholds::thermal_for_ms, "how long thermal conditions must hold"},
    {"pcie_for", ThresholdKind::kDuration, &Thresholds::pcie_for_ms, "how long PCIe saturation must hold"},
    {"link_degraded_for", ThresholdKind::kDuration, &Thresholds::link_degraded_for_ms, "how long a PCIe link must be below its baseline while in use"},
    {"topology_for", ThresholdKind::kDuration, &Thresholds::topology_for_ms, "how long a misplaced job must run"},
    {"default_for", ThresholdKind::kDuration, &Thresholds::default_for_ms, "how long any other condition must hold"},
};

}  // namespace

std::span<const ThresholdKey> threshold_keys() { return kKeys; }

Status apply_thresholds(const YAML::Node& section, Thresholds& t) {
  if (!section || section.IsNull()) return Status::ok();
  if (!section.IsMap()) return invalid_argument("diagnose: expected a map of thresholds");
  for (const auto& kv : section) {
    const std::string key = kv.first.as<std::string>();
    const ThresholdKey* k = nullptr;
    for (const ThresholdKey& c : kKeys) {
      if (key == c.name) k = &c;
    }
    if (k == nullptr) return invalid_argument("diagnose." + key + ": unknown threshold");
    const std::string text = kv.second.Scalar();
    if (auto* d = std::get_if<double Thresholds::*>(&k->member)) {
      try {
        size_t used = 0;
        const double v = std::stod(text, &used);
        if (used != text.size() || v < 0) throw std::invalid_argument(text);
        if (k->kind == ThresholdKind::kRatio && v > 1) {
          return invalid_argument("diagnose." + key + ": " + text + " is not a ratio in 0..1 (write 0.8 for 80 %)");
        }
        t.**d = v;
      } catch (const std::exception&) {
        return invalid_argument("diagnose." + key + ": expected a non-negative number, got \"" + text + "\"");
      }
    } else {
      Result<int64_t> ms = parse_duration_ms(text);
      if (!ms) return invalid_argument("diagnose." + key + ": " + ms.status().message());
      t.*std::get<int64_t Thresholds::*>(k->member) = *ms;
    }
  }
  return Status::ok();
}

Result<Thresholds> load_thresholds(const std::string& config_path) {
  Thresholds t;
  try {
    YAML::Node root = YAML::LoadFile(config_path);
    if (Status s = apply_thresholds(root["diagnose"], t); !s) return Status(s.code(), config_path + ": " + s.message());
  } catch (const YAML::Exception& e) {
    return invalid_argument(config_path + ": " + e.what());
  }
  return t;
}

}  // namespace gpulens::diagnose
