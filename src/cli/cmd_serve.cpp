// `gpulens serve`: run the agent until SIGINT/SIGTERM. SIGHUP re-reads the
// config file (with the command line's flags over it again), applies the
// keys that can change while running (cli/reload.h) and names those that
// need a restart, in one "reload" log line; a file that does not load or
// validate keeps the running configuration, with the reason. It never
// stops the agent.
#include <CLI/CLI.hpp>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agent/runtime.h"
#include "cli/command.h"
#include "cli/reload.h"
#include "cli/setup.h"
#include "cli/config.h"
#include "server/web_security.h"
#include "util/duration.h"
#include "util/log.h"

namespace gpulens::cli {
namespace {

// The push receiver of `serve --push`, configured from push: in the config.
Result<std::shared_ptr<push::PushStore>> make_push_store(const AgentConfig& c) {
  push::PushOptions o;
  o.ttl_ms = c.push.ttl_ms;
  o.proc_root = c.source.host.proc_root;
  auto n = [](int64_t v) { return static_cast<size_t>(v); };
  o.limits = {.max_body_bytes = n(c.push.max_body_bytes),
              .max_series_per_push = n(c.push.max_series_per_push),
              .max_series_per_group = n(c.push.max_series_per_group),
              .max_series_per_job = n(c.push.max_series_per_job),
              .max_series = n(c.push.max_series),
              .max_groups = n(c.push.max_groups),
              .max_labels = n(c.push.max_labels),
              .max_label_length = n(c.push.max_label_length)};
  if (!c.push.token_file.empty()) {
    std::ifstream in(c.push.token_file, std::ios::binary);
    if (!in) return not_found("push.token_file: cannot read " + c.push.token_file);
    std::stringstream buf;
    buf << in.rdbuf();
    o.token = buf.str();
    while (!o.token.empty() && (o.token.back() == '\n' || o.token.back() == '\r' || o.token.back() == ' ')) {
      o.token.pop_back();
    }
    if (o.token.empty()) return invalid_argument("push.token_file: " + c.push.token_file + " is empty");
  }
  return std::make_shared<push::PushStore>(std::move(o));
}

// The file, then the flags over it, validated; at start and again on every
// SIGHUP.
struct ServeFlags {
  CommonFlags common;

