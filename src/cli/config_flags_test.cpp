// The flags made from the key table: one option per flag with the table's
// help, a value lands in every key that shares the flag, with the file's
// checks, and only serve gets serve's flags.
#include "cli/config_flags.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <set>

namespace gpulens::cli {
namespace {

// Parses `args` with the flags of `scope` and applies them over the defaults.
Result<AgentConfig> flags_over_defaults(FlagScope scope, const std::string& args) {
  CLI::App app;
  KeyFlags flags;
  flags.add_to(app, scope);
  app.parse(args, false);
  AgentConfig c;
  if (Status s = flags.apply(c); !s) return s;
  return c;
}

std::set<std::string> option_names(FlagScope scope) {
  CLI::App app;
  KeyFlags flags;
  flags.add_to(app, scope);
  std::set<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_name() != "--help") names.insert(o->get_name());
  }
  return names;
}

TEST(ConfigFlags, EachFlagIsDeclaredOnceOnItsFirstKey) {
  std::set<std::string> seen;
  for (const ConfigKey& k : config_keys()) {
    if (k.flag.empty()) {
      EXPECT_EQ(k.flag_for, FlagScope::kNone) << k.key;
      continue;
    }
    const std::string name = k.flag.substr(0, k.flag.find('='));
    if (seen.insert(name).second) {
      EXPECT_NE(k.flag_for, FlagScope::kNone) << k.key << ": the first key of " << name << " says who takes it";
      EXPECT_FALSE(k.flag_help.empty()) << k.key;
    } else {
      EXPECT_EQ(k.flag_for, FlagScope::kNone) << k.key << ": " << name << " is declared on its first key";
      EXPECT_TRUE(k.flag_help.empty()) << k.key;
    }
  }
  EXPECT_EQ(seen.size(), 24u);
}

TEST(ConfigFlags, ServeGetsItsOwnFlagsTheOtherCommandsTheSharedOnes) {
  const auto shared = option_names(FlagScope::kAgent);
  const auto serve = option_names(FlagScope::kServe);
  for (const char* f : {"--source", "--scrape", "--interval", "--proc-root", "--log-level", "--kube-owner-labels"}) {
    EXPECT_TRUE(shared.count(f)) << f;
    EXPECT_TRUE(serve.count(f)) << f;
  }
  for (const char* f : {"--listen", "--history", "--dcgm-names", "--remote-write", "--web-config-file", "--push"}) {
    EXPECT_FALSE(shared.count(f)) << f;
    EXPECT_TRUE(serve.count(f)) << f;
  }
  EXPECT_EQ(shared.size(), 17u);
  EXPECT_EQ(serve.size(), 24u);
}

TEST(ConfigFlags, ValuesLandInTheirKeys) {
  auto c = flags_over_defaults(FlagScope::kServe,
                               "--listen 0.0.0.0:9500 --interval 200ms --source sim,host,scrape "
                               "--scrape http://127.0.0.1:9100/metrics --scrape http://127.0.0.1:9101/metrics "
                               "--proc-root /host/proc --push --kube-owner-labels --log-level debug");
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->listen, "0.0.0.0:9500");
  EXPECT_EQ(c->interval_ms, 200);
  EXPECT_EQ(c->sources, (std::vector<std::string>{"sim", "host", "scrape"}));
  EXPECT_EQ(c->source.scrape.targets,
            (std::vector<std::string>{"http://127.0.0.1:9100/metrics", "http://127.0.0.1:9101/metrics"}));
  EXPECT_EQ(c->source.host.proc_root, "/host/proc");  // one flag, both keys
  EXPECT_EQ(c->source.nvml.proc_root, "/host/proc");
  EXPECT_TRUE(c->push.enabled);
  EXPECT_TRUE(c->source.kubelet.owner_labels);
  EXPECT_EQ(c->log.level, "debug");
  EXPECT_FALSE(c->dcgm_names);  // not given: the default
  EXPECT_EQ(c->history_ms, AgentConfig{}.history_ms);
}

TEST(ConfigFlags, ASwitchWithAValue) {
  auto alone = flags_over_defaults(FlagScope::kServe, "--dcgm-names");
  ASSERT_TRUE(alone) << alone.status().message();
  EXPECT_TRUE(alone->dcgm_names);
  EXPECT_EQ(alone->dcgm_naming, "classic");
  auto valued = flags_over_defaults(FlagScope::kServe, "--dcgm-names=4.9");
  ASSERT_TRUE(valued) << valued.status().message();
  EXPECT_TRUE(valued->dcgm_names);
  EXPECT_EQ(valued->dcgm_naming, "4.9");
  EXPECT_EQ(flags_over_defaults(FlagScope::kServe, "--dcgm-names=5.0").status().message(),
            "--dcgm-names=NAMING: \"5.0\" is not one of classic,4.9");
}

TEST(ConfigFlags, FlagsGetTheFileChecksAndTheErrorNamesTheFlag) {
  EXPECT_EQ(flags_over_defaults(FlagScope::kAgent, "--interval 10ms").status().message(),
            "--interval: 10ms is out of range 100ms..1h");
  EXPECT_EQ(flags_over_defaults(FlagScope::kServe, "--listen 0.0.0.0:99999").status().message(),
            "--listen: \"0.0.0.0:99999\": port 99999 is out of range 1..65535");
  EXPECT_EQ(flags_over_defaults(FlagScope::kAgent, "--seed nan").status().message(),
            "--seed: \"nan\" is not a number");
  EXPECT_EQ(flags_over_defaults(FlagScope::kAgent, "--source gpu").status().message(),
            "--source: unknown \"gpu\" (known: sim,nvml,host,kubelet,scrape,kmsg)");
  EXPECT_THROW(flags_over_defaults(FlagScope::kAgent, "--log-level loud"), CLI::ValidationError);
  EXPECT_THROW(flags_over_defaults(FlagScope::kAgent, "--listen 0.0.0.0:9500"), CLI::ExtrasError);
}

}  // namespace
}  // namespace gpulens::cli
