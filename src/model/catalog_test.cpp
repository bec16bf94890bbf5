// The catalog follows the naming conventions every consumer relies on.
#include "model/catalog.h"

#include <gtest/gtest.h>

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
  for (const auto& f : catalog()) {
    if (f.dcgm_name.empty()) continue;
    EXPECT_TRUE(names.insert(f.dcgm_name).second) << f.dcgm_name;
    EXPECT_TRUE(f.dcgm_name.starts_with("DCGM_FI_"));
    EXPECT_EQ(f.scope, Scope::kGpu);
  }
  EXPECT_DOUBLE_EQ(field(FieldId::kGpuUtilization).dcgm_scale, 100.0);  // DCGM reports percent
}

TEST(Catalog, OpenMetricsFamilyNames) {
  EXPECT_EQ(family_name(field(FieldId::kGpuPcieRxBytes), true), "gpu_pcie_rx_bytes");
  EXPECT_EQ(family_name(field(FieldId::kGpuPcieRxBytes), false), "gpu_pcie_rx_bytes_total");
  EXPECT_EQ(family_name(field(FieldId::kGpuInfo), true), "gpu");
}

}  // namespace
}  // namespace gpulens
