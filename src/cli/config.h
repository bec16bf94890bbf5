// The agent's configuration: one plain struct, filled from a YAML file and
// then from flags (flags win), through ONE declaration of every key
// (config_keys.cpp) and ONE validator (this file). `serve`, `snapshot`,
// `record`, `rules --config`, `diagnose --config` and `check-config` all load
// a file with load_config(), so a key cannot be valid for one command and
// unknown or misread by another.
//
//   # gpulens.yaml — every key is optional; `gpulens check-config --keys`
//   # prints them all with type, default and meaning (docs/config.md).
//   listen: 0.0.0.0:9400
//   interval: 1s
//   sources: [nvml, host]
//   source:
//     nvml: {calibration: /etc/gpulens/calibration.json}
//     scrape: {targets: [http://127.0.0.1:9401/metrics], interval: 1s}   # --source nvml,host,scrape
//   remote_write: {url: http://vm:8428/api/v1/write}
//   #  ... tls_config: {ca_file: ...}, basic_auth: {...}, headers: {X-Scope-OrgID: a}
//   prometheus: {bearer_token_file: /etc/gpulens/prom-token}   # diagnose --prometheus
//   push: {enabled: true, ttl: 5m, token_file: /etc/gpulens/push-token}   # serve --push
//   diagnose: {pcie_util: 0.8}      # thresholds, see docs/diagnose.md
//   #  ... profile_on: [kernel_launch, input_pipeline]   # captures in the GPU's process (docs/profiling.md)
//   rules: {gpu_util_low: {threshold: 0.2}}   # see `gpulens rules --list-keys`
//
//   Result<AgentConfig> c = load_config("gpulens.yaml");  // errors: file:line:column: key: problem
//   Status s = set_key(*c, "listen", "0.0.0.0:9400", "--listen");  // a flag, same checks
//   std::vector<std::string> problems = validate(*c);    // cross-key checks
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/profile_trigger.h"
#include "diagnose/thresholds.h"
#include "rules/options.h"
#include "sources/options.h"
#include "sources/registry.h"
#include "util/http_client.h"
#include "util/status.h"

