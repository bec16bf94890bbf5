// Agent: the running gpulens — sources on their own threads, the live store,
// the history recorder, self metrics and the HTTP routes.
//
// Each source samples on its own thread at the interval, so a source that
// hangs (a stuck driver call) delays only itself: scrapes keep being served
// from the last complete sample of every source, and
// gpulens_sample_age_seconds{source} shows how old it is.
//
// Routes:
//   /metrics            Prometheus text 0.0.4 or OpenMetrics 1.0 (Accept), gzip
//   /healthz            "ok" while the agent runs
//   /api/v1/current     current values as JSON (what `gpulens snapshot` reads); ?gpu=N
//   /api/v1/findings    diagnosis of the recent history as JSON; ?range=30m
//   /api/v1/history, /api/v1/export   see history_routes.h
//   /metrics/job/..., /v1/metrics   the push receiver (push_routes.h), when on
//   /api/v1/profile...               on-demand captures by gpulens_client (profile_routes.h), with push
//   /, /assets/*        the web page (web_routes.h)
//
// /metrics is answered on the listener's event loop from a page rendered
// once per sample (per format and encoding) and sent from that buffer; the
// routes of answers_off_loop() run on its worker threads (503 when their
// queue is full), so no API request delays a scrape.
//
// Start order: open sources -> start source threads -> recorder -> HTTP.
// Stop order is the reverse.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "export/exposition.h"
#include "model/selection.h"
#include "server/browser_guard.h"
#include "model/series.h"
#include "push/profile_table.h"
#include "push/push_store.h"
#include "server/http_server.h"
#include "sources/options.h"
#include "sources/source.h"
#include "store/history.h"
#include "store/live.h"

namespace gpulens {

// The window /api/v1/findings diagnoses when no ?range= is given.
inline constexpr int64_t kFindingsWindowMs = 30 * 60'000;

// Calls f(series, field, value, entity) for each series /api/v1/current
// lists, in the registry's order: the present values of the catalog's GPU
// and node series, the agent's own left out; `entity` is the GPU index, or
// gpu_count() for the node. The value may be NaN (null in the JSON). The
// caller holds the registry's and the live store's locks.
template <class F>
void for_each_current(const SeriesRegistry& registry, const LiveStore& live, F&& f) {
  const int gpus = registry.gpu_count();
  for (uint32_t s = 0; s < registry.count() && s < live.size(); ++s) {
    if (!live.present(s)) continue;
    const Series& series = registry.series(s);
    const FieldDef& def = field(series.field);
    if (def.layer == Layer::kAgent || series.gpu >= gpus) continue;
    f(series, def, live.value(s), series.gpu < 0 ? gpus : series.gpu);
  }
}

// The driver and CUDA versions of the host line (/api/v1/current's "host",
// `gpulens snapshot`): for each, the first GPU's that names it. The caller
// holds the registry's lock.
struct HostVersions {
  std::string driver, cuda;
};
HostVersions host_versions(const SeriesRegistry& registry);

struct AgentOptions {
  std::string listen = "127.0.0.1:9400";
  int64_t interval_ms = 1000;
  int64_t history_ms = 3600 * 1000;
  bool dcgm_names = false;
  DcgmGeneration dcgm_naming = DcgmGeneration::kClassic;  // --dcgm-names=classic|4.9
  DcgmHostLabel dcgm_host_label = DcgmHostLabel::kHostname;
  // Field selection (a --collectors file or --profile): the GPU fields
  // collected and the DCGM names exported; null: everything.
  std::shared_ptr<const FieldSelection> selection;
  std::string scenario_label;  // for gpulens_simulated{scenario}
  // The push receiver (serve --push); its series are published by a "push" source.
  std::shared_ptr<push::PushStore> push;
  // TLS, basic auth and headers of the listener (serve --web-config-file); null: plain HTTP.
  std::shared_ptr<WebSecurity> security;
  // Host names the web page and the API answer to besides IP addresses,
  // localhost and this machine's names (browser_guard.h); "*": any.
  std::vector<std::string> allowed_hosts;
};

// Hooks for modules the agent hosts without depending on them.
struct AgentHooks {
  // Fills extra self metrics each tick (remote_write queue, findings).
  std::vector<std::function<void(Frame&)>> self_metrics;
  // Called after each history record (remote_write snapshot, diagnosis).
  std::vector<std::function<void(int64_t now_ms)>> on_record;
  // JSON body of /api/v1/findings over the last `window_ms`; absent: 404.
  std::function<std::string(int64_t now_ms, int64_t window_ms)> findings_json;
};

class Agent {
 public:
  Agent(AgentOptions options, std::vector<std::unique_ptr<Source>> sources);
  ~Agent();

