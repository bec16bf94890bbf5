#include "model/xid_ledger.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "model/frame.h"
#include "model/xid.h"

namespace gpulens {
namespace {

TEST(CanonicalBusId, ReadsTheDriversAndNvmlsForms) {
  EXPECT_EQ(canonical_bus_id("00000000:3B:00.0"), "0000:3b:00");
  EXPECT_EQ(canonical_bus_id("0000:3b:00.0"), "0000:3b:00");
  EXPECT_EQ(canonical_bus_id("PCI:0000:3b:00"), "0000:3b:00");
  EXPECT_EQ(canonical_bus_id("PCI:0008:01:00"), "0008:01:00");
  EXPECT_EQ(canonical_bus_id("3b:00.0"), "0000:3b:00");
  EXPECT_EQ(canonical_bus_id("0000:3b:1f.7"), "0000:3b:1f");
  EXPECT_EQ(canonical_bus_id(""), "");
  EXPECT_EQ(canonical_bus_id("garbage"), "");
  EXPECT_EQ(canonical_bus_id("0000:3b:20.0"), "");   // device > 0x1f
  EXPECT_EQ(canonical_bus_id("0000:3b:00.9"), "");   // function > 7
  EXPECT_EQ(canonical_bus_id("0000:3bb:00.0"), "");  // bus of 3 digits
  EXPECT_EQ(canonical_bus_id("1:2:3:4"), "");
}

TEST(XidLedger, TheSameXidFromBothPathsCountsOnce) {
  XidLedger l(10);
  EXPECT_TRUE(l.record("00000000:3B:00.0", 79, 1000, XidPath::kNvml));
  EXPECT_FALSE(l.record("PCI:0000:3b:00", 79, 1003, XidPath::kKernelLog, "GPU has fallen off the bus."));
  auto g = l.get("0000:3b:00.0");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->counts.at(79), 1u);
  EXPECT_EQ(g->last, 79);
  EXPECT_EQ(g->last_message, "GPU has fallen off the bus.");  // the kernel log's text fills in
}

TEST(XidLedger, BurstsCountEveryEventAndLateRepeatsCountAgain) {
  XidLedger l(10);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(l.record("0000:18:00", 13, 100 + i, XidPath::kKernelLog));
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(l.record("0000:18:00", 13, 101 + i, XidPath::kNvml));
  EXPECT_TRUE(l.record("0000:18:00", 13, 104, XidPath::kNvml));  // a fourth: only NVML saw it yet
  EXPECT_EQ(l.get("0000:18:00")->counts.at(13), 4u);
  // Outside the window the same code is a new event.
  EXPECT_TRUE(l.record("0000:18:00", 13, 200, XidPath::kKernelLog));
  EXPECT_EQ(l.get("0000:18:00")->counts.at(13), 5u);
  // Another code or GPU never pairs.
  EXPECT_TRUE(l.record("0000:18:00", 31, 200, XidPath::kNvml));
  EXPECT_TRUE(l.record("0000:19:00", 13, 200, XidPath::kNvml));
  EXPECT_EQ(l.buses().size(), 2u);
}

TEST(XidLedger, ClaimsAreByBusIdInAnyForm) {
  XidLedger l;
  EXPECT_FALSE(l.claimed("0000:3b:00.0"));
  l.claim("00000000:3B:00.0");
  EXPECT_TRUE(l.claimed("PCI:0000:3b:00"));
  EXPECT_FALSE(l.get("0000:3b:00"));  // no XID yet: nothing
}

TEST(XidLedger, FillsTheCatalogFieldsWithTheMessage) {
  SeriesRegistry reg;
  Frame f(reg);
  f.clear(0);
  XidLedger l;
  l.record("0000:3b:00", 48, 10, XidPath::kKernelLog, "DBE (double bit error) ECC error");
  l.record("0000:3b:00", 79, 20, XidPath::kKernelLog, "GPU has fallen off the bus.");
  XidLedger::fill(f, 2, *l.get("0000:3b:00"));
  std::map<std::string, double> got;
  for (const auto& v : f.values()) {
    const Series& s = reg.series(v.slot);
    got[std::string(field(s.field).name) + "{" + s.extra.render() + "}"] = v.value;
    EXPECT_EQ(s.gpu, 2);
  }
  EXPECT_EQ(got.at("gpu_xid_errors_total{xid=\"48\"}"), 1);
  EXPECT_EQ(got.at("gpu_xid_errors_total{xid=\"79\"}"), 1);
  EXPECT_EQ(got.at("gpu_last_xid{}"), 79);
  EXPECT_EQ(got.at("gpu_last_xid_timestamp_seconds{}"), 20);
  EXPECT_EQ(got.at("gpu_last_xid_info{message=\"GPU has fallen off the bus.\",path=\"kernel_log\",xid=\"79\"}"), 1);
}

TEST(XidAdvice, CoversTheCommonXidsWithAnAction) {
  for (int code : {13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 74, 79, 92, 93, 94, 95, 109, 119, 120, 140, 143, 154}) {
    const XidAdvice* a = xid_advice(code);
    ASSERT_NE(a, nullptr) << code;
    EXPECT_EQ(a->code, code);
    EXPECT_FALSE(a->meaning.empty());
    EXPECT_FALSE(xid_action_text(a->action).empty());
    EXPECT_FALSE(xid_owner_name(a->owner).empty());
  }
  EXPECT_EQ(xid_advice(79)->action, XidAction::kRebootNode);
  EXPECT_EQ(xid_advice(13)->owner, XidOwner::kApplication);
  EXPECT_EQ(xid_advice(2), nullptr);
  EXPECT_EQ(recovery_action_name(2), "reboot the node");
  EXPECT_EQ(recovery_action_name(9), "");
}

// docs/health.md's XID table is this table, row by row.
TEST(XidAdvice, DocsTableMatches) {
  std::ifstream in(std::string(GPULENS_SOURCE_DIR) + "/docs/health.md");
  ASSERT_TRUE(in) << "docs/health.md";
  std::stringstream all;
  all << in.rdbuf();
  const std::string doc = all.str();
  for (const XidAdvice& a : xid_advice_table()) {
    const std::string row = "| " + std::to_string(a.code) + " | " + std::string(a.meaning) + " | " +
                            std::string(xid_owner_name(a.owner)) + " | " + std::string(xid_action_text(a.action)) +
                            " | " + (a.rma_if_repeats ? "yes" : "no") + " |\n";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/health.md lacks the row\n" << row;
  }
}

}  // namespace
}  // namespace gpulens
