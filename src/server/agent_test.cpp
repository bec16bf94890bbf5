// The agent end to end on the simulator: scrape, JSON, a hung source.
#include "server/agent.h"

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
  EXPECT_EQ(client.get(base + "/healthz")->body, "ok\n");
  EXPECT_EQ(client.get(base + "/nope")->status, 404);

  // History fills at the interval.
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_GE(agent.history().records(), 3u);
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
