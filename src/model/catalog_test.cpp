// The catalog follows the naming conventions every consumer relies on.
#include "model/catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <cctype>
#include <set>
#include <string>

namespace gpulens {
namespace {

TEST(Catalog, NamesAreUniqueAndValid) {
  std::set<std::string_view> names;
  // [a-zA-Z_][a-zA-Z0-9_]*: no colons, which are for recording rules.
  auto valid = [](std::string_view n) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char c : n) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    }
    return true;
  };
  for (const auto& f : catalog()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(valid(f.name)) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
  }
}

TEST(Catalog, CountersEndInTotalAndOnlyThey) {
  for (const auto& f : catalog()) {
    EXPECT_EQ(f.type == MetricType::kCounter, f.name.ends_with("_total")) << f.name;
  }
}

TEST(Catalog, InfoFamiliesEndInInfo) {
  for (const auto& f : catalog()) {
    if (f.type == MetricType::kInfo) {
      EXPECT_TRUE(f.name.ends_with("_info")) << f.name;
    }
  }
}

TEST(Catalog, UnitsAreSuffixes) {
  for (const auto& f : catalog()) {
    if (f.unit.empty() || !f.native) continue;
    std::string_view base = f.name;
    if (base.ends_with("_total")) base.remove_suffix(6);
    EXPECT_NE(base.find(f.unit), std::string_view::npos) << f.name << " unit " << f.unit;
  }
}

TEST(Catalog, ArticleNamesPresent) {
  for (auto n : {"gpu_sm_occupancy_ratio", "gpu_tensor_core_util_ratio", "gpu_mem_bandwidth_util_ratio",
                 "gpu_memory_fragmentation_ratio", "gpu_pcie_tx_bandwidth_util_ratio",
                 "gpu_pcie_rx_bandwidth_util_ratio"}) {
    auto id = find_field(n);
    ASSERT_TRUE(id.has_value()) << n;
    EXPECT_EQ(field(*id).scope, Scope::kGpu);
  }
}

