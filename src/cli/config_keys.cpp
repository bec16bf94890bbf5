// THE declaration of every configuration key: name, type, range, default,
// help, and the flag that sets it too (which commands take it, its --help
// line). The validator (config.cpp), the command-line flags of serve,
// snapshot, record and top (config_flags.cpp), the effective configuration
// of `check-config`, the key reference in docs/config.md (`gpulens
// check-config --keys`) and its docs test all read this table; nothing else
// declares a key or a flag of one.
//
// Adding a key is one row here (plus its field in AgentConfig or the option
// struct it belongs to):
//
//   key("remote_write.timeout", KeyType::kDuration, FIELD(remote_write.timeout_ms),
//       "per request: connect, send and response together", {.min = 100, .max = 600'000}),
//
// With a flag: {.flag = "--listen", .flag_for = FlagScope::kServe, .flag_help = "..."};
// kAgent for a flag every command running the sources takes. A second key
// set by the same flag names it too, without flag_for and flag_help.
//
// FIELD(member) names the AgentConfig member the value lands in; its C++
// type must match the key type: std::string for text/path/choice/url/listen,
// int64_t (milliseconds) for durations, int64_t or uint64_t for integers,
// double for numbers and ratios, bool, std::vector<std::string> for lists.
// The default is whatever AgentConfig{} holds; the validator checks the
// value against the type and Bounds before `set` sees it. Then paste the
// output of `gpulens check-config --keys` into docs/config.md (the docs test
// fails until the two agree). Keys of `diagnose:` and `rules:` come from their own tables
// (src/diagnose/thresholds.cpp, src/rules/options.cpp) and are appended here.
#include <string>
#include <variant>
#include <vector>

#include "cli/config.h"
#include "model/series.h"
#include "sources/registry.h"
#include "util/duration.h"

