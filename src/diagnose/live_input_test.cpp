// Live diagnosis over the agent's History: native names, counters already
// rates, labels parsed back from exposition form.
#include "diagnose/live_input.h"

#include <gtest/gtest.h>

#include "model/frame.h"
#include "store/live.h"

namespace gpulens::diagnose {
namespace {

TEST(Live, StarvedGpuOnASaturatedHostIsInputPipeline) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-live", .name = "NVIDIA H100 80GB HBM3", .pci_bus_id = "", .serial = ""});
  LiveStore live;
  const int src = live.add_source("sim", true);
  Frame frame{reg};
  History history(200);
  const int64_t t0 = 1'764'410'400'000;
  double idle = 0, user = 0, rx = 0;
  for (int i = 0; i < 81; ++i) {
    const int64_t t = t0 + i * 15'000;
    frame.clear(t);
    frame.set(FieldId::kGpuUtilization, 0, 0.45);
    frame.set(FieldId::kGpuSmActive, 0, 0.2);
    frame.set(FieldId::kGpuPcieRxBytes, 0, rx);
    frame.set_node(FieldId::kHostCpuSeconds, Labels{{"mode", "idle"}}, idle);
    frame.set_node(FieldId::kHostCpuSeconds, Labels{{"mode", "user"}}, user);
    live.publish(src, frame);
    history.record(reg, live, t);
    idle += 0.5 * 15;   // 32 CPUs: 0.5 idle, 31.5 busy
    user += 31.5 * 15;
    rx += 1e9 * 15;
  }
  const int64_t now = t0 + 80 * 15'000;
  const SignalSet set = signals_from_history(reg, history, now - 1'200'000, now);
  ASSERT_EQ(set.hosts.size(), 1u);
  const GpuSignals& g = set.hosts[0].gpus.at(0);
  EXPECT_EQ(g.uuid, "GPU-live");
  ASSERT_FALSE(g.sig(GpuSig::kPcieRxBps).empty());
  EXPECT_NEAR(g.sig(GpuSig::kPcieRxBps).back().v, 1e9, 1e3);  // the history's rate, not re-derived
  ASSERT_FALSE(set.hosts[0].sig(HostSig::kCpuBusy).empty());
  EXPECT_NEAR(set.hosts[0].sig(HostSig::kCpuBusy).back().v, 31.5 / 32, 1e-3);

  const Report r = diagnose_live(reg, history, now, Thresholds{}, 1'200'000);
  const GpuReport& gr = r.hosts.at(0).gpus.at(0);
  ASSERT_FALSE(gr.findings.empty());
  EXPECT_EQ(gr.findings[0].cause, "input_pipeline");
}

// At 100 ms sampling the diagnosis reads one point per second, the mean of
// its ten samples: the copy of a 30-minute window stays a tenth of the
// samples (it took the agent past its memory limit), and values are kept.
TEST(Live, SubSecondSamplesAreReadAsOnePointPerSecond) {
  SeriesRegistry reg;
  reg.set_gpu(0, {.uuid = "GPU-live", .name = "NVIDIA H100 80GB HBM3", .pci_bus_id = "", .serial = ""});
  LiveStore live;
  const int src = live.add_source("sim", true);
  Frame frame{reg};
  History history(1000);
  const int64_t t0 = 1'764'410'400'000;
  for (int i = 0; i < 600; ++i) {  // 60 s at 100 ms; SM active alternates 0.1 and 0.3
    const int64_t t = t0 + i * 100;
    frame.clear(t);
    frame.set(FieldId::kGpuSmActive, 0, i % 2 ? 0.3 : 0.1);
    live.publish(src, frame);
    history.record(reg, live, t);
  }
  const SignalSet set = signals_from_history(reg, history, t0, t0 + 60'000);
  const Series& sm = set.hosts.at(0).gpus.at(0).sig(GpuSig::kSmActive);
  ASSERT_EQ(sm.size(), 60u);
  for (const Point& p : sm) EXPECT_NEAR(p.v, 0.2, 1e-6);
  EXPECT_EQ(sm.front().t_ms, t0 + 900);  // the newest sample of its second
  EXPECT_EQ(sm.back().t_ms, t0 + 59'900);
}

}  // namespace
}  // namespace gpulens::diagnose