namespace gpulens::cli {

// An outgoing HTTP client in Prometheus's shape: tls_config, basic_auth,
// authorization, bearer_token(_file), headers.
struct ClientConfig {
  TlsClientOptions tls;
  HttpAuthOptions auth;
  std::string bearer_token, bearer_token_file;  // Prometheus's older spelling of authorization
  // The client options, bearer_token folded into authorization.
  HttpClientOptions options(int64_t timeout_ms) const;
};

struct RemoteWriteConfig {
  std::string url;
  ClientConfig client;
  int64_t interval_ms = 0;  // 0: the sampling interval
  std::string job = "gpulens";
  int64_t queue_max_samples = 1'000'000;
  int64_t max_samples_per_send = 2000;
  int64_t timeout_ms = 10'000;
  int64_t min_backoff_ms = 50;
  int64_t max_backoff_ms = 5000;
  int64_t flush_timeout_ms = 5000;
};

struct LogConfig {
  std::string level = "info";
  std::string format = "text";
};

// The push receiver (in-process allocator telemetry); limits as in push/push_body.h.
struct PushConfig {
  bool enabled = false;
  int64_t ttl_ms = 5 * 60 * 1000;
  std::string token_file;  // "" accepts pushes without a token
  int64_t max_body_bytes = 1 << 20;
  int64_t max_series_per_push = 5000;
  int64_t max_series_per_group = 2048;
  int64_t max_series_per_job = 2048;
  int64_t max_series = 4096;
  int64_t max_groups = 1024;
  int64_t max_labels = 24;
  int64_t max_label_length = 256;
};

struct AgentConfig {
  std::string listen = "127.0.0.1:9400";
  int64_t interval_ms = 1000;
  int64_t history_ms = 3600 * 1000;
  int64_t outside_history_bytes = 144 << 20;  // history of pushed and scraped series (fit_series_budgets)
  std::vector<std::string> sources = default_source_names();  // the registry's enabled_by_default
  bool dcgm_names = false;
  std::string dcgm_naming = "classic";  // classic or 4.9: the DCGM names written
  std::string dcgm_hostname_label = "Hostname";  // Hostname, hostname or none
  std::vector<std::string> allowed_hosts;  // extra Host names for the web page and API
  std::string web_config_file;  // exporter-toolkit web-config.yml: TLS, basic auth, headers ("" none)
  std::string profile = "full";                  // minimal, standard, full
  std::string collectors;                        // dcgm-exporter counters CSV; "" = the profile
  SourceOptions source;
  RemoteWriteConfig remote_write;
  PushConfig push;
  LogConfig log;
  diagnose::Thresholds diagnose;
  ProfileTriggerOptions profile_on;  // diagnose.profile_* (captures triggered by the diagnosis)
  ClientConfig prometheus;  // the query client of `diagnose --prometheus`
  ClientConfig scrape_client;  // TLS and credentials of the scrape source's targets (source.scrape.*)
  rules::RuleOptions rules = rules::RuleOptions::defaults();
  std::string path;  // the file it came from, "" for defaults
};

// How a key's value is written and checked (the same for YAML and flags).
enum class KeyType {
  kText,      // any scalar
  kPath,      // a file or directory path (not checked for existence)
  kChoice,    // one of `choices`
  kList,      // YAML list or "a,b"; each item one of `choices` when set
  kBool,      // true / false
  kNumber,    // a finite number in [min, max]
  kInteger,   // a whole number in [min, max]
  kRatio,     // a number in 0..1 (write 0.8 for 80 %)
  kDuration,  // "100ms", "15s", "5m", "1h30m"; [min, max] in milliseconds
  kUrl,       // scheme://host[:port][/path]; the scheme one of `choices`
  kListen,    // HOST:PORT or [v6]:PORT, port 1..65535
  kHeaders,   // a YAML mapping of header name to value
};

// Which commands take a key's flag (cli/config_flags.h makes the flags).
enum class FlagScope {
  kNone,   // no flag
  kAgent,  // every command that runs the sources: serve, snapshot, record, top
  kServe,  // serve alone
};

// One configuration key. Every key of the file is one ConfigKey; see
// config_keys.cpp for the table and how to add a row.
struct ConfigKey {
  std::string key;      // dotted path, e.g. "source.nvml.calibration"
  KeyType type;
  std::string help;
  double min = 0, max = 0;  // kNumber, kInteger, kDuration (ms); both 0: no bound
  std::string choices;      // comma-separated: kChoice, kList items, kUrl schemes
  // The command-line flag setting it too, e.g. "--listen" ("" none). Keys
  // sharing a flag are set by one option ("--dcgm-names=NAMING": the
  // bool key dcgm_names and, with a value, dcgm_naming).
  std::string flag;
  FlagScope flag_for = FlagScope::kNone;  // set on the first key of a flag
  std::string flag_help;                  // its --help line, on the first key of a flag
  // Stores a checked value; `text` is the scalar (lists: comma-joined).
  std::function<Status(AgentConfig&, const std::string& text)> set;
  std::function<std::string(const AgentConfig&)> show;  // the value as written in YAML
};

// Every key, agent keys first, then diagnose.* and rules.* (generated from
// their tables in src/diagnose/thresholds.cpp and src/rules/options.cpp).
const std::vector<ConfigKey>& config_keys();
const ConfigKey* find_key(const std::string& key);

// Loads `path` over the defaults. Errors name file:line:column and the key.
Result<AgentConfig> load_config(const std::string& path);
Result<AgentConfig> parse_config(const std::string& yaml_text, const std::string& origin);
// Sets one key from text, with the checks of the file. Errors start with
// `what` (the flag name, or the key when empty).
Status set_key(AgentConfig& config, const std::string& key, const std::string& text, const std::string& what = "");
// Cross-key checks (interval vs history, known sources, the scenario loads).
// Empty when fine.
std::vector<std::string> validate(const AgentConfig& config);
// Lowers the series budgets of pushes and scrape targets (push.max_series*,
// source.scrape.max_series*) in proportion until the history their series
// may hold fits outside_history_bytes at this interval and history: at the
// defaults (1 s, 1 h) they fit as set; at 100 ms an hour costs ten times
// as much a series. Returns what it lowered, "" when nothing.
std::string fit_series_budgets(AgentConfig& config);
// The complete effective configuration as YAML, for check-config --verbose.
std::string to_yaml(const AgentConfig& config);
// check-config's default: listen, interval, history and sources, then only
// the keys whose value differs from the default (`changed` counts those).
// Also a valid file meaning the same as the whole configuration.
std::string to_yaml_summary(const AgentConfig& config, size_t& changed);
// The key reference (markdown table) that docs/config.md carries.
std::string keys_markdown();

}  // namespace gpulens::cli
