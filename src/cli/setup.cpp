// The flags shared by the agent commands, and opening the configured
// sources (no simulator fallback: see setup.h).
#include "cli/setup.h"

#include <algorithm>
#include <iostream>

#include "model/selection.h"
#include "rules/profile.h"
#include "sources/registry.h"
#include "util/duration.h"
#include "util/log.h"

namespace gpulens::cli {

void CommonFlags::add_to(CLI::App& app, FlagScope scope) {
  app.add_option("--config", config_path, "YAML config file (flags override it)");
  keys.add_to(app, scope);
}

Result<AgentConfig> CommonFlags::resolve() const {
  AgentConfig c;
  if (!config_path.empty()) {
    auto loaded = load_config(config_path);
    if (!loaded) return loaded.status();
    c = std::move(*loaded);
  }
  // Flags go through the same checks as the file's keys.
  if (Status s = keys.apply(c); !s) return s;
  auto problems = validate(c);
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    return invalid_argument((c.path.empty() ? std::string() : c.path + ": ") + all);
  }
  return c;
}

namespace {

bool has_gpu_source(Agent& agent) {
  std::lock_guard lock(agent.live().mutex());
  for (const auto& st : agent.live().sources()) {
    const SourceEntry* e = find_source(st.name);
    if (e && e->gpu_source) return true;
  }
  return false;
}

Result<std::unique_ptr<Agent>> open_agent(const std::vector<std::string>& names, const AgentConfig& config,
                                          AgentOptions options, std::vector<std::string>& notes) {
  std::vector<std::unique_ptr<Source>> sources;
  SourceOptions source_options = config.source;
  source_options.scrape.client = config.scrape_client.options(config.source.scrape.timeout_ms);
  for (const auto& n : names) {
    sources.push_back(find_source(n)->make(source_options));
    if (n == "sim") options.scenario_label = config.source.sim.scenario;
  }
  auto agent = std::make_unique<Agent>(options, std::move(sources));
  if (Status s = agent->open(notes); !s) return s;
  return agent;
}

}  // namespace

Result<std::unique_ptr<Agent>> make_agent(const AgentConfig& config, AgentOptions options, bool quiet) {
  const std::vector<std::string>& names = config.sources;
  // snapshot and record (quiet) print their own messages: only warnings log.
  log::Options log_options;
  log::parse_level(config.log.level, log_options.level);
  log::parse_format(config.log.format, log_options.format);
  if (quiet) log_options.level = std::max(log_options.level, log::Level::kWarn);
  log::configure(log_options);
  std::vector<std::string> notes;
  if (!config.collectors.empty() || config.profile != "full") {
    auto sel = config.collectors.empty() ? profile(config.profile) : load_collectors(config.collectors);
    if (!sel) return sel.status();
    if (!quiet) {
      for (const auto& note : sel->notes) std::cerr << "gpulens: " << note << "\n";
      // What the live diagnosis will report as not assessed, said once up front.
      for (const auto& c : rules::unassessed_causes(*sel)) {
        std::cerr << "gpulens: " << (config.collectors.empty() ? "profile " + config.profile : config.collectors)
                  << ": not assessed: " << c.cause << ": " << c.reason << "\n";
      }
    }
    options.selection = std::make_shared<const FieldSelection>(std::move(*sel));
  }
  auto agent = open_agent(names, config, options, notes);
  if (!agent) return agent.status();
  if (!quiet) {
    for (const auto& note : notes) std::cerr << "gpulens: " << note << "\n";
  }
  const bool sim = std::find(names.begin(), names.end(), "sim") != names.end();
  const bool host = std::find(names.begin(), names.end(), "host") != names.end();
  if (sim && !quiet) {
    std::cerr << "gpulens: running the SIMULATOR with scenario \"" << config.source.sim.scenario
              << "\"; every GPU value is made up and /metrics carries gpulens_simulated 1.\n";
  }
  if (sim && host) {
    std::cerr << "gpulens: warning: sim and host both report host_* series; the last to sample wins\n";
  }
  bool wanted_gpu = false;
  for (const auto& n : names) wanted_gpu |= find_source(n)->gpu_source;
  if (wanted_gpu && !has_gpu_source(**agent)) {
    // No silent simulator: made-up numbers must be asked for.
    return not_found("no GPU source could start (" + (notes.empty() ? std::string("no GPU found") : notes.front()) +
                     "); for the simulator, run with --source sim");
  }
  return agent;
}

RuntimeSettings runtime_settings(const AgentConfig& config, const std::string& host) {
  RuntimeSettings settings{.diagnose = config.diagnose, .profile_on = config.profile_on, .remote_write = {}};
  const RemoteWriteConfig& c = config.remote_write;
  RemoteWriteOptions& o = settings.remote_write;
  o.url = c.url;
  o.interval_ms = c.interval_ms > 0 ? c.interval_ms : config.interval_ms;
  o.external_labels = {{"instance", host}, {"job", c.job}};
  o.queue_max_samples = static_cast<size_t>(c.queue_max_samples);
  o.max_samples_per_send = static_cast<size_t>(c.max_samples_per_send);
  o.timeout_ms = c.timeout_ms;
  o.min_backoff_ms = c.min_backoff_ms;
  o.max_backoff_ms = c.max_backoff_ms;
  o.flush_timeout_ms = c.flush_timeout_ms;
  const HttpClientOptions client = c.client.options(c.timeout_ms);
  o.tls = client.tls;
  o.auth = client.auth;
  return settings;
}

}  // namespace gpulens::cli
