// PCIe peak: per-lane figures, calibration file, and the choice order.
#include "sources/nvml/pcie_peak.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

TEST(PciePeak, LaneFiguresAfterEncoding) {
  EXPECT_DOUBLE_EQ(pcie_lane_bytes_per_second(1), 250e6);
  EXPECT_NEAR(pcie_lane_bytes_per_second(3) * 16, 15.754e9, 1e6);
  EXPECT_NEAR(pcie_lane_bytes_per_second(4) * 16, 31.508e9, 1e6);
  EXPECT_NEAR(pcie_lane_bytes_per_second(5) * 16, 63.015e9, 1e6);
  EXPECT_EQ(pcie_lane_bytes_per_second(0), 0);
  EXPECT_EQ(pcie_lane_bytes_per_second(9), 0);
}

TEST(PciePeak, ChoiceOrder) {
  auto cal = parse_pcie_calibration(
      R"({"gpus":[{"uuid":"GPU-a","pcie_rx_bytes_per_second":5.3e10,"pcie_tx_bytes_per_second":5.1e10},
                  {"name":"NVIDIA H100 80GB HBM3","pcie_rx_bytes_per_second":5.0e10}]})",
      "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  PciePeak p = choose_pcie_peak(&*cal, "GPU-a", "NVIDIA H100 80GB HBM3", 5, 16);
  EXPECT_EQ(p.basis, "calibrated");
  EXPECT_EQ(p.rx, 5.3e10);
  EXPECT_EQ(p.tx, 5.1e10);
  p = choose_pcie_peak(&*cal, "GPU-b", "NVIDIA H100 80GB HBM3", 5, 16);
  EXPECT_EQ(p.basis, "calibrated");  // by model name; tx defaults to rx
  EXPECT_EQ(p.tx, 5.0e10);
  p = choose_pcie_peak(nullptr, "GPU-b", "NVIDIA A100-SXM4-80GB", 4, 8);
  EXPECT_EQ(p.basis, "link");
  EXPECT_NEAR(p.rx, 15.754e9, 1e6);
  p = choose_pcie_peak(nullptr, "GPU-b", "NVIDIA A100-SXM4-80GB", 0, 0);
  EXPECT_EQ(p.basis, "model");
  EXPECT_NEAR(p.rx, 31.508e9, 1e6);
  p = choose_pcie_peak(nullptr, "GPU-b", "Mystery GPU", 0, 0);
  EXPECT_EQ(p.rx, 0);
  EXPECT_TRUE(p.basis.empty());
}

TEST(PciePeak, CalibrationErrorsNameTheProblem) {
  EXPECT_NE(parse_pcie_calibration("{", "c.json").status().message().find("c.json: not valid JSON"), std::string::npos);
  EXPECT_NE(parse_pcie_calibration("{}", "c.json").status().message().find("\"gpus\""), std::string::npos);
  EXPECT_NE(parse_pcie_calibration(R"({"gpus":[{"pcie_rx_bytes_per_second":1}]})", "c.json").status().message().find(
                "gpus[0]: needs \"uuid\" or \"name\""),
            std::string::npos);
  EXPECT_NE(parse_pcie_calibration(R"({"gpus":[{"uuid":"x"}]})", "c.json").status().message().find("needs pcie_rx"),
            std::string::npos);
  EXPECT_EQ(load_pcie_calibration("/nonexistent/cal.json").status().code(), Code::kIo);
  EXPECT_NE(parse_pcie_calibration(R"({"gpus":[{"uuid":"x","pcie_rx_bytes_per_second":0}]})", "c.json")
                .status().message().find("peaks must be positive"),
            std::string::npos);
  EXPECT_NE(parse_pcie_calibration(R"({"gpus":[{"uuid":"x","pcie_rx_bytes_per_second":1,"link_gen":"5"}]})", "c.json")
                .status().message().find("gpus[0]: link_gen must be a small whole number"),
            std::string::npos);
}

TEST(PciePeak, CalibrateRecordsTheLinkAndTheRun) {
  auto cal = parse_pcie_calibration(
      R"({"date":"2026-12-01T10:00:00Z","tool_version":"0.1.0",
          "gpus":[{"uuid":"GPU-a","pcie_rx_bytes_per_second":5.5e10,"link_gen":5,"link_width":16,"under_load":true},
                  {"uuid":"GPU-b","pcie_tx_bytes_per_second":5e10,"date":"2026-11-30T09:00:00Z"}]})",
      "cal.json");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  const auto& a = cal->entries[0];
  EXPECT_EQ(a.link_gen, 5u);
  EXPECT_EQ(a.link_width, 16u);
  EXPECT_TRUE(a.under_load);
  EXPECT_EQ(a.date, "2026-12-01T10:00:00Z");  // the run's date when the GPU has none
  EXPECT_EQ(a.tool_version, "0.1.0");
  EXPECT_EQ(cal->entries[1].date, "2026-11-30T09:00:00Z");
  EXPECT_EQ(cal->entries[1].link_gen, 0u);  // not recorded
}

}  // namespace
}  // namespace gpulens
