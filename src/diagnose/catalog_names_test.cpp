// The catalog owns the DCGM names: each one the diagnosis reads binds as the
// native field its catalog row reads, in the row's unit.
#include <gtest/gtest.h>

#include <cmath>

#include "diagnose/mapping.h"
#include "model/catalog.h"

namespace gpulens::diagnose {
namespace {

TEST(CatalogNames, EveryDcgmRowMapsAsItsNativeField) {
  size_t bound = 0;
  for (const DcgmRow& row : dcgm_rows()) {
    if (row.value == DcgmValue::kLabel) continue;
    SCOPED_TRACE(std::string(row.name));
    std::vector<LabelPair> labels;
    if (!row.extra.empty()) labels.emplace_back(row.extra.name, row.extra.value);
    const std::string native(field(row.field).name);
    const std::vector<Binding> theirs = map_series(row.name, labels);
    const std::vector<Binding> ours = map_series(native, labels);
    if (row.field2 != FieldId::kCount || ours.empty()) {
      // A sum of two fields, or a field the diagnosis does not read.
      EXPECT_TRUE(theirs.empty());
      EXPECT_FALSE(known_name(row.name));
      continue;
    }
    EXPECT_TRUE(known_name(row.name));
    ASSERT_EQ(theirs.size(), ours.size());
    for (size_t i = 0; i < ours.size(); ++i) {
      EXPECT_EQ(theirs[i].kind, ours[i].kind);
      EXPECT_EQ(theirs[i].sig, ours[i].sig);
      EXPECT_EQ(theirs[i].counter, ours[i].counter);
      EXPECT_EQ(theirs[i].mask, ours[i].mask);
      // DCGM's unit * scale = ours: the row's scale (ours -> DCGM's) undone.
      EXPECT_NEAR(theirs[i].scale * row.scale, ours[i].scale, 1e-12 * ours[i].scale);
      EXPECT_EQ(theirs[i].transform,
                dcgm_percent_or_ratio(row) ? Binding::Transform::kPercentOrRatio : ours[i].transform);
    }
    ++bound;
  }
  // Classic and DCGM 4.9/4.10 names of utilisation, memory, clocks,
  // temperature, power, profiling, PCIe, XID, ECC: not a vacuous loop.
  EXPECT_GE(bound, 40u);
}

TEST(CatalogNames, DecimalUnitsBindAtTheirExactFactor) {
  ASSERT_EQ(map_series("DCGM_FI_DEV_SM_CLOCK", {}).size(), 1u);
  EXPECT_EQ(map_series("DCGM_FI_DEV_SM_CLOCK", {})[0].scale, 1e6);
  EXPECT_EQ(map_series("DCGM_FI_DEV_GPU_UTIL", {})[0].scale, 0.01);
  EXPECT_EQ(map_series("DCGM_FI_DEV_FB_USED", {})[0].scale, 1024.0 * 1024.0);
}

}  // namespace
}  // namespace gpulens::diagnose
