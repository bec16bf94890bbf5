// Source selection and the simulator fallback.
#include "cli/setup.h"

#include <algorithm>
#include <iostream>

#include "sources/registry.h"
#include "util/duration.h"

namespace gpulens::cli {

void CommonFlags::add_to(CLI::App& app) {
  app.add_option("--config", config_path, "YAML config file (flags override it)");
  app.add_option("--source", sources, "comma-separated sources (nvml, host, sim); default: nvml,host, "
                                      "falling back to sim when no NVIDIA driver is present");
  app.add_option("--scenario", scenario, "simulator scenario: a name in scenarios/ or a YAML file");
  app.add_option("--interval", interval, "sampling interval, e.g. 1s, 100ms");
  app.add_option("--seed", seed, "simulator seed")->each([this](const std::string&) { seed_set = true; });
  app.add_option("--proc-root", proc_root, "procfs root (default /proc)");
  app.add_option("--sys-root", sys_root, "sysfs root (default /sys)");
  app.add_option("--nvml-library", nvml_library, "path of libnvidia-ml.so.1");
}

Result<AgentConfig> CommonFlags::resolve() const {
  AgentConfig c;
  if (!config_path.empty()) {
    auto loaded = load_config(config_path);
    if (!loaded) return loaded.status();
    c = std::move(*loaded);
  }
  if (!sources.empty()) {
    c.sources.clear();
    std::stringstream ss(sources);
    for (std::string s; std::getline(ss, s, ',');) {
      if (!s.empty()) c.sources.push_back(s);
    }
  }
  if (!scenario.empty()) c.source.sim.scenario = scenario;
  if (!interval.empty()) {
    auto ms = parse_duration_ms(interval);
    if (!ms) return invalid_argument("--interval: " + ms.status().message());
    c.interval_ms = *ms;
  }
  if (seed_set) c.source.sim.seed = seed;
  if (!proc_root.empty()) c.source.host.proc_root = c.source.nvml.proc_root = proc_root;
  if (!sys_root.empty()) c.source.host.sys_root = sys_root;
  if (!nvml_library.empty()) c.source.nvml.library = nvml_library;
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
  for (const auto& n : names) {
    sources.push_back(find_source(n)->make(config.source));
    if (n == "sim") options.scenario_label = config.source.sim.scenario;
  }
  auto agent = std::make_unique<Agent>(options, std::move(sources));
  if (Status s = agent->open(notes); !s) return s;
  return agent;
}

}  // namespace

Result<std::unique_ptr<Agent>> make_agent(const AgentConfig& config, AgentOptions options, bool quiet) {
  std::vector<std::string> names = config.sources;
  const bool explicit_sources = !names.empty();
  if (!explicit_sources) {
    for (const auto& e : source_entries()) {
      if (e.enabled_by_default) names.push_back(std::string(e.name));
    }
  }
  std::vector<std::string> notes;
  auto agent = open_agent(names, config, options, notes);
  if (!agent) return agent.status();
  if (explicit_sources) {
    for (const auto& note : notes) std::cerr << "gpulens: " << note << "\n";
    const bool sim = std::find(names.begin(), names.end(), "sim") != names.end();
    const bool host = std::find(names.begin(), names.end(), "host") != names.end();
    if (sim && host) {
      std::cerr << "gpulens: warning: sim and host both report host_* series; the last to sample wins\n";
    }
    bool wanted_gpu = false;
    for (const auto& n : names) wanted_gpu |= find_source(n)->gpu_source;
    if (wanted_gpu && !has_gpu_source(**agent)) {
      return not_found("no GPU source could start" + (notes.empty() ? "" : ": " + notes.front()));
    }
    return agent;
  }
  if (has_gpu_source(**agent)) {
    if (!quiet) {
      for (const auto& note : notes) std::cerr << "gpulens: " << note << "\n";
    }
    return agent;
  }

  // No driver on this machine: run the simulator, plainly labelled as such.
  std::cerr << "gpulens: no NVIDIA GPU available (" << (notes.empty() ? "no GPU source" : notes.front()) << ").\n"
            << "gpulens: running the SIMULATOR with scenario \"" << config.source.sim.scenario
            << "\"; every GPU value is made up and /metrics carries gpulens_simulated 1.\n";
  // The simulator also plays the host side of its story (CPU, IO, network),
  // so the real host source is left out rather than mixed in.
  std::vector<std::string> fallback{"sim"};
  notes.clear();
  return open_agent(fallback, config, options, notes);
}

}  // namespace gpulens::cli
