// YAML overrides for Thresholds: one table of key -> member.
#include "diagnose/thresholds.h"

#include <yaml-cpp/yaml.h>

#include <variant>

#include "util/duration.h"

namespace gpulens::diagnose {
namespace {

using Member = std::variant<double Thresholds::*, int64_t Thresholds::*>;

struct Key {
  const char* name;
  Member member;
};

constexpr Key kKeys[] = {
    {"idle_util", &Thresholds::idle_util},
    {"active_util", &Thresholds::active_util},
    {"busy_util", &Thresholds::busy_util},
    {"low_util", &Thresholds::low_util},
    {"starved_sm_active", &Thresholds::starved_sm_active},
    {"idle_memory_bytes", &Thresholds::idle_memory_bytes},
    {"cpu_busy", &Thresholds::cpu_busy},
    {"psi_cpu", &Thresholds::psi_cpu},
    {"iowait", &Thresholds::iowait},
    {"psi_io", &Thresholds::psi_io},
    {"disk_busy", &Thresholds::disk_busy},
    {"pcie_quiet", &Thresholds::pcie_quiet},
    {"pcie_util", &Thresholds::pcie_util},
    {"pcie_peak_bytes_per_second", &Thresholds::pcie_peak_bytes_per_second},
    {"nvlink_util", &Thresholds::nvlink_util},
    {"nvlink_peak_bytes_per_second", &Thresholds::nvlink_peak_bytes_per_second},
    {"nic_util", &Thresholds::nic_util},
    {"ib_idle_bytes_per_second", &Thresholds::ib_idle_bytes_per_second},
    {"link_busy_util", &Thresholds::link_busy_util},
    {"dram_active", &Thresholds::dram_active},
    {"tensor_idle", &Thresholds::tensor_idle},
    {"fragmentation", &Thresholds::fragmentation},
    {"memory_used", &Thresholds::memory_used},
    {"sm_occupancy", &Thresholds::sm_occupancy},
    {"latency_degraded_factor", &Thresholds::latency_degraded_factor},
    {"latency_p99_slo_seconds", &Thresholds::latency_p99_slo_seconds},
    {"temperature_celsius", &Thresholds::temperature_celsius},
    {"clock_cut", &Thresholds::clock_cut},
    {"power_at_limit", &Thresholds::power_at_limit},
    {"low_util_for", &Thresholds::low_util_for_ms},
    {"occupancy_for", &Thresholds::occupancy_for_ms},
    {"fragmentation_for", &Thresholds::fragmentation_for_ms},
    {"thermal_for", &Thresholds::thermal_for_ms},
    {"pcie_for", &Thresholds::pcie_for_ms},
    {"topology_for", &Thresholds::topology_for_ms},
    {"default_for", &Thresholds::default_for_ms},
};

}  // namespace

Status apply_thresholds(const YAML::Node& section, Thresholds& t) {
  if (!section || section.IsNull()) return Status::ok();
  if (!section.IsMap()) return invalid_argument("diagnose: expected a map of thresholds");
  for (const auto& kv : section) {
    const std::string key = kv.first.as<std::string>();
    const Key* k = nullptr;
    for (const Key& c : kKeys) {
      if (key == c.name) k = &c;
    }
    if (k == nullptr) return invalid_argument("diagnose." + key + ": unknown threshold");
    const std::string text = kv.second.Scalar();
    if (auto* d = std::get_if<double Thresholds::*>(&k->member)) {
      try {
        size_t used = 0;
        const double v = std::stod(text, &used);
        if (used != text.size() || v < 0) throw std::invalid_argument(text);
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