namespace gpulens::cli {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;
using Accessor = std::variant<std::string& (*)(AgentConfig&), int64_t& (*)(AgentConfig&),
                              uint64_t& (*)(AgentConfig&), double& (*)(AgentConfig&), bool& (*)(AgentConfig&),
                              std::vector<std::string>& (*)(AgentConfig&), Headers& (*)(AgentConfig&)>;

#define FIELD(member) (+[](AgentConfig& c) -> decltype(auto) { return (c.member); })

struct Bounds {
  double min = 0, max = 0;
  std::string choices = "";
  const char* flag = "";
  FlagScope flag_for = FlagScope::kNone;
  const char* flag_help = "";
};

std::string plain_number(double v) {
  std::string s = std::to_string(v);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

// The value in `text` was checked by the validator for `type`; store it.
ConfigKey key(std::string name, KeyType type, Accessor field, std::string help, Bounds b = {}) {
  ConfigKey k{.key = std::move(name), .type = type, .help = std::move(help), .min = b.min, .max = b.max,
              .choices = b.choices, .flag = b.flag, .flag_for = b.flag_for, .flag_help = b.flag_help, .set = {},
              .show = {}};
  k.set = [field, type](AgentConfig& c, const std::string& text) -> Status {
    return std::visit(
        [&](auto get) -> Status {
          auto& dst = get(c);
          using T = std::decay_t<decltype(dst)>;
          if constexpr (std::is_same_v<T, std::string>) {
            dst = text;
          } else if constexpr (std::is_same_v<T, bool>) {
            dst = text == "true";
          } else if constexpr (std::is_same_v<T, double>) {
            dst = std::stod(text);
          } else if constexpr (std::is_same_v<T, Headers>) {
            dst.clear();  // "name\tvalue\n" per header, as the YAML reader writes it
            size_t start = 0;
            while (start < text.size()) {
              size_t nl = text.find('\n', start);
              if (nl == std::string::npos) nl = text.size();
              const std::string line = text.substr(start, nl - start);
              const size_t tab = line.find('\t');
              if (tab == std::string::npos) return invalid_argument("expected a mapping of header name to value");
              dst.emplace_back(line.substr(0, tab), line.substr(tab + 1));
              start = nl + 1;
            }
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            dst.clear();
            size_t start = 0;
            while (start <= text.size()) {
              size_t comma = text.find(',', start);
              if (comma == std::string::npos) comma = text.size();
              if (comma > start) dst.push_back(text.substr(start, comma - start));
              start = comma + 1;
            }
          } else if (type == KeyType::kDuration) {
            auto ms = parse_duration_ms(text);
            if (!ms) return ms.status();
            dst = static_cast<T>(*ms);
          } else {
            dst = static_cast<T>(std::stod(text));
          }
          return Status::ok();
        },
        field);
  };
  k.show = [field, type](const AgentConfig& cc) -> std::string {
    AgentConfig& c = const_cast<AgentConfig&>(cc);  // accessors only read here
    return std::visit(
        [&](auto get) -> std::string {
          const auto& v = get(c);
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            return v;
          } else if constexpr (std::is_same_v<T, bool>) {
            return v ? "true" : "false";
          } else if constexpr (std::is_same_v<T, double>) {
            return plain_number(v);
          } else if constexpr (std::is_same_v<T, Headers>) {
            std::string out;
            for (const auto& [hname, val] : v) {
              out += (out.empty() ? "" : ", ") + hname + ": \"";
              append_escaped(out, val);
              out += '"';
            }
            return "{" + out + "}";
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            std::string out;
            for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
            return out;
          } else if (type == KeyType::kDuration) {
            return format_duration(static_cast<int64_t>(v));
          } else {
            return std::to_string(v);
          }
        },
        field);
  };
  return k;
}

constexpr double kHour = 3600e3;

std::string source_names() {
  std::string names;
  for (const auto& e : source_entries()) names += (names.empty() ? "" : ",") + std::string(e.name);
  return names;
}

// Prometheus's HTTP client keys under `P` ("remote_write." ...) for the
// ClientConfig `M` of AgentConfig.
#define CLIENT_KEYS(P, M)                                                                                          \
  key(P "tls_config.ca_file", kPath, FIELD(M.tls.ca_file),                                                       \
      "PEM CA bundle the server is verified against (empty: the system's CAs)"),                                 \
      key(P "tls_config.cert_file", kPath, FIELD(M.tls.cert_file), "PEM client certificate (with key_file)"),     \
      key(P "tls_config.key_file", kPath, FIELD(M.tls.key_file), "PEM key of the client certificate"),            \
      key(P "tls_config.server_name", kText, FIELD(M.tls.server_name),                                          \
          "name sent (SNI) and verified in the server's certificate (empty: the URL's host)"),                   \
      key(P "tls_config.insecure_skip_verify", kBool, FIELD(M.tls.insecure_skip_verify),                        \
          "do not verify the server's certificate at all"),                                                      \
      key(P "basic_auth.username", kText, FIELD(M.auth.username), "basic auth user"),                           \
      key(P "basic_auth.password", kText, FIELD(M.auth.password), "basic auth password"),                       \
      key(P "basic_auth.password_file", kPath, FIELD(M.auth.password_file),                                     \
          "file holding the basic auth password, re-read on every request"),                                     \
      key(P "authorization.type", kText, FIELD(M.auth.authorization_type), "scheme of the Authorization header"), \
      key(P "authorization.credentials", kText, FIELD(M.auth.credentials),                                      \
          "Authorization: <type> <credentials>"),                                                                \
      key(P "authorization.credentials_file", kPath, FIELD(M.auth.credentials_file),                            \
          "file holding the credentials, re-read on every request"),                                             \
      key(P "bearer_token", kText, FIELD(M.bearer_token), "Authorization: Bearer <token>"),                     \
      key(P "bearer_token_file", kPath, FIELD(M.bearer_token_file),                                             \
          "file holding the bearer token, re-read on every request"),                                            \
      key(P "headers", kHeaders, FIELD(M.auth.headers), "extra request headers, e.g. {X-Scope-OrgID: tenant-a}")

std::vector<ConfigKey> agent_keys() {
  using enum KeyType;
  return {
      key("listen", kListen, FIELD(listen), "HOST:PORT the agent serves /metrics and the API on; 0.0.0.0:9400 for all",
          {.flag = "--listen", .flag_for = FlagScope::kServe,
           .flag_help = "HOST:PORT to serve on (default 127.0.0.1:9400; 0.0.0.0:9400 for all)"}),
      key("web_config_file", kPath, FIELD(web_config_file),
          "exporter-toolkit web config (TLS, basic auth, headers) for the listener; empty: plain HTTP",
          {.flag = "--web-config-file", .flag_for = FlagScope::kServe,
           .flag_help = "exporter-toolkit web config (web-config.yml): TLS, basic auth, response headers for every "
                        "route"}),
      key("allowed_hosts", kList, FIELD(allowed_hosts),
          "Host names the web page and /api/* answer to besides IP addresses, localhost and this machine's "
          "names (a DNS-rebinding guard); [\"*\"]: any"),
      key("interval", kDuration, FIELD(interval_ms), "sampling interval",
          {.min = 100, .max = kHour, .flag = "--interval", .flag_for = FlagScope::kAgent,
           .flag_help = "sampling interval, e.g. 1s, 100ms (at least 100ms)"}),
      key("history", kDuration, FIELD(history_ms), "how much history to keep in memory (for diagnosis)",
          {.min = 1000, .max = 30 * 24 * kHour, .flag = "--history", .flag_for = FlagScope::kServe,
           .flag_help = "how much history to keep in memory (default 1h)"}),
      key("outside_history_bytes", kInteger, FIELD(outside_history_bytes),
          "memory the history of pushed and scraped series may take; at a finer interval or a longer history the "
          "push and scrape series budgets are lowered to fit it (docs/limits.md)",
          {.min = 1 << 20, .max = 1LL << 40}),
      key("sources", kList, FIELD(sources), "sources to run; without a GPU ask for the simulator with [sim]",
          {.choices = source_names(), .flag = "--source", .flag_for = FlagScope::kAgent,
           .flag_help = "comma-separated sources (nvml, host, kubelet, scrape, kmsg, sim); default: nvml,host. "
                        "Without a GPU, ask for the simulator: --source sim"}),
      key("dcgm_names", kBool, FIELD(dcgm_names), "also export dcgm-exporter's DCGM_FI_* names and labels",
          {.flag = "--dcgm-names", .flag_for = FlagScope::kServe,
           .flag_help = "also export dcgm-exporter's DCGM_FI_* names and labels: classic (alone, the default: "
                        "dcgm-exporter up to 4.8, NVIDIA's dashboard) or 4.9 (--dcgm-names=4.9: DCGM 4.7's names)"}),
      key("dcgm_naming", kChoice, FIELD(dcgm_naming),
          "DCGM names written with dcgm_names: classic (dcgm-exporter up to 4.8, what NVIDIA's dashboard 12239 and "
          "existing alert rules query) or 4.9 (DCGM 4.7's names and units, dcgm-exporter 4.9's defaults)",
          {.choices = "classic,4.9", .flag = "--dcgm-names=NAMING"}),
      key("dcgm_hostname_label", kChoice, FIELD(dcgm_hostname_label),
          "host label of DCGM names: Hostname (dcgm-exporter up to 4.5), hostname (newer releases), none",
          {.choices = "Hostname,hostname,none", .flag = "--dcgm-hostname-label", .flag_for = FlagScope::kServe,
           .flag_help = "host label of DCGM names: Hostname (dcgm-exporter up to 4.5), hostname (newer), none"}),
      key("profile", kChoice, FIELD(profile),
          "GPU fields collected: minimal (the article's 8 series per GPU), standard (all the diagnosis and the "
          "alert rules read), full (every field)",
          {.choices = "minimal,standard,full", .flag = "--profile", .flag_for = FlagScope::kAgent,
           .flag_help = "GPU fields collected: minimal (8 series per GPU), standard (what the diagnosis and the alert "
                        "rules read), full (default: every field)"}),
      key("collectors", kPath, FIELD(collectors),
          "dcgm-exporter counters CSV (name, type, help): the DCGM names exported and the GPU fields collected; "
          "instead of profile",
          {.flag = "--collectors", .flag_for = FlagScope::kAgent,
           .flag_help = "dcgm-exporter counters CSV (name, type, help): exactly these DCGM names and the GPU fields "
                        "they read; instead of --profile"}),
      key("log.level", kChoice, FIELD(log.level), "least severe log line written to stderr",
          {.choices = "debug,info,warn,error", .flag = "--log-level", .flag_for = FlagScope::kAgent,
           .flag_help = "debug, info (default), warn or error"}),
      key("log.format", kChoice, FIELD(log.format), "text (one line per event) or json (one object per line)",
          {.choices = "text,json", .flag = "--log-format", .flag_for = FlagScope::kAgent,
           .flag_help = "text (default) or json, one event per line on stderr"}),
      key("source.sim.scenario", kText, FIELD(source.sim.scenario), "simulator scenario: a name in scenarios/ or a YAML file",
          {.flag = "--scenario", .flag_for = FlagScope::kAgent,
           .flag_help = "simulator scenario: a name in scenarios/ or a YAML file"}),
      key("source.sim.scenario_dir", kPath, FIELD(source.sim.scenario_dir),
          "where scenario names are looked up (empty: the installed scenarios/)"),
      key("source.sim.seed", kInteger, FIELD(source.sim.seed), "simulator noise seed",
          {.min = 0, .max = 1e15, .flag = "--seed", .flag_for = FlagScope::kAgent,
           .flag_help = "simulator seed"}),
      key("source.sim.speed", kNumber, FIELD(source.sim.speed), "scenario seconds per wall-clock second",
          {.min = 0.01, .max = 1e4}),
      key("source.sim.kernel_log", kPath, FIELD(source.sim.kernel_log),
          "append the scenario's XIDs to this file as the NVIDIA driver's kernel-log lines, for the kmsg "
          "source to read (source.kmsg.path the same file); empty: off"),
      key("source.host.proc_root", kPath, FIELD(source.host.proc_root), "procfs root",
          {.flag = "--proc-root", .flag_for = FlagScope::kAgent,
           .flag_help = "procfs root (default /proc)"}),
      key("source.host.sys_root", kPath, FIELD(source.host.sys_root), "sysfs root",
          {.flag = "--sys-root", .flag_for = FlagScope::kAgent,
           .flag_help = "sysfs root (default /sys)"}),
      key("source.nvml.library", kPath, FIELD(source.nvml.library), "NVML library opened with dlopen",
          {.flag = "--nvml-library", .flag_for = FlagScope::kAgent,
           .flag_help = "path of libnvidia-ml.so.1"}),
      key("source.nvml.proc_root", kPath, FIELD(source.nvml.proc_root), "procfs root for process -> pod attribution",
          {.flag = "--proc-root"}),
      key("source.nvml.sys_root", kPath, FIELD(source.nvml.sys_root), "sysfs root for the NUMA node fallback"),
      key("source.nvml.kubelet_root", kPath, FIELD(source.nvml.kubelet_root), "kubelet root for pod and container names"),
      key("source.nvml.calibration", kPath, FIELD(source.nvml.calibration_file),
          "measured PCIe/NVLink peaks (JSON); empty: nominal peaks"),
      key("source.nvml.call_deadline", kDuration, FIELD(source.nvml.call_deadline_ms),
          "a collection slower than this is reported", {.min = 10, .max = 600e3}),
      key("source.nvml.slow_interval", kDuration, FIELD(source.nvml.slow_interval_ms),
          "how often the slow tier is read (energy, power limit, ECC, row remapping, PCIe replays, NVLink "
          "state, clock-event times, per-process SM share); 0s: every collection",
          {.min = 0, .max = kHour}),
      key("source.nvml.hpc_job_mapping_dir", kPath, FIELD(source.nvml.hpc_job_mapping_dir),
          "Slurm's GPU -> job mapping directory (dcgm-exporter's format: a file per GPU index with its job ids), "
          "read every 5 s into gpu_job_info; empty: off",
          {.flag = "--hpc-job-mapping-dir", .flag_for = FlagScope::kAgent,
           .flag_help = "Slurm's GPU -> job mapping directory (dcgm-exporter's format), for gpu_job_info"}),
      key("source.nvml.job_environ", kBool, FIELD(source.nvml.job_environ),
          "read the job keys (RANK, WORLD_SIZE, SLURM_JOB_ID, ...: docs/jobs.md) of each GPU process's "
          "environment into gpu_job_info; nothing else of it is kept"),
      key("source.kubelet.socket", kPath, FIELD(source.kubelet.socket), "the kubelet's PodResources v1 socket"),
      key("source.kubelet.refresh", kDuration, FIELD(source.kubelet.refresh_ms),
          "how often the kubelet is asked which pod holds which GPU; scrapes read the cached answer",
          {.min = 1000, .max = kHour}),
      key("source.kubelet.timeout", kDuration, FIELD(source.kubelet.timeout_ms),
          "deadline of each kubelet call (at most the refresh period)", {.min = 100, .max = 60e3}),
      key("source.kubelet.owner_labels", kBool, FIELD(source.kubelet.owner_labels),
          "read the owner/job labels of the node's pods from the Kubernetes API server into gpu_job_info "
          "(docs/jobs.md); needs get and list on pods",
          {.flag = "--kube-owner-labels", .flag_for = FlagScope::kAgent,
           .flag_help = "with --source ...,kubelet: the pods' owner/job labels from the Kubernetes API server, for "
                        "gpu_job_info"}),
      key("source.kubelet.api_url", kUrl, FIELD(source.kubelet.api_url),
          "the Kubernetes API server; empty: in-cluster, https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT",
          {.choices = "https", .flag = "--kube-api-url", .flag_for = FlagScope::kAgent,
           .flag_help = "the Kubernetes API server (default: in-cluster)"}),
      key("source.kubelet.node_name", kText, FIELD(source.kubelet.node_name),
          "this node's name, whose pods are listed; empty: $NODE_NAME",
          {.flag = "--node-name", .flag_for = FlagScope::kAgent,
           .flag_help = "this node's name for --kube-owner-labels (default: $NODE_NAME)"}),
      key("source.kubelet.token_file", kPath, FIELD(source.kubelet.token_file),
          "bearer token for the API server (re-read on every request)"),
      key("source.kubelet.ca_file", kPath, FIELD(source.kubelet.ca_file), "PEM CA the API server is verified against"),
      key("source.kubelet.owner_refresh", kDuration, FIELD(source.kubelet.owner_refresh_ms),
          "how often the node's pods are listed for their owner labels", {.min = 30e3, .max = kHour}),
      key("source.kubelet.owner_timeout", kDuration, FIELD(source.kubelet.owner_timeout_ms),
          "deadline of one list of the node's pods", {.min = 100, .max = 60e3}),
      key("source.scrape.targets", kList, FIELD(source.scrape.targets),
          "endpoints the scrape source reads (dcgm-exporter, node_exporter, vLLM, SGLang, TGI, Triton): "
          "http(s) URLs, each on its own thread; re-read on SIGHUP",
          {.flag = "--scrape", .flag_for = FlagScope::kAgent,
           .flag_help = "with --source ...,scrape: an exporter's URL to read (dcgm-exporter, node_exporter, vLLM, "
                        "SGLang, TGI, Triton); repeat for more"}),
      key("source.scrape.interval", kDuration, FIELD(source.scrape.interval_ms), "how often each target is scraped",
          {.min = 100, .max = kHour}),
      key("source.scrape.timeout", kDuration, FIELD(source.scrape.timeout_ms),
          "bound on one scrape: connect, request and the whole answer; a target slower than this is down",
          {.min = 100, .max = 60e3}),
      key("source.scrape.max_bytes", kInteger, FIELD(source.scrape.max_bytes),
          "largest answer read from a target; a bigger one is an error and the target is down",
          {.min = 1024, .max = 1 << 30}),
      key("source.scrape.max_series", kInteger, FIELD(source.scrape.max_series),
          "catalog series one target may set, those it set in the last 4 minutes included; the rest are dropped "
          "(docs/limits.md)",
          {.min = 1, .max = 1e6}),
      key("source.scrape.max_series_total", kInteger, FIELD(source.scrape.max_series_total),
          "catalog series all targets together may set, those set in the last 4 minutes included",
          {.min = 1, .max = 1e6}),
      key("source.scrape.max_labels", kInteger, FIELD(source.scrape.max_labels),
          "labels of a scraped series; one with more is dropped", {.min = 1, .max = 1024}),
      key("source.scrape.max_label_length", kInteger, FIELD(source.scrape.max_label_length),
          "bytes of a scraped label name or value; a series with a longer one is dropped", {.min = 16, .max = 65536}),
      CLIENT_KEYS("source.scrape.", scrape_client),
      key("source.kmsg.path", kPath, FIELD(source.kmsg.path),
          "kernel log the kmsg source tails: /dev/kmsg, or a file or FIFO with the same lines",
          {.flag = "--kmsg-path", .flag_for = FlagScope::kAgent,
           .flag_help = "kernel log the kmsg source tails (default /dev/kmsg; a file or FIFO in tests)"}),
      key("source.kmsg.replay", kBool, FIELD(source.kmsg.replay),
          "read the lines already in the kernel log at start (default: only the ones written from then on)"),
      key("remote_write.url", kUrl, FIELD(remote_write.url), "push every sample to this remote_write receiver (empty: off)",
          {.choices = "http,https", .flag = "--remote-write", .flag_for = FlagScope::kServe,
           .flag_help = "push every sample to this Prometheus remote_write URL (VictoriaMetrics, Mimir, Prometheus)"}),
      key("remote_write.interval", kDuration, FIELD(remote_write.interval_ms),
          "how often live values are queued; 0s: the sampling interval", {.min = 0, .max = kHour}),
      key("remote_write.job", kText, FIELD(remote_write.job), "job label added to every pushed series (with instance)"),
      key("remote_write.queue_max_samples", kInteger, FIELD(remote_write.queue_max_samples),
          "queue capacity in samples; the oldest are dropped when full", {.min = 1000, .max = 1e9}),
      key("remote_write.max_samples_per_send", kInteger, FIELD(remote_write.max_samples_per_send), "samples per request",
          {.min = 1, .max = 1e6}),
      key("remote_write.timeout", kDuration, FIELD(remote_write.timeout_ms),
          "per request: connect, send and response together", {.min = 100, .max = 600e3}),
      key("remote_write.min_backoff", kDuration, FIELD(remote_write.min_backoff_ms), "first retry delay; doubles",
          {.min = 1, .max = 600e3}),
      key("remote_write.max_backoff", kDuration, FIELD(remote_write.max_backoff_ms), "longest retry delay",
          {.min = 1, .max = 600e3}),
      key("remote_write.flush_timeout", kDuration, FIELD(remote_write.flush_timeout_ms),
          "on shutdown, how long queued samples are still sent; then the request in flight is cut", {.min = 0, .max = 600e3}),
      CLIENT_KEYS("remote_write.", remote_write.client),
      CLIENT_KEYS("prometheus.", prometheus),
      key("push.enabled", kBool, FIELD(push.enabled),
          "accept pushed allocator telemetry (Pushgateway API, OTLP/HTTP JSON) on the listener",
          {.flag = "--push", .flag_for = FlagScope::kServe,
           .flag_help = "accept pushed allocator telemetry: Pushgateway API on /metrics/job/... and OTLP JSON on "
                        "/v1/metrics"}),
      key("push.ttl", kDuration, FIELD(push.ttl_ms), "a push group no push refreshed for this long is dropped",
          {.min = 1000, .max = 24 * kHour}),
      key("push.token_file", kPath, FIELD(push.token_file),
          "file holding the bearer token pushes must carry (empty: no token)"),
      key("push.max_body_bytes", kInteger, FIELD(push.max_body_bytes), "largest push body, after gzip inflation",
          {.min = 1024, .max = 1e8}),
      key("push.max_series_per_push", kInteger, FIELD(push.max_series_per_push), "series (points) in one push",
          {.min = 1, .max = 1e6}),
      key("push.max_series_per_group", kInteger, FIELD(push.max_series_per_group), "series one group holds",
          {.min = 1, .max = 1e6}),
      key("push.max_series_per_job", kInteger, FIELD(push.max_series_per_job),
          "series the groups of one job (an OTLP service_name) hold together, removed ones for 4 minutes included",
          {.min = 1, .max = 1e6}),
      key("push.max_series", kInteger, FIELD(push.max_series),
          "series all groups hold together, removed ones for 4 minutes included (docs/limits.md)",
          {.min = 1, .max = 1e6}),
      key("push.max_groups", kInteger, FIELD(push.max_groups), "groups the receiver holds at once",
          {.min = 1, .max = 1e6}),
      key("push.max_labels", kInteger, FIELD(push.max_labels), "labels per pushed series, grouping labels included",
          {.min = 1, .max = 256}),
      key("push.max_label_length", kInteger, FIELD(push.max_label_length), "bytes of a label name or value",
          {.min = 16, .max = 65536}),
  };
}

std::vector<ConfigKey> diagnose_keys() {
  std::vector<ConfigKey> out;
  for (const diagnose::ThresholdKey& t : diagnose::threshold_keys()) {
    ConfigKey k{.key = std::string("diagnose.") + t.name,
                .type = t.kind == diagnose::ThresholdKind::kRatio    ? KeyType::kRatio
                        : t.kind == diagnose::ThresholdKind::kNumber ? KeyType::kNumber
                                                                     : KeyType::kDuration,
                .help = t.help, .min = 0, .max = t.kind == diagnose::ThresholdKind::kNumber ? 1e15 : 0,
                .choices = "", .flag = "", .flag_for = FlagScope::kNone, .flag_help = "", .set = {}, .show = {}};
    if (k.type == KeyType::kDuration) k.max = 30 * 24 * kHour;
    auto member = t.member;
    k.set = [member](AgentConfig& c, const std::string& text) -> Status {
      if (auto* d = std::get_if<double diagnose::Thresholds::*>(&member)) {
        c.diagnose.**d = std::stod(text);
        return Status::ok();
      }
      auto ms = parse_duration_ms(text);
      if (!ms) return ms.status();
      c.diagnose.*std::get<int64_t diagnose::Thresholds::*>(member) = *ms;
      return Status::ok();
    };
    k.show = [member](const AgentConfig& c) -> std::string {
      if (auto* d = std::get_if<double diagnose::Thresholds::*>(&member)) return plain_number(c.diagnose.**d);
      return format_duration(c.diagnose.*std::get<int64_t diagnose::Thresholds::*>(member));
    };
    out.push_back(std::move(k));
  }
  // Captures triggered by the diagnosis (agent/profile_trigger.h, docs/profiling.md).
  using enum KeyType;
  ConfigKey on = key("diagnose.profile_on", kList, FIELD(profile_on.causes),
                     "findings of these causes capture inside their GPU's process when it runs gpulens_client "
                     "(with push): stacks for input_pipeline and idle, a torch trace for host_transfer, "
                     "memory_bandwidth, communication, kernel_launch and small_batch; empty: off");
  on.set = [generic = on.set](AgentConfig& c, const std::string& text) -> Status {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      if (comma > start) {
        if (Status s = check_profile_cause(std::string_view(text).substr(start, comma - start)); !s) return s;
      }
      start = comma + 1;
    }
    return generic(c, text);
  };
  out.push_back(std::move(on));
  out.push_back(key("diagnose.profile_every", kDuration, FIELD(profile_on.per_process_ms),
                    "at most one triggered capture per process in this time", {.min = 60'000, .max = 30 * 24 * kHour}));
  out.push_back(key("diagnose.profile_max_per_hour", kInteger, FIELD(profile_on.max_per_hour),
                    "at most this many triggered captures in any hour, all processes together", {.min = 1, .max = 100}));
  out.push_back(key("diagnose.profile_window", kDuration, FIELD(profile_on.window_ms),
                    "the window of a triggered capture", {.min = 1000, .max = 300'000}));
  out.push_back(key("diagnose.profile_max_bytes", kInteger, FIELD(profile_on.max_bytes),
                    "the largest result a triggered capture may send", {.min = 4096, .max = 64 << 20}));
  return out;
}

std::vector<ConfigKey> rules_keys() {
  std::vector<ConfigKey> out;
  auto text_key = [&](const std::string& name, KeyType type, std::string help,
                      std::string (*show)(const rules::RuleOptions&)) {
    ConfigKey k{.key = "rules." + name, .type = type, .help = std::move(help), .min = 0, .max = 0,
                .choices = "", .flag = "", .flag_for = FlagScope::kNone, .flag_help = "", .set = {}, .show = {}};
    if (type == KeyType::kDuration) k.max = 24 * kHour;
    k.set = [name](AgentConfig& c, const std::string& text) { return c.rules.set(name, text); };
    k.show = [show](const AgentConfig& c) { return show(c.rules); };
    out.push_back(std::move(k));
  };
  text_key("job", KeyType::kText, "scrape job of the agent (GpulensAgentDown)", [](const rules::RuleOptions& o) { return o.job; });
  text_key("runbook_base", KeyType::kText, "base URL of the runbook links",
           [](const rules::RuleOptions& o) { return o.runbook_base; });
  text_key("latency_metric", KeyType::kText, "histogram base name of serving latency",
           [](const rules::RuleOptions& o) { return o.latency_metric; });
  text_key("latency_join", KeyType::kText, "label(s) joining GPUs to latency, comma-separated",
           [](const rules::RuleOptions& o) { return o.latency_join; });
  text_key("evaluation_interval", KeyType::kDuration, "rule group interval; 0s: Prometheus' global one",
           [](const rules::RuleOptions& o) { return format_duration(o.evaluation_interval_ms); });
  for (const rules::Param& p : rules::RuleOptions::defaults().params) {
    ConfigKey k{.key = "rules." + p.key,
                .type = p.kind == rules::ParamKind::kRatio    ? KeyType::kRatio
                        : p.kind == rules::ParamKind::kNumber ? KeyType::kNumber
                                                              : KeyType::kDuration,
                .help = p.help, .min = 0, .max = 0, .choices = "", .flag = "", .flag_for = FlagScope::kNone,
                .flag_help = "", .set = {}, .show = {}};
    k.max = k.type == KeyType::kDuration ? 24 * kHour : k.type == KeyType::kNumber ? 1e15 : 0;
    const std::string name = p.key;
    const bool duration = k.type == KeyType::kDuration;
    k.set = [name](AgentConfig& c, const std::string& text) { return c.rules.set(name, text); };
    k.show = [name, duration](const AgentConfig& c) {
      const double v = c.rules.number(name);
      return duration ? format_duration(static_cast<int64_t>(v)) : plain_number(v);
    };
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace

const std::vector<ConfigKey>& config_keys() {
  static const std::vector<ConfigKey> keys = [] {
    std::vector<ConfigKey> all = agent_keys();
    for (auto& k : diagnose_keys()) all.push_back(std::move(k));
    for (auto& k : rules_keys()) all.push_back(std::move(k));
    return all;
  }();
  return keys;
}

const ConfigKey* find_key(const std::string& name) {
  for (const auto& k : config_keys()) {
    if (k.key == name) return &k;
  }
  return nullptr;
}

}  // namespace gpulens::cli
