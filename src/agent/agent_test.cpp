// The agent end to end on the simulator: scrape, JSON, a hung source.
#include "agent/agent.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "sources/sim/sim_source.h"
#include "util/http_client.h"

namespace gpulens {
namespace {

const std::string kDir = std::string(GPULENS_SOURCE_DIR) + "/scenarios";

std::unique_ptr<Source> sim(const std::string& name) {
  auto s = sim::load_scenario(name, kDir);
  EXPECT_TRUE(s.ok());
  return make_sim_source(std::move(*s), 1, 1.0);
}

// A source that blocks in sample() until released: a stuck driver call.
class HangingSource final : public Source {
 public:
  explicit HangingSource(std::atomic<bool>& release) : release_(release) {}
  std::string_view name() const override { return "stuck"; }
  Status open(SeriesRegistry&) override { return Status::ok(); }
  Status sample(Frame& f) override {
    if (calls_++ > 0) {
      while (!release_) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    f.set_node(FieldId::kServingRequestsWaiting, 4);
    return Status::ok();
  }

 private:
  std::atomic<bool>& release_;
  int calls_ = 0;
};

TEST(Agent, ServesMetricsJsonAndHealth) {
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(sim("healthy-training"));
  Agent agent({.listen = "127.0.0.1:0", .interval_ms = 100, .history_ms = 10'000, .dcgm_names = true,
               .scenario_label = "healthy-training"},
              std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  ASSERT_TRUE(agent.start().is_ok());
  HttpClient client({.timeout_ms = 5000});
  const std::string base = "http://127.0.0.1:" + std::to_string(agent.port());

  auto m = client.get(base + "/metrics");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_NE(m->body.find("gpu_sm_occupancy_ratio{gpu=\"7\""), std::string::npos);
  EXPECT_NE(m->body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""), std::string::npos);
  EXPECT_NE(m->body.find("gpulens_simulated{scenario=\"healthy-training\"} 1"), std::string::npos);
  EXPECT_NE(m->body.find("gpulens_source_up{source=\"sim\"} 1"), std::string::npos);

  auto om = client.get(base + "/metrics", {{"Accept", "application/openmetrics-text;version=1.0.0"}});
  ASSERT_TRUE(om.ok());
  EXPECT_TRUE(om->body.ends_with("# EOF\n"));

  auto gz = client.get(base + "/metrics", {{"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz.ok());
  EXPECT_EQ(gz->header("content-encoding"), "gzip");
  EXPECT_LT(gz->body.size(), m->body.size() / 3);

  auto json = client.get(base + "/api/v1/current");
  ASSERT_TRUE(json.ok());
  EXPECT_NE(json->body.find("\"gpu_power_watts\":"), std::string::npos);
  EXPECT_NE(json->body.find("\"simulated\":true"), std::string::npos);
  // The same series as objects, their labels as data beside the kept `fields` keys.
  EXPECT_NE(json->body.find("\"gpu_clock_event_active{reason=\\\"sw_thermal\\\"}\":"), std::string::npos);
  EXPECT_NE(json->body.find("{\"name\":\"gpu_clock_event_active\",\"labels\":{\"reason\":\"sw_thermal\"},\"value\":"),
            std::string::npos);
  EXPECT_NE(json->body.find("{\"name\":\"gpu_power_watts\",\"labels\":{},\"value\":"), std::string::npos);
  EXPECT_NE(json->body.find("{\"name\":\"host_cpu_seconds_total\",\"labels\":{\"mode\":\"user\"},\"value\":"),
            std::string::npos);
  EXPECT_EQ(client.get(base + "/healthz")->body, "ok\n");
  EXPECT_EQ(client.get(base + "/nope")->status, 404);

  // History fills at the interval.
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_GE(agent.history().records(), 3u);
  agent.stop();
}

// Polls (no timing assert) until the history holds `n` records.
void wait_records(Agent& agent, size_t n) {
  for (int i = 0; i < 400 && agent.history().records() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_GE(agent.history().records(), n);
}

TEST(Agent, HistoryExportAndQueryParameters) {
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(sim("thermal-throttle-one-gpu"));
  Agent agent({.listen = "127.0.0.1:0", .interval_ms = 50, .history_ms = 300'000}, std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  ASSERT_TRUE(agent.start().is_ok());
  wait_records(agent, 4);
  HttpClient client({.timeout_ms = 5000});
  const std::string base = "http://127.0.0.1:" + std::to_string(agent.port());

  auto h = client.get(base + "/api/v1/history?series=gpu_temperature_celsius,gpu_sm_active_ratio&gpu=5&range=1m");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->status, 200) << h->body;
  EXPECT_EQ(h->header("content-type"), "application/json");
  EXPECT_NE(h->body.find("\"name\":\"gpu_temperature_celsius\",\"gpu\":\"5\""), std::string::npos);
  EXPECT_NE(h->body.find("\"name\":\"gpu_sm_active_ratio\",\"gpu\":\"5\""), std::string::npos);
  EXPECT_EQ(h->body.find("\"gpu\":\"4\""), std::string::npos);
  EXPECT_NE(h->body.find("\"step\":100,"), std::string::npos) << h->body.substr(0, 200);  // 1m / 600
  EXPECT_NE(h->body.find("\"gpu\":\"5\",\"labels\":{},\"values\":["), std::string::npos) << h->body.substr(0, 300);
  // Labels are an object: {"reason":"sw_thermal"}, never exposition text.
  auto reasons = client.get(base + "/api/v1/history?series=gpu_clock_event_active&gpu=5&range=1m");
  ASSERT_TRUE(reasons.ok());
  EXPECT_NE(reasons->body.find("\"labels\":{\"reason\":\"sw_thermal\"}"), std::string::npos) << reasons->body.substr(0, 300);

  for (const char* bad : {"/api/v1/history?series=gpu_nope", "/api/v1/history?sries=gpu_power_watts",
                          "/api/v1/history?series=gpu_power_watts&range=2h", "/api/v1/history?series=gpu_power_watts&gpu=8",
                          "/api/v1/history?series=gpu_power_watts&range=5m&step=1ms&gpu=0", "/api/v1/history",
                          "/api/v1/current?gpu=8", "/api/v1/current?gpus=1", "/api/v1/export?from=1",
                          "/api/v1/export?from=x&to=2"}) {
    auto r = client.get(base + bad);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 400) << bad << ": " << r->body;
  }
  // 5m at 50 ms is 6001 values per series: refused with the limit above;
  // 1m at 50 ms is 1201 values, within it.
  auto big = client.get(base + "/api/v1/history?series=gpu_sm_active_ratio&range=1m&step=50ms");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->status, 200) << big->body;  // 1201 values per series is within the bound
  auto one = client.get(base + "/api/v1/current?gpu=5");
  ASSERT_TRUE(one.ok());
  EXPECT_NE(one->body.find("{\"gpu\":\"5\",\"uuid\""), std::string::npos);
  EXPECT_EQ(one->body.find("{\"gpu\":\"0\",\"uuid\""), std::string::npos);

  const int64_t newest = agent.history().newest_ms();
  auto ex = client.get(base + "/api/v1/export?from=0&to=" + std::to_string(newest));
  ASSERT_TRUE(ex.ok());
  ASSERT_EQ(ex->status, 200);
  EXPECT_TRUE(ex->body.ends_with("# EOF\n"));
  EXPECT_NE(ex->body.find("# TYPE gpu_pcie_rx_bytes counter\n"), std::string::npos);
  EXPECT_NE(ex->body.find("gpu_temperature_celsius{gpu=\"5\""), std::string::npos);
  auto none = client.get(base + "/api/v1/export?from=" + std::to_string(newest + 1) + "&to=" + std::to_string(newest + 2));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->body, "# EOF\n");
  agent.stop();
}

TEST(Agent, HungSourceDoesNotBlockScrapes) {
  std::atomic<bool> release{false};
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(sim("healthy-training"));
  sources.push_back(std::make_unique<HangingSource>(release));
  Agent agent({.listen = "127.0.0.1:0", .interval_ms = 50}, std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  ASSERT_TRUE(agent.start().is_ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  HttpClient client({.timeout_ms = 2000});
  auto m = client.get("http://127.0.0.1:" + std::to_string(agent.port()) + "/metrics");
  ASSERT_TRUE(m.ok()) << m.status().message();
  // The stuck source's last complete sample is still served, with its age.
  EXPECT_NE(m->body.find("serving_requests_waiting 4"), std::string::npos) << m->body.substr(0, 2000);
  const size_t age = m->body.find("gpulens_sample_age_seconds{source=\"stuck\"} ");
  ASSERT_NE(age, std::string::npos);
  EXPECT_GE(std::stod(m->body.substr(age + 43)), 0.9);
  release = true;
  agent.stop();
}

}  // namespace
}  // namespace gpulens
