// Fleet streaming pieces that need no server: the batch's host selector and
// merging batch reports. Against real servers: tests/integration/diagnose_fleet_test.sh.
#include "diagnose/prometheus_input.h"

#include <gtest/gtest.h>

#include "diagnose/engine.h"

namespace gpulens::diagnose {
namespace {

TEST(HostSelector, EachSeriesByTheLabelThatDecidesItsHostWithExactValues) {
  const std::string q = promql_for_label_values(
      "DCGM_FI_DEV_GPU_UTIL", "",
      {{.hostname = "", .Hostname = "GPU-004.dc1.example", .instance = "x:9400"},
       {.hostname = "", .Hostname = "", .instance = "10.0.0.8:9400"},
       {.hostname = "gpu-a", .Hostname = "other", .instance = "y"},
       {.hostname = "", .Hostname = "", .instance = "gpu-a:9100"}});
  // hostname wins, then Hostname (hostname empty), then instance (both empty);
  // values quoted literally, no case folding or suffixes: the listing gave them.
  EXPECT_EQ(q,
            "{__name__=\"DCGM_FI_DEV_GPU_UTIL\",hostname=~\"gpu\\\\-a\"} or "
            "{__name__=\"DCGM_FI_DEV_GPU_UTIL\",hostname=\"\",Hostname=~\"GPU\\\\-004\\\\.dc1\\\\.example\"} or "
            "{__name__=\"DCGM_FI_DEV_GPU_UTIL\",hostname=\"\",Hostname=\"\","
            "instance=~\"10\\\\.0\\\\.0\\\\.8\\\\:9400|gpu\\\\-a\\\\:9100\"}");
}

TEST(HostSelector, ExtraMatchersEmptyHostAndCpuSum) {
  const std::string q = promql_for_label_values("node_cpu_seconds_total", "cluster=\"a\"",
                                                {{}, {.hostname = "", .Hostname = "", .instance = "n1:9100"}});
  EXPECT_TRUE(q.starts_with("sum without (cpu) ({__name__=\"node_cpu_seconds_total\",cluster=\"a\",hostname=\"\",Hostname=\"\",instance=~"));
  // The host without any host label: selected by their absence.
  EXPECT_NE(q.find(" or {__name__=\"node_cpu_seconds_total\",cluster=\"a\",hostname=\"\",Hostname=\"\",instance=\"\"})"),
            std::string::npos);
  // A quote in a host name cannot end the string literal.
  const std::string odd = promql_for_label_values("x", "", {{.hostname = "a\"b"}});
  EXPECT_NE(odd.find("a\\\\\\\"b"), std::string::npos) << odd;
}

TEST(MergeReport, AddsHostsAndTotals) {
  Report a, b;
  a.from_ms = 1000;
  a.to_ms = 5000;
  a.hosts.push_back({.host = "n1", .gpus = {}});
  a.gpu_count = 8;
  a.covered_gpu_seconds = 80;
  a.waste_by_cause["input_pipeline"] = 10;
  b.from_ms = 0;
  b.to_ms = 6000;
  b.hosts.push_back({.host = "n2", .gpus = {}});
  b.gpu_count = 4;
  b.covered_gpu_seconds = 40;
  b.waste_by_cause["input_pipeline"] = 5;
  b.waste_by_cause["idle"] = 2;
  Report into;
  merge_report(into, a);
  merge_report(into, b);
  ASSERT_EQ(into.hosts.size(), 2u);
  EXPECT_EQ(into.hosts[0].host, "n1");
  EXPECT_EQ(into.hosts[1].host, "n2");
  EXPECT_EQ(into.gpu_count, 12u);
  EXPECT_DOUBLE_EQ(into.covered_gpu_seconds, 120);
  EXPECT_DOUBLE_EQ(into.waste_by_cause["input_pipeline"], 15);
  EXPECT_DOUBLE_EQ(into.waste_by_cause["idle"], 2);
  EXPECT_EQ(into.from_ms, 0);
  EXPECT_EQ(into.to_ms, 6000);
}

}  // namespace
}  // namespace gpulens::diagnose