  Result<AgentConfig> resolve() const {
    auto config = common.resolve();
    if (!config) return config.status();
    if (std::string lowered = fit_series_budgets(*config); !lowered.empty()) {
      log::info("series_budgets_lowered",
                {{"lowered", lowered},
                 {"why", "the history of series from outside must fit outside_history_bytes (" +
                             std::to_string(config->outside_history_bytes) + ") at this interval and history"}});
    }
    return config;
  }
};

// Every remote_write.* key, through the one key table.
bool same_remote_write(const RemoteWriteConfig& a, const RemoteWriteConfig& b) {
  AgentConfig x, y;
  x.remote_write = a;
  y.remote_write = b;
  for (const ConfigKey& k : config_keys()) {
    if (k.key.starts_with("remote_write.") && k.show(x) != k.show(y)) return false;
  }
  return true;
}

void configure_log(const AgentConfig& c) {
  log::Options log_options;
  log::parse_level(c.log.level, log_options.level);
  log::parse_format(c.log.format, log_options.format);
  log::configure(log_options);
}

// SIGHUP: what changed is applied or named; `running` becomes what runs.
void reload(const ServeFlags& flags, AgentConfig& running, AgentRuntime& runtime) {
  Agent& agent = runtime.agent();
  // The web config (TLS, users, headers) is re-read on every SIGHUP; a bad
  // one keeps the running one.
  if (Status s = agent.reload_web_config(); !s) {
    log::warn("reload", {{"signal", "SIGHUP"}, {"part", "web config"}, {"result", "kept the running web config"},
                         {"reason", s.message()}});
  }
  const std::string file = running.path.empty() ? "(no config file)" : running.path;
  auto fresh = flags.resolve();
  if (!fresh) {
    log::warn("reload", {{"signal", "SIGHUP"}, {"file", file}, {"result", "kept the running configuration"},
                         {"reason", fresh.status().message()}});
    return;
  }
  ReloadPlan plan = plan_reload(running, *fresh);
  // A remote_write section that differs starts a new writer and stops the old one.
  std::optional<RemoteWriteOptions> remote_write;
  if (!same_remote_write(plan.next.remote_write, running.remote_write)) {
    remote_write = runtime_settings(plan.next, runtime.host()).remote_write;
  }
  if (Status s = runtime.apply(plan.next.diagnose, plan.next.profile_on, remote_write); !s) {
    log::warn("reload", {{"signal", "SIGHUP"}, {"file", file}, {"result", "kept the running configuration"},
                         {"reason", s.message()}});
    return;
  }
  {
    SourceOptions sources = plan.next.source;
    sources.scrape.client = plan.next.scrape_client.options(sources.scrape.timeout_ms);
    if (Status s = agent.reconfigure_sources(sources); !s) {
      log::warn("reload", {{"signal", "SIGHUP"}, {"file", file}, {"part", "sources"},
                           {"result", "kept the running scrape targets"}, {"reason", s.message()}});
      plan.next.source.scrape = running.source.scrape;
      plan.next.scrape_client = running.scrape_client;
    }
  }
  if (plan.next.log.level != running.log.level || plan.next.log.format != running.log.format) {
    configure_log(plan.next);
  }
  running = std::move(plan.next);
  const bool restart = !plan.needs_restart.empty();
  (restart ? log::warn : log::info)(
      "reload", {{"signal", "SIGHUP"}, {"file", file},
                 {"result", plan.applied.empty() ? "nothing to apply" : "applied"},
                 {"applied", join_keys(plan.applied)},
                 {"needs_restart", restart ? join_keys(plan.needs_restart) + " (running values kept)" : "none"}});
}

}  // namespace

int run_serve(int argc, char** argv) {
  CLI::App app{"Run the agent: sample every GPU and the host, serve /metrics and the JSON API.", "gpulens serve"};
  ServeFlags flags;
  std::string prefill;
  flags.common.add_to(app, FlagScope::kServe);
  app.add_option("--sim-prefill", prefill,
                 "simulator only: start with this much history (e.g. 1h), computed at once on a virtual clock "
                 "(demos, tests of the web page)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto config = flags.resolve();
  if (!config) {
    std::cerr << "gpulens serve: " << config.status().message() << "\n";
    return kExitUsage;
  }
  configure_log(*config);
  {
    std::string sources;
    for (const auto& n : config->sources) sources += (sources.empty() ? "" : ",") + n;
    log::info("config", {{"file", config->path.empty() ? "(none)" : config->path}, {"listen", config->listen},
                         {"interval", format_duration(config->interval_ms)},
                         {"history", format_duration(config->history_ms)}, {"sources", sources},
                         {"remote_write", config->remote_write.url.empty() ? "off" : config->remote_write.url},
                         {"log_level", config->log.level}});
  }

  // Block the stop signals before any thread starts, then wait for them here.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  AgentOptions options{.listen = config->listen, .interval_ms = config->interval_ms, .history_ms = config->history_ms,
                       .dcgm_names = config->dcgm_names,
                       .dcgm_naming = config->dcgm_naming == "4.9" ? DcgmGeneration::kDcgm49
                                                                   : DcgmGeneration::kClassic,
                       .dcgm_host_label = config->dcgm_hostname_label == "none" ? DcgmHostLabel::kNone
                                          : config->dcgm_hostname_label == "hostname"
                                              ? DcgmHostLabel::kLowercase
                                              : DcgmHostLabel::kHostname,
                       .selection = nullptr,
                       .scenario_label = ""};
  if (config->push.enabled) {
    auto store = make_push_store(*config);
    if (!store) {
      std::cerr << "gpulens serve: " << store.status().message() << "\n";
      return kExitUsage;
    }
    options.push = *store;
  }
  options.allowed_hosts = config->allowed_hosts;
  if (!config->web_config_file.empty()) {
    auto security = WebSecurity::open(config->web_config_file);
    if (!security) {
      std::cerr << "gpulens serve: web_config_file: " << security.status().message() << "\n";
      return kExitUsage;
    }
    options.security = *security;
  }
  auto agent = make_agent(*config, options, false);
  if (!agent) {
    std::cerr << "gpulens serve: " << agent.status().message() << "\n";
    return kExitFailure;
  }
  if (!prefill.empty()) {
    auto d = parse_duration_ms(prefill);
    if (!d || *d <= 0 || *d > config->history_ms) {
      std::cerr << "gpulens serve: --sim-prefill: " << (d ? "must be positive and at most --history" : d.status().message()) << "\n";
      return kExitUsage;
    }
    if (!(*agent)->simulated()) {
      std::cerr << "gpulens serve: --sim-prefill needs the simulator (--source sim)\n";
      return kExitUsage;
    }
    (*agent)->prefill(*d);
    std::cerr << "gpulens: history prefilled with " << format_duration(*d) << " of simulated samples (virtual clock)\n";
  }
  RuntimeSettings settings = runtime_settings(*config, agent_host(**agent));
  auto runtime = AgentRuntime::create(std::move(*agent), std::move(settings));
  if (!runtime) {
    std::cerr << "gpulens serve: " << runtime.status().message() << "\n";
    return kExitUsage;
  }
  if (Status s = (*runtime)->start(); !s) {
    std::cerr << "gpulens serve: " << s.message() << "\n";
    return kExitFailure;
  }
  {
    const auto web = options.security ? options.security->current() : nullptr;
    log::info("serving", {{"url", std::string(web && web->tls ? "https://" : "http://") + config->listen + "/metrics"},
                          {"web_config", config->web_config_file.empty() ? "none" : config->web_config_file},
                          {"basic_auth", web && !web->config.users.empty() ? "on" : "off"}});
  }
  if (options.push) {
    log::info("push receiver", {{"url", "http://" + config->listen + "/metrics/job/<job>"},
                                {"otlp", "http://" + config->listen + "/v1/metrics"},
                                {"ttl", format_duration(config->push.ttl_ms)},
                                {"token", config->push.token_file.empty() ? "none" : "bearer"}});
  }
  int sig = 0;
  for (;;) {
    sigwait(&stop_signals, &sig);
    if (sig != SIGHUP) break;
    reload(flags, *config, **runtime);
  }
  // Bounded: the listener and the sources stop at once (requests in flight
  // are cut), remote_write flushes for at most remote_write.flush_timeout.
  const auto t0 = std::chrono::steady_clock::now();
  log::info("stopping", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"},
                         {"bound", format_duration(config->remote_write.url.empty()
                                                       ? 0
                                                       : config->remote_write.flush_timeout_ms) + " + 1s"}});
  (*runtime)->stop();
  log::info("stopped", {{"took", std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                    std::chrono::steady_clock::now() - t0).count()) + "ms"}});
  return kExitOk;
}

}  // namespace gpulens::cli
