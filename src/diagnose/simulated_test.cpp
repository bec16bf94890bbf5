// Simulated data says so in every offline report: a recording or a fleet
// whose agent served gpulens_simulated 1 gives a report whose text opens with
// the banner, whose JSON marks the host and the whole report, and whose
// parsed form (diagnose --agent) keeps the mark; real hosts beside it are not
// marked.
#include <gtest/gtest.h>

#include <string>

#include "diagnose/engine.h"
#include "diagnose/replay_input.h"
#include "diagnose/report.h"
#include "diagnose/report_parse.h"

namespace gpulens::diagnose {
namespace {

// Ten minutes of two hosts in dcgm-exporter's names; `sim_value` is the
// gpulens_simulated sample the agent of n1 served (under its scrape instance,
// as Prometheus stores it), none when negative.
std::string recording(int sim_value) {
  std::string o = "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
  for (const char* host : {"n1", "n2"}) {
    for (int t = 0; t <= 600; t += 15) {
      o += std::string("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-") + host + "\",Hostname=\"" + host + "\"} 90 " +
           std::to_string(1'700'000'000 + t) + "\n";
    }
  }
  if (sim_value >= 0) {
    o += "# TYPE gpulens_simulated gauge\n";
    for (int t = 0; t <= 600; t += 15) {
      o += "gpulens_simulated{instance=\"n1:9400\",scenario=\"thermal-throttle-one-gpu\"} " +
           std::to_string(sim_value) + " " + std::to_string(1'700'000'000 + t) + "\n";
    }
  }
  return o + "# EOF\n";
}

Report diagnose_text(const std::string& text) {
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(text, "sim.om", info, {}, 0);
  EXPECT_TRUE(set.ok()) << set.status().message();
  return set.ok() ? diagnose(*set, Thresholds{}) : Report{};
}

TEST(Simulated, TheReportOfASimulatedHostSaysSoFirst) {
  const Report r = diagnose_text(recording(1));
  ASSERT_EQ(r.hosts.size(), 2u);
  EXPECT_TRUE(r.simulated());
  EXPECT_TRUE(r.hosts[0].simulated);
  EXPECT_EQ(r.hosts[0].scenario, "thermal-throttle-one-gpu");
  EXPECT_FALSE(r.hosts[1].simulated);

  const std::string banner = simulated_banner(r);
  EXPECT_EQ(banner,
            "SIMULATED DATA: host n1 (scenario thermal-throttle-one-gpu) served gpulens_simulated 1: its values "
            "come from a scenario, not from a GPU");
  const std::string text = report_text(r, false);
  EXPECT_EQ(text.substr(0, text.find('\n')), banner);
  EXPECT_NE(text.find("host n1 SIMULATED\n"), std::string::npos) << text;
  EXPECT_NE(text.find("host n2\n"), std::string::npos) << text;

  const std::string json = report_json(r);
  // After the host's GPUs (the keys before them are the stable shape's).
  EXPECT_NE(json.find(R"(]}],"simulated":true,"scenario":"thermal-throttle-one-gpu"},{"host":"n2","gpus":[)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"(]}],"simulated":false}],"jobs":[)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"(],"simulated":true,"window":)"), std::string::npos) << json;

  // diagnose --agent reads the JSON back: the mark survives.
  Result<Report> back = report_from_json(json, "agent");
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(simulated_banner(*back), banner);
}

TEST(Simulated, RealDataHasNoBanner) {
  for (int value : {-1, 0}) {  // no series, or the agent said 0
    const Report r = diagnose_text(recording(value));
    ASSERT_EQ(r.hosts.size(), 2u);
    EXPECT_FALSE(r.simulated()) << value;
    EXPECT_EQ(simulated_banner(r), "");
    EXPECT_EQ(report_text(r, false).rfind("gpulens diagnose", 0), 0u);
    EXPECT_NE(report_json(r).find(R"(],"simulated":false,"window":)"), std::string::npos);
  }
}

TEST(Simulated, OneRecordingOfOneAgentJoinsItsMarkToItsGpus) {
  // What `gpulens record --source sim` writes: no host label on any series.
  std::string o = "# TYPE gpu_utilization_ratio gauge\n";
  for (int t = 0; t <= 600; t += 15) {
    o += "gpu_utilization_ratio{gpu=\"0\",gpu_uuid=\"GPU-a\"} 0.9 " + std::to_string(1'700'000'000 + t) + "\n";
  }
  o += "# TYPE gpulens_simulated gauge\ngpulens_simulated{scenario=\"healthy-training\"} 1 1700000000\n# EOF\n";
  const Report r = diagnose_text(o);
  ASSERT_EQ(r.hosts.size(), 1u);
  EXPECT_TRUE(r.hosts[0].simulated);
  EXPECT_NE(report_text(r, false).find("SIMULATED DATA: host localhost (scenario healthy-training)"),
            std::string::npos);
}

TEST(Simulated, AFleetNamesAtMostEightHosts) {
  Report r;
  for (int i = 0; i < 10; ++i) r.hosts.push_back({.host = "h" + std::to_string(i), .simulated = true});
  EXPECT_EQ(simulated_banner(r),
            "SIMULATED DATA: hosts h0, h1, h2, h3, h4, h5, h6, h7 and 2 more served gpulens_simulated 1: their "
            "values come from a scenario, not from a GPU");
}

}  // namespace
}  // namespace gpulens::diagnose
