// Counters files in dcgm-exporter's CSV format, the named profiles, and the
// registry's field mask dropping unselected fields from frames.
#include "model/selection.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "model/frame.h"

namespace gpulens {
namespace {

bool has(const FieldSelection& s, FieldId f) { return s.fields.test(static_cast<size_t>(f)); }

TEST(Collectors, DcgmExportersOwnDefaultFileLoads) {
  const std::string path = std::string(GPULENS_SOURCE_DIR) + "/tests/data/dcgm-exporter/default-counters.csv";
  auto sel = load_collectors(path);
  ASSERT_TRUE(sel) << sel.status().message();
  // 26 active rows: 24 numeric names exported, the driver-version label row,
  // and the vGPU licence row gpulens cannot give (a note, not an error).
  EXPECT_EQ(sel->dcgm.size(), 24u);
  EXPECT_TRUE(sel->driver_label);
  ASSERT_EQ(sel->notes.size(), 1u);
  EXPECT_NE(sel->notes[0].find("DCGM_FI_DEV_VGPU_LICENSE_STATUS is not given"), std::string::npos) << sel->notes[0];
  EXPECT_NE(sel->notes[0].find("default-counters.csv:"), std::string::npos);
  // The file's type and help (the stray space in "DCGM_FI_DEV_DEC_UTIL ," trimmed).
  ASSERT_TRUE(sel->dcgm.contains("DCGM_FI_DEV_DEC_UTIL"));
  EXPECT_EQ(sel->dcgm.at("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION").type, MetricType::kCounter);
  EXPECT_EQ(sel->dcgm.at("DCGM_FI_DEV_GPU_UTIL").help, "GPU utilization (in %).");
  EXPECT_FALSE(sel->dcgm.contains("DCGM_FI_PROF_SM_OCCUPANCY"));  // commented out there
  EXPECT_TRUE(has(*sel, FieldId::kGpuUtilization));
  EXPECT_TRUE(has(*sel, FieldId::kGpuNvlinkRxBytes));  // NVLINK_BANDWIDTH_TOTAL sums both directions
  EXPECT_FALSE(has(*sel, FieldId::kGpuSmOccupancy));
  EXPECT_TRUE(has(*sel, FieldId::kGpuUp));
  EXPECT_TRUE(has(*sel, FieldId::kHostCpuSeconds));  // not a GPU field: always on
}

// dcgm-exporter's own families (commented out in its default CSV): a row
// selects the gpulens field a scraped dcgm-exporter fills, with a note.
TEST(Collectors, DcgmExpRowsSelectTheirGpulensFields) {
  auto sel = parse_collectors(
      "DCGM_EXP_XID_ERRORS_COUNT, gauge, Count of XID Errors within user-specified time window\n"
      "DCGM_EXP_GPU_HEALTH_STATUS, counter, DCGM reported health status\n",
      "exp.csv");
  ASSERT_TRUE(sel) << sel.status().message();
  EXPECT_TRUE(has(*sel, FieldId::kGpuXidErrorsRecent));
  EXPECT_TRUE(has(*sel, FieldId::kGpuHealthStatus));
  EXPECT_FALSE(has(*sel, FieldId::kGpuClockEventsRecent));
  EXPECT_TRUE(sel->dcgm.empty());  // not written back under the DCGM names
  ASSERT_EQ(sel->notes.size(), 2u);
  EXPECT_EQ(sel->notes[0],
            "exp.csv:1: DCGM_EXP_XID_ERRORS_COUNT is read from a scraped dcgm-exporter as gpu_xid_errors_recent, "
            "not exported under its DCGM name");
  auto standard = profile("standard");
  ASSERT_TRUE(standard);
  EXPECT_TRUE(has(*standard, FieldId::kGpuXidErrorsRecent));  // the diagnosis reads them
  EXPECT_TRUE(has(*standard, FieldId::kGpuHealthStatus));
  EXPECT_FALSE(has(*standard, FieldId::kGpuClockEventsRecent));  // carried, not judged: full only
  EXPECT_FALSE(has(*standard, FieldId::kGpuP2pStatus));
}

TEST(Collectors, UnknownFieldNamesTheLine) {
  auto sel = parse_collectors("# comment\n\nDCGM_FI_DEV_GPU_UTIL, gauge, util\nDCGM_FI_DEV_GPU_UTILL, gauge, typo\n",
                              "my.csv");
  ASSERT_FALSE(sel);
  EXPECT_EQ(sel.status().message(), "my.csv:4: unknown DCGM field \"DCGM_FI_DEV_GPU_UTILL\"");
}

TEST(Collectors, MalformedRowsAreErrorsWithFileAndLine) {
  struct Case {
    const char* text;
    const char* message;
  } cases[] = {
      {"DCGM_FI_DEV_GPU_UTIL, gauge\n", "c.csv:1: expected 3 fields (DCGM field, type, help), got 2"},
      {"DCGM_FI_DEV_GPU_UTIL, gauge, a, b\n", "c.csv:1: expected 3 fields (DCGM field, type, help), got 4"},
      {"DCGM_FI_DEV_GPU_UTIL, gaug, x\n",
       "c.csv:1: unknown type \"gaug\" for DCGM_FI_DEV_GPU_UTIL (gauge, counter, histogram, summary, label)"},
      {"DCGM_FI_DEV_GPU_UTIL, label, x\n",
       "c.csv:1: DCGM_FI_DEV_GPU_UTIL is a numeric field: label is for string fields"},
      {"DCGM_FI_DRIVER_VERSION, gauge, x\n",
       "c.csv:1: DCGM_FI_DRIVER_VERSION is a string field: its type must be label"},
      {"DCGM_FI_DEV_GPU_UTIL, histogram, x\n",
       "c.csv:1: DCGM_FI_DEV_GPU_UTIL: gpulens gives one value per GPU, not a histogram (use gauge or counter)"},
      {"DCGM_FI_DEV_GPU_UTIL, gauge, a\n# x\nDCGM_FI_DEV_GPU_UTIL, gauge, b\n",
       "c.csv:3: DCGM_FI_DEV_GPU_UTIL is listed twice (first on line 1)"},
      {"DCGM_FI_DEV_GPU_UTIL, gauge, \"open\n", "c.csv:1: unterminated or misplaced quote"},
  };
  for (const auto& c : cases) {
    auto sel = parse_collectors(c.text, "c.csv");
    ASSERT_FALSE(sel) << c.text;
    EXPECT_EQ(sel.status().message(), c.message);
  }
}

TEST(Collectors, QuotedHelpTypeOverrideAndNoDriverLabel) {
  auto sel = parse_collectors(
      "DCGM_FI_PROF_PCIE_TX_BYTES, counter, \"PCIe TX, \"\"via NVML\"\"\"\r\n  # indented comment\r\n", "q.csv");
  ASSERT_TRUE(sel) << sel.status().message();
  ASSERT_EQ(sel->dcgm.size(), 1u);
  EXPECT_EQ(sel->dcgm.at("DCGM_FI_PROF_PCIE_TX_BYTES").help, "PCIe TX, \"via NVML\"");
  EXPECT_EQ(sel->dcgm.at("DCGM_FI_PROF_PCIE_TX_BYTES").type, MetricType::kCounter);
  EXPECT_FALSE(sel->driver_label);  // no DCGM_FI_DRIVER_VERSION row
  EXPECT_TRUE(has(*sel, FieldId::kGpuPcieTxRate));
  EXPECT_FALSE(has(*sel, FieldId::kGpuUtilization));
}

TEST(Collectors, OversizedFileRefused) {
  const std::string big(kMaxCollectorsBytes + 1, '#');
  auto sel = parse_collectors(big, "big.csv");
  ASSERT_FALSE(sel);
  EXPECT_NE(sel.status().message().find("big.csv: counters file larger than"), std::string::npos);
}

size_t gpu_fields(const FieldSelection& s) {
  size_t n = 0;
  for (const FieldDef& f : catalog()) n += s.fields.test(static_cast<size_t>(f.id)) && !always_collected(f.id);
  return n;
}

TEST(Profiles, MinimalIsTheArticlesEightStandardAddsFullIsAll) {
  auto minimal = profile("minimal");
  auto standard = profile("standard");
  auto full = profile("full");
  ASSERT_TRUE(minimal && standard && full);
  EXPECT_EQ(gpu_fields(*minimal), 8u);
  EXPECT_TRUE(has(*minimal, FieldId::kGpuSmOccupancy));
  EXPECT_TRUE(has(*minimal, FieldId::kGpuMemoryFragmentation));
  EXPECT_FALSE(has(*minimal, FieldId::kGpuXidErrors));
  EXPECT_TRUE((minimal->fields & ~standard->fields).none());
  EXPECT_GT(gpu_fields(*standard), gpu_fields(*minimal));
  EXPECT_TRUE(full->fields.all());
  EXPECT_TRUE(full->all_dcgm);
  // A profile's DCGM names are those whose fields it collects.
  EXPECT_TRUE(minimal->dcgm.contains("DCGM_FI_DEV_GPU_UTIL"));
  EXPECT_TRUE(minimal->dcgm.contains("DCGM_FI_PROF_SM_OCCUPANCY"));
  EXPECT_FALSE(minimal->dcgm.contains("DCGM_FI_DEV_FB_USED"));
  EXPECT_TRUE(standard->dcgm.contains("DCGM_FI_DEV_FB_USED"));
  auto bad = profile("tiny");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().message(), "unknown profile \"tiny\" (minimal, standard, full)");
}

TEST(Profiles, RegistryMaskDropsFieldsFromFrames) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-a", .name = "X", .pci_bus_id = "", .serial = ""});
  reg.set_field_mask(profile("minimal")->fields);
  Frame f(reg);
  f.clear(1);
  f.set(FieldId::kGpuUtilization, 0, 0.5);
  f.set(FieldId::kGpuPower, 0, 300);
  f.set(FieldId::kGpuNvlinkTxBytes, 0, Labels{{"link", "0"}}, 1);
  f.set(FieldId::kGpuUp, 0, 1);
  EXPECT_EQ(f.values().size(), 2u);
  EXPECT_EQ(reg.count(), 2u);  // no series made for the dropped fields
  EXPECT_TRUE(reg.slots_of(FieldId::kGpuPower).empty());
}

TEST(Profiles, ExportedNames) {
  auto minimal = profile("minimal");
  const auto names = exported_names(*minimal, true, true);
  auto in = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(in("gpu_sm_occupancy_ratio"));
  EXPECT_TRUE(in("DCGM_FI_PROF_SM_OCCUPANCY"));
  EXPECT_TRUE(in("gpu_up"));
  EXPECT_FALSE(in("gpu_power_watts"));
}

}  // namespace
}  // namespace gpulens