TEST(Catalog, DcgmNamesAreUniqueAndOnGpuScope) {
  std::set<std::string_view> names;
  for (const auto& r : dcgm_rows()) {
    EXPECT_TRUE(names.insert(r.name).second) << r.name;
    EXPECT_TRUE(r.name.starts_with("DCGM_FI_")) << r.name;
    EXPECT_EQ(field(r.field).scope, Scope::kGpu) << r.name;
    EXPECT_FALSE(r.help.empty()) << r.name;
    if (r.field2 != FieldId::kCount) {
      EXPECT_EQ(field(r.field2).scope, Scope::kGpu) << r.name;
    }
  }
  EXPECT_DOUBLE_EQ(find_dcgm_row("DCGM_FI_DEV_GPU_UTIL")->scale, 100.0);  // DCGM reports percent
  EXPECT_EQ(dcgm_name(FieldId::kGpuPower), "DCGM_FI_DEV_POWER_USAGE");
  EXPECT_EQ(field(FieldId::kGpuPower).name, "gpu_power_watts");  // the example in catalog.h
  EXPECT_EQ(dcgm_names_of(FieldId::kGpuClockEventReasons),
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS, DCGM_FI_DEV_CLOCK_THROTTLE_REASONS");
  EXPECT_TRUE(dcgm_name(FieldId::kGpuMemoryFragmentation).empty());
}

// Every active row of dcgm-exporter's etc/default-counters.csv (a copy in
// tests/data/dcgm-exporter) that a GPU can give is a default row here with
// the CSV's type and help; vGPU license status exists only on vGPU guests.
TEST(Catalog, DcgmDefaultCountersMatchTheCsv) {
  std::ifstream in(std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/default-counters.csv");
  ASSERT_TRUE(in);
  auto trim = [](std::string v) {
    v.erase(0, v.find_first_not_of(' '));
    v.erase(v.find_last_not_of(' ') + 1);
    return v;
  };
  size_t rows = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find(','), b = line.find(',', a + 1);
    ASSERT_NE(b, std::string::npos) << line;
    const std::string name = trim(line.substr(0, a)), type = trim(line.substr(a + 1, b - a - 1)),
                      help = trim(line.substr(b + 1));
    if (name == "DCGM_FI_DEV_VGPU_LICENSE_STATUS") continue;
    ++rows;
    const DcgmRow* r = find_dcgm_row(name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_TRUE(r->default_counter) << name;
    EXPECT_EQ(r->help, help) << name;
    if (type == "label") {
      EXPECT_EQ(r->value, DcgmValue::kLabel) << name;
    } else {
      EXPECT_EQ(type_name(r->type), type) << name;
    }
  }
  size_t defaults = 0;
  for (const auto& r : dcgm_rows()) defaults += r.default_counter && r.since == DcgmGeneration::kClassic;
  EXPECT_EQ(defaults, rows);
  EXPECT_EQ(rows, 25u);
  EXPECT_EQ(find_dcgm_row("DCGM_FI_DEV_FB_USED")->value, DcgmValue::kInt);
  EXPECT_EQ(find_dcgm_row("DCGM_FI_DEV_POWER_USAGE")->value, DcgmValue::kDouble);
}

// dcgm-exporter 4.9's names: each renames a classic row of the same field,
// in the new unit; a naming writes one name per quantity.
TEST(Catalog, Dcgm49RowsRenameClassicRowsOfTheSameField) {
  size_t renamed = 0;
  for (const auto& r : dcgm_rows()) {
    if (r.renames.empty()) {
      EXPECT_EQ(r.since, DcgmGeneration::kClassic) << r.name;
      continue;
    }
    const DcgmRow* old = find_dcgm_row(r.renames);
    ASSERT_NE(old, nullptr) << r.name;
    // (NVLink: a counter in the classic name, a rate in the new one.)
    if (r.field2 == FieldId::kCount) {
      EXPECT_EQ(old->field, r.field) << r.name;
    }
    EXPECT_EQ(old->since, DcgmGeneration::kClassic) << r.name;
    EXPECT_TRUE(dcgm_written(*old, DcgmGeneration::kClassic)) << r.name;
    EXPECT_FALSE(dcgm_written(r, DcgmGeneration::kClassic)) << r.name;
    if (r.since == DcgmGeneration::kDcgm49) {
      EXPECT_TRUE(dcgm_written(r, DcgmGeneration::kDcgm49)) << r.name;
      EXPECT_FALSE(dcgm_written(*old, DcgmGeneration::kDcgm49)) << r.name;
    } else {  // 4.10's byte rates: read only; 4.9 keeps the old name
      EXPECT_FALSE(dcgm_written(r, DcgmGeneration::kDcgm49)) << r.name;
      EXPECT_TRUE(dcgm_written(*old, DcgmGeneration::kDcgm49)) << r.name;
    }
    ++renamed;
  }
  EXPECT_EQ(renamed, 33u);
  // Units: the new names are in base units.
  EXPECT_DOUBLE_EQ(find_dcgm_row("DCGM_FI_DEV_FB_USED_BYTES")->scale, 1.0);
  EXPECT_DOUBLE_EQ(find_dcgm_row("DCGM_FI_DEV_SM_CLOCK_HERTZ")->scale, 1.0);
  EXPECT_DOUBLE_EQ(find_dcgm_row("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL")->scale, 1.0);
  EXPECT_TRUE(dcgm_percent_or_ratio(*find_dcgm_row("DCGM_FI_DEV_GPU_UTIL_RATIO")));
  EXPECT_FALSE(dcgm_percent_or_ratio(*find_dcgm_row("DCGM_FI_PROF_SM_UTIL_RATIO")));
  EXPECT_FALSE(dcgm_percent_or_ratio(*find_dcgm_row("DCGM_FI_DEV_FB_USED_BYTES")));
  // Unrenamed names are written under both.
  EXPECT_TRUE(dcgm_written(*find_dcgm_row("DCGM_FI_DEV_PCIE_LINK_GEN"), DcgmGeneration::kDcgm49));
  EXPECT_EQ(dcgm_driver_row(DcgmGeneration::kClassic), "DCGM_FI_DRIVER_VERSION");
  EXPECT_EQ(dcgm_driver_row(DcgmGeneration::kDcgm49), "DCGM_FI_SYSTEM_DRIVER_VERSION");
  // The classic names stay the catalog's DCGM names (docs, rules, dashboards).
  EXPECT_EQ(dcgm_name(FieldId::kGpuMemoryUsed), "DCGM_FI_DEV_FB_USED");
}

TEST(Catalog, OpenMetricsFamilyNames) {
  EXPECT_EQ(family_name(field(FieldId::kGpuPcieRxBytes), true), "gpu_pcie_rx_bytes");
  EXPECT_EQ(family_name(field(FieldId::kGpuPcieRxBytes), false), "gpu_pcie_rx_bytes_total");
  EXPECT_EQ(family_name(field(FieldId::kGpuInfo), true), "gpu");
}

}  // namespace
}  // namespace gpulens
