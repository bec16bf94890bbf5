// Source selection and the simulator fallback.
#include "cli/setup.h"

#include <algorithm>
#include <iostream>

#include "model/selection.h"
#include "rules/profile.h"
#include "sources/registry.h"
#include "util/duration.h"
#include "util/log.h"

namespace gpulens::cli {

void CommonFlags::add_to(CLI::App& app) {
  app.add_option("--config", config_path, "YAML config file (flags override it)");
  app.add_option("--source", sources, "comma-separated sources (nvml, host, kubelet, scrape, kmsg, sim); default: nvml,host. "
                                      "Without a GPU, ask for the simulator: --source sim");
  app.add_option("--scrape", scrape,
                 "with --source ...,scrape: an exporter's URL to read (dcgm-exporter, node_exporter, vLLM, SGLang, "
                 "TGI, Triton); repeat for more")
      ->take_all()
      ->allow_extra_args(false);
  app.add_option("--scenario", scenario, "simulator scenario: a name in scenarios/ or a YAML file");
  app.add_option("--interval", interval, "sampling interval, e.g. 1s, 100ms (at least 100ms)");
  app.add_option("--seed", seed, "simulator seed");
  app.add_option("--proc-root", proc_root, "procfs root (default /proc)");
  app.add_option("--sys-root", sys_root, "sysfs root (default /sys)");
  app.add_option("--nvml-library", nvml_library, "path of libnvidia-ml.so.1");
  app.add_option("--hpc-job-mapping-dir", hpc_job_mapping_dir,
                 "Slurm's GPU -> job mapping directory (dcgm-exporter's format), for gpu_job_info");
  app.add_flag("--kube-owner-labels", kube_owner_labels,
               "with --source ...,kubelet: the pods' owner/job labels from the Kubernetes API server, for gpu_job_info");
  app.add_option("--kube-api-url", kube_api_url, "the Kubernetes API server (default: in-cluster)");
  app.add_option("--node-name", node_name, "this node's name for --kube-owner-labels (default: $NODE_NAME)");
  app.add_option("--kmsg-path", kmsg_path, "kernel log the kmsg source tails (default /dev/kmsg; a file or FIFO in tests)");
  app.add_option("--profile", profile,
                 "GPU fields collected: minimal (8 series per GPU), standard (what the diagnosis and the alert "
                 "rules read), full (default: every field)");
  app.add_option("--collectors", collectors,
                 "dcgm-exporter counters CSV (name, type, help): exactly these DCGM names and the GPU fields "
                 "they read; instead of --profile");
  app.add_option("--log-level", log_level, "debug, info (default), warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--log-format", log_format, "text (default) or json, one event per line on stderr")
      ->check(CLI::IsMember({"text", "json"}));
}

Result<AgentConfig> CommonFlags::resolve() const {
  AgentConfig c;
  if (!config_path.empty()) {
    auto loaded = load_config(config_path);
    if (!loaded) return loaded.status();
    c = std::move(*loaded);
  }
  // Flags go through the same checks as the file's keys.
  const std::pair<const char*, const std::string*> flags[] = {
      {"sources", &sources},          {"source.sim.scenario", &scenario}, {"interval", &interval},
      {"source.sim.seed", &seed},     {"source.host.proc_root", &proc_root},
      {"source.nvml.proc_root", &proc_root}, {"source.host.sys_root", &sys_root},
      {"source.nvml.library", &nvml_library}, {"log.level", &log_level}, {"log.format", &log_format},
      {"profile", &profile}, {"collectors", &collectors}, {"source.kmsg.path", &kmsg_path},
      {"source.nvml.hpc_job_mapping_dir", &hpc_job_mapping_dir},
      {"source.kubelet.api_url", &kube_api_url},          {"source.kubelet.node_name", &node_name},
  };
  if (kube_owner_labels) {
    if (Status s = set_key(c, "source.kubelet.owner_labels", "true", "--kube-owner-labels"); !s) return s;
  }
  std::string scrape_targets;
  for (const auto& t : scrape) scrape_targets += (scrape_targets.empty() ? "" : ",") + t;
  if (!scrape_targets.empty()) {
    if (Status s = set_key(c, "source.scrape.targets", scrape_targets, "--scrape"); !s) return s;
  }
  for (const auto& [key, value] : flags) {
    if (value->empty()) continue;
    const ConfigKey* k = find_key(key);
    const std::string flag = k && !k->flag.empty() ? k->flag : "--proc-root";
    if (Status s = set_key(c, key, *value, flag); !s) return s;
  }
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

}  // namespace gpulens::cli
