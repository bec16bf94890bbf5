// The one validator: every key of the file is checked for its type and
// bounds with file:line:column, flags get the same checks, and the
// effective configuration shows every key.
#include "cli/config.h"
#include "store/history.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace gpulens::cli {
namespace {

std::string error_of(const std::string& yaml) {
  auto c = parse_config(yaml, "t.yaml");
  return c ? std::string("(accepted)") : c.status().message();
}

TEST(Config, UnknownKeysAnywhereNameFileLineColumn) {
  EXPECT_EQ(error_of("interval: 1s\nsourcez: [sim]\n").rfind("t.yaml:2:1: config: unknown key \"sourcez\"", 0), 0u);
  EXPECT_NE(error_of("diagnose: {pcie_utl: 0.8}\n").find("t.yaml:1:12: diagnose: unknown key \"pcie_utl\""),
            std::string::npos);
  EXPECT_NE(error_of("rules:\n  gpu_util_low: {threshhold: 0.2}\n")
                .find("t.yaml:2:18: rules.gpu_util_low: unknown key \"threshhold\" (known: threshold, for)"),
            std::string::npos);
  EXPECT_NE(error_of("source:\n  nvml: {calibration_file: x}\n").find("unknown key \"calibration_file\""),
            std::string::npos);
  EXPECT_NE(error_of("listen: a:1\nlisten: b:2\n").find("appears twice"), std::string::npos);
}

TEST(Config, ValuesAreCheckedForTheirType) {
  EXPECT_NE(error_of("rules: {gpu_util_low: {threshold: hot}}").find("\"hot\" is not a number"), std::string::npos);
  EXPECT_NE(error_of("diagnose: {pcie_util: 80}").find("80 is not a ratio in 0..1"), std::string::npos);
  EXPECT_NE(error_of("diagnose: {temperature_celsius: 85, pcie_for: soon}").find("diagnose.pcie_for"),
            std::string::npos);
  EXPECT_NE(error_of("listen: 9400").find("needs HOST:PORT"), std::string::npos);
  EXPECT_NE(error_of("listen: 0.0.0.0:99999").find("port 99999 is out of range 1..65535"), std::string::npos);
  EXPECT_NE(error_of("listen: :9400").find("no host"), std::string::npos);
  EXPECT_NE(error_of("remote_write: {url: \"ftp://vm:8428/api/v1/write\"}").find("scheme ftp:// is not supported"),
            std::string::npos);
  EXPECT_NE(error_of("remote_write: {url: vm:8428/api/v1/write}").find("is not a URL"), std::string::npos);
  EXPECT_NE(error_of("interval: 10ms").find("interval: 10ms is out of range 100ms..1h"), std::string::npos);
  EXPECT_NE(error_of("dcgm_names: maybe").find("expected true or false"), std::string::npos);
  EXPECT_NE(error_of("sources: [nvml, gpu]").find("unknown \"gpu\""), std::string::npos);
  EXPECT_NE(error_of("source: {sim: {seed: 1.5}}").find("not a whole number"), std::string::npos);
  EXPECT_NE(error_of("log: {format: xml}").find("\"xml\" is not one of text,json"), std::string::npos);
  EXPECT_NE(error_of("source: [a]").find("source: expected a mapping"), std::string::npos);
}

// One rule for both YAML readers (this one and util/yaml_reader.h): a bool
// is true or false, a number is finite; the error names the key.
TEST(Config, NonFiniteNumbersAndYaml11BooleansAreErrorsNamingTheKey) {
  for (const char* v : {".nan", ".NaN", "nan", ".inf", "-.inf", "inf", "-inf", "infinity"}) {
    const std::string value(v);
    EXPECT_EQ(error_of("diagnose: {pcie_util: " + value + "}"),
              "t.yaml:1:23: diagnose.pcie_util: \"" + value + "\" is not a number (a ratio in 0..1, e.g. 0.8)");
    EXPECT_EQ(error_of("source: {sim: {speed: " + value + "}}"),
              "t.yaml:1:23: source.sim.speed: \"" + value + "\" is not a number");
    EXPECT_EQ(error_of("push: {max_labels: " + value + "}"),
              "t.yaml:1:20: push.max_labels: \"" + value + "\" is not a number");
    EXPECT_EQ(error_of("rules: {temperature_high: {threshold: " + value + "}}"),
              "t.yaml:1:39: rules.temperature_high.threshold: \"" + value + "\" is not a number");
    EXPECT_NE(error_of("interval: " + value).find("t.yaml:1:11: interval: "), std::string::npos) << value;
  }
  for (const char* v : {"yes", "no", "on", "off", "y", "n", "True", "FALSE", "1", "0"}) {
    EXPECT_EQ(error_of(std::string("dcgm_names: ") + v),
              "t.yaml:1:13: dcgm_names: \"" + std::string(v) + "\": expected true or false");
  }
  auto c = parse_config("dcgm_names: true\npush: {enabled: false}\n", "t.yaml");
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_TRUE(c->dcgm_names);
  AgentConfig flags;  // a flag's value gets the same checks
  EXPECT_EQ(set_key(flags, "source.sim.speed", "nan", "--speed").message(), "--speed: \"nan\" is not a number");
  EXPECT_EQ(set_key(flags, "dcgm_names", "on", "--dcgm-names").message(),
            "--dcgm-names: \"on\": expected true or false");
}

TEST(Config, ValidFileLandsInTheStruct) {
  auto c = parse_config(
      "listen: \"[::1]:9500\"\ninterval: 100ms\nsources: [sim]\nsource: {nvml: {calibration: /etc/c.json}}\n"
      "remote_write: {url: http://vm:8428/api/v1/write, interval: 15s, job: gpu-nodes, timeout: 2s}\n"
      "diagnose: {pcie_util: 0.7, pcie_for: 5m}\nrules: {job: g, gpu_util_low: {threshold: 0.3, for: 30m}}\n",
      "t.yaml");
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->listen, "[::1]:9500");
  EXPECT_EQ(c->interval_ms, 100);
  EXPECT_EQ(c->sources, std::vector<std::string>{"sim"});
  EXPECT_EQ(c->source.nvml.calibration_file, "/etc/c.json");
  EXPECT_EQ(c->remote_write.interval_ms, 15000);
  EXPECT_EQ(c->remote_write.job, "gpu-nodes");
  EXPECT_EQ(c->remote_write.timeout_ms, 2000);
  EXPECT_DOUBLE_EQ(c->diagnose.pcie_util, 0.7);
  EXPECT_EQ(c->diagnose.pcie_for_ms, 300000);
  EXPECT_EQ(c->rules.job, "g");
  EXPECT_DOUBLE_EQ(c->rules.number("gpu_util_low.threshold"), 0.3);
  EXPECT_EQ(c->rules.duration_ms("gpu_util_low.for"), 1'800'000);
}