  // Opens every source. Sources that are not applicable are dropped with a
  // note in `notes`; other open errors fail.
  Status open(std::vector<std::string>& notes);
  // Starts sampling, recording and (unless listen is empty) the HTTP server.
  Status start(AgentHooks hooks = {});
  void stop();

  SeriesRegistry& registry() { return registry_; }
  LiveStore& live() { return live_; }
  History& history() { return *history_; }
  // The capture table (on with the push receiver, else null) and the receiver.
  push::ProfileTable* profiles() { return profiles_.get(); }
  push::PushStore* push_store() { return options_.push.get(); }
  bool simulated() const;
  int port() const { return server_ ? server_->port() : 0; }
  // Re-reads the web config file (TLS certificates, basic-auth users,
  // headers; serve --web-config-file) and applies it to new connections and
  // requests. On error the running one is kept and the Status says why (for
  // the SIGHUP path's log line). Ok and a no-op when no web config is set.
  // Any thread.
  Status reload_web_config();
  // Hands options changed by a reload to every running source (the scrape
  // source's targets); the first error is returned. Any thread.
  Status reconfigure_sources(const SourceOptions& options);
  // Samples every source once, synchronously, at `now_ms` (snapshot, record).
  void collect_once(int64_t now_ms);
  // Fills the history with `duration_ms` of samples ending now, taken at
  // once on a virtual clock (the simulator's demo and test mode). Before start().
  void prefill(int64_t duration_ms);
  // Current values as the JSON document of /api/v1/current; `only_gpu` >= 0
  // keeps that GPU alone.
  std::string current_json(int only_gpu = -1);
  int64_t interval_ms() const { return options_.interval_ms; }
  // Answers one request as the listener would, in-process (`gpulens top`
  // over local sources reads the same documents as over --url).
  void handle(const ServerRequest& req, ServerResponse& res);

 private:
  struct Runner {
    std::unique_ptr<Source> source;
    int index = -1;
    std::thread thread;
    int logged_up = -1;        // state last logged: -1 none yet, 0 down, 1 up
    std::string logged_error;  // reason last logged while down
  };
  void run_source(Runner& r);
  void run_recorder();
  void publish_self(int64_t now_ms);
  // Query parameters of /api/v1/current and /api/v1/findings; errors name them.
  Status current_params(std::string_view query, int& gpu);
  Status findings_params(std::string_view query, int64_t& window_ms);
  void sample_into(Runner& r, Frame& frame, int64_t now_ms);

  AgentOptions options_;
  SeriesRegistry registry_;
  LiveStore live_;
  std::unique_ptr<History> history_;
  std::vector<Runner> runners_;
  int self_index_ = -1;
  AgentHooks hooks_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<push::ProfileTable> profiles_;  // with the push receiver
  BrowserGuard guard_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread recorder_;

  // /metrics cache: one per (format, gzip), valid for one live generation.
  struct Cached {
    uint64_t generation = ~0ULL;
    std::shared_ptr<std::string> body;  // shared with the connections sending it
  };
  Renderer renderer_;
  Cached cache_[2][2];
  std::string gzip_scratch_;
};

int64_t wall_ms();

// The routes whose work grows with the history (findings over a range,
// history queries, exports): answered on the listener's worker threads.
bool answers_off_loop(std::string_view path);

}  // namespace gpulens