TEST(Config, EffectiveConfigurationShowsEveryKeyAndReadsBack) {
  auto c = parse_config("source: {nvml: {calibration: /etc/c.json}}\nremote_write: {interval: 15s}\n"
                        "diagnose: {fragmentation: 0.6}\nrules: {gpu_util_low: {for: 30m}}\n",
                        "t.yaml");
  ASSERT_TRUE(c);
  const std::string yaml = to_yaml(*c);
  EXPECT_NE(yaml.find("sources: [nvml, host]"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("    calibration: /etc/c.json"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("remote_write:\n  url: \"\"\n  interval: 15s"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("diagnose:\n"), std::string::npos);
  EXPECT_NE(yaml.find("  fragmentation: 0.6\n"), std::string::npos);
  EXPECT_NE(yaml.find("rules:\n"), std::string::npos);
  EXPECT_NE(yaml.find("  gpu_util_low:\n    threshold: 0.2\n    for: 30m\n"), std::string::npos) << yaml;
  for (const auto& k : config_keys()) {
    EXPECT_NE(yaml.find(k.key.substr(k.key.rfind('.') + 1) + ":"), std::string::npos) << k.key;
  }
  // What check-config prints is itself a valid file meaning the same.
  auto again = parse_config(yaml, "effective.yaml");
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ(to_yaml(*again), yaml);
}

TEST(Config, SummaryShowsWhatServeRunsWithAndTheKeysNotAtTheirDefaults) {
  size_t changed = 99;
  const std::string plain = to_yaml_summary(AgentConfig{}, changed);
  EXPECT_EQ(changed, 0u);
  EXPECT_EQ(plain, "listen: 127.0.0.1:9400\ninterval: 1s\nhistory: 1h\nsources: [nvml, host]\n");

  auto c = parse_config("interval: 2s\nsource: {nvml: {calibration: /etc/c.json}}\n"
                        "diagnose: {fragmentation: 0.6}\nrules: {gpu_util_low: {for: 30m}}\n",
                        "t.yaml");
  ASSERT_TRUE(c);
  const std::string yaml = to_yaml_summary(*c, changed);
  EXPECT_EQ(changed, 3u) << yaml;  // interval is shown anyway, not counted
  EXPECT_NE(yaml.find("interval: 2s\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("source:\n  nvml:\n    calibration: /etc/c.json\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("diagnose:\n  fragmentation: 0.6\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("rules:\n  gpu_util_low:\n    for: 30m\n"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("threshold"), std::string::npos) << yaml;  // a default: left out
  EXPECT_LT(std::count(yaml.begin(), yaml.end(), '\n'), 15) << yaml;
  // The summary is a valid file meaning the same as the whole configuration.
  auto again = parse_config(yaml, "summary.yaml");
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ(to_yaml(*again), to_yaml(*c));
}

TEST(Config, FlagsGetTheSameChecks) {
  AgentConfig c;
  EXPECT_EQ(set_key(c, "listen", "0.0.0.0:99999", "--listen").message(),
            "--listen: \"0.0.0.0:99999\": port 99999 is out of range 1..65535");
  EXPECT_FALSE(set_key(c, "interval", "10ms", "--interval"));
  EXPECT_TRUE(set_key(c, "interval", "100ms", "--interval"));
  EXPECT_EQ(c.interval_ms, 100);
  EXPECT_TRUE(set_key(c, "sources", "sim,host"));
  EXPECT_EQ(c.sources, (std::vector<std::string>{"sim", "host"}));
}

TEST(Config, CrossKeyChecks) {
  auto c = parse_config("sources: [sim]\nsource: {sim: {scenario: no-such-scenario}}\n", "t.yaml");
  ASSERT_TRUE(c);
  auto problems = validate(*c);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("no-such-scenario"), std::string::npos);
  c = parse_config("interval: 10s\nhistory: 5s\n", "t.yaml");
  ASSERT_TRUE(c);
  EXPECT_EQ(validate(*c).size(), 1u);
}

TEST(Config, ScrapeTargetsFromYamlAndTheirChecks) {
  auto c = parse_config(
      "sources: [host, scrape]\n"
      "source:\n  scrape:\n    targets: [\"http://127.0.0.1:9400/metrics\", \"http://127.0.0.1:9100/metrics\"]\n"
      "    interval: 5s\n    timeout: 1s\n",
      "t.yaml");
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->source.scrape.targets,
            (std::vector<std::string>{"http://127.0.0.1:9400/metrics", "http://127.0.0.1:9100/metrics"}));
  EXPECT_EQ(c->source.scrape.interval_ms, 5000);
  EXPECT_EQ(c->source.scrape.timeout_ms, 1000);
  EXPECT_TRUE(validate(*c).empty());
  c->source.scrape.targets.push_back("ftp://127.0.0.1/x");
  c->source.scrape.targets.push_back("http://127.0.0.1:9100/metrics");
  auto problems = validate(*c);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(problems[0].find("scheme ftp:// is not supported"), std::string::npos) << problems[0];
  EXPECT_NE(problems[1].find("listed twice"), std::string::npos) << problems[1];
  c->source.scrape.targets.clear();
  ASSERT_EQ(validate(*c).size(), 1u);
  EXPECT_EQ(validate(*c)[0], "source scrape needs at least one target (--scrape URL or source.scrape.targets)");
  c = parse_config("source: {scrape: {targets: [\"http://127.0.0.1:9400/metrics\"]}}\n", "t.yaml");
  ASSERT_TRUE(c);
  ASSERT_EQ(validate(*c).size(), 1u);
  EXPECT_NE(validate(*c)[0].find("scrape is not among the sources"), std::string::npos);
}

TEST(Config, EveryKeyHasHelpAndAKeysTableRow) {
  const std::string table = keys_markdown();
  for (const auto& k : config_keys()) {
    EXPECT_FALSE(k.help.empty()) << k.key;
    EXPECT_NE(table.find("| `" + k.key + "` |"), std::string::npos) << k.key;
  }
}

// The series budgets of pushes and scrape targets hold at the defaults (an
// hour at 1 s fits the 144 MiB of outside history) and are lowered in
// proportion where a finer interval makes each series dearer.
TEST(Config, SeriesBudgetsFitTheOutsideHistory) {
  AgentConfig c;
  EXPECT_EQ(fit_series_budgets(c), "");
  EXPECT_EQ(c.push.max_series, 4096);
  EXPECT_EQ(c.source.scrape.max_series_total, 4096);

  c.interval_ms = 100;  // 36,000 records a series: ten times the memory
  const std::string lowered = fit_series_budgets(c);
  EXPECT_NE(lowered.find("push.max_series 4096 -> "), std::string::npos) << lowered;
  // The history's bound for 36,000 records (every value a raw float, chunk
  // headers and slack) and the rest of a series' state.
  const double per_series = static_cast<double>(History::budget_bytes(1, 36000) - History::budget_bytes(0, 36000)) + 1100;
  EXPECT_GT(per_series, 36000.0 * 4 + 1100);
  const double held = static_cast<double>(c.push.max_series + c.source.scrape.max_series_total) * per_series;
  EXPECT_LE(held, static_cast<double>(c.outside_history_bytes));
  EXPECT_GT(held, 0.95 * static_cast<double>(c.outside_history_bytes));  // lowered no more than needed
  EXPECT_EQ(c.push.max_series, 483);  // as docs/limits.md says
  EXPECT_EQ(c.push.max_series_per_job, c.push.max_series / 2);  // in proportion
  EXPECT_EQ(fit_series_budgets(c), "");  // and then it fits

  AgentConfig roomy;
  roomy.interval_ms = 100;
  roomy.outside_history_bytes = int64_t{2} << 30;
  EXPECT_EQ(fit_series_budgets(roomy), "");
  EXPECT_EQ(roomy.push.max_series, 4096);

  AgentConfig tiny;  // never below 16 series
  tiny.outside_history_bytes = 1 << 20;
  tiny.history_ms = 30LL * 24 * 3600 * 1000;
  fit_series_budgets(tiny);
  EXPECT_EQ(tiny.push.max_series, 16);
  EXPECT_EQ(tiny.source.scrape.max_series, 16);
}

TEST(Config, DefaultSourcesAreTheRegistrysEnabledByDefault) {
  std::vector<std::string> enabled;
  for (const SourceEntry& e : source_entries()) {
    if (e.enabled_by_default) enabled.emplace_back(e.name);
  }
  EXPECT_EQ(AgentConfig{}.sources, enabled);
  EXPECT_EQ(enabled, (std::vector<std::string>{"nvml", "host"}));  // what docs/config.md shows
}

}  // namespace
}  // namespace gpulens::cli
