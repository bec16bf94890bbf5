// Agent runtime: threads, self metrics, routes.
#include "agent/agent.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include "model/series_budget.h"
#include "server/gzip.h"
#include "server/history_routes.h"
#include "server/labels_json.h"
#include "server/web_routes.h"
#include "server/query.h"
#include "util/duration.h"
#include "server/profile_routes.h"
#include "server/push_routes.h"
#include "util/json.h"
#include "util/log.h"

namespace gpulens {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Agent::Agent(AgentOptions options, std::vector<std::unique_ptr<Source>> sources)
    : options_(std::move(options)), guard_(options_.allowed_hosts) {
  const int64_t interval = std::max<int64_t>(options_.interval_ms, 10);
  history_ = std::make_unique<History>(static_cast<size_t>(std::max<int64_t>(1, options_.history_ms / interval)));
  history_->set_short_lived_release(static_cast<size_t>(std::max<int64_t>(1, kShortLivedReleaseMs / interval)));
  for (auto& s : sources) runners_.push_back({std::move(s), -1, {}});
  if (options_.push) {
    profiles_ = std::make_unique<push::ProfileTable>();
    options_.push->attach(registry_, live_);
    runners_.push_back({push::make_push_source(options_.push), -1, {}});
  }
}

Agent::~Agent() { stop(); }

bool Agent::simulated() const {
  for (const auto& r : runners_) {
    if (r.source->simulated()) return true;
  }
  return false;
}

Status Agent::open(std::vector<std::string>& notes) {
  // dcgm-exporter's Hostname: NODE_NAME (set from spec.nodeName in
  // Kubernetes), else the host name. A source may set its own (sim).
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != 0) {
    registry_.set_hostname(node);
  } else if (char host[256] = {}; gethostname(host, sizeof host - 1) == 0) {
    registry_.set_hostname(host);
  }
  registry_.set_dcgm_host_label(options_.dcgm_host_label);
  if (options_.selection) {
    registry_.set_field_mask(options_.selection->fields);
    registry_.set_dcgm_driver_label(options_.selection->driver_label, options_.selection->from_file
                                                                         ? options_.selection->driver_row
                                                                         : dcgm_driver_row(options_.dcgm_naming));
  } else {
    registry_.set_dcgm_driver_label(true, dcgm_driver_row(options_.dcgm_naming));
  }
  std::vector<Runner> kept;
  for (auto& r : runners_) {
    Status s = r.source->open(registry_);
    if (s.code() == Code::kNotApplicable) {
      notes.push_back(std::string(r.source->name()) + ": not applicable: " + s.message());
      continue;
    }
    if (!s.is_ok()) return Status(s.code(), std::string(r.source->name()) + ": " + s.message());
    r.index = live_.add_source(std::string(r.source->name()), r.source->simulated(), r.source->fills_gaps());
    kept.push_back(std::move(r));
  }
  runners_ = std::move(kept);
  self_index_ = live_.add_source("gpulens", false);
  return Status::ok();
}

Status Agent::reconfigure_sources(const SourceOptions& options) {
  for (auto& r : runners_) {
    if (Status s = r.source->reconfigure(options); !s) {
      return Status(s.code(), std::string(r.source->name()) + ": " + s.message());
    }
  }
  return Status::ok();
}

void Agent::sample_into(Runner& r, Frame& frame, int64_t now_ms) {
  const auto t0 = std::chrono::steady_clock::now();
  frame.clear(now_ms);
  Status s = r.source->sample(frame);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  live_.publish(r.index, frame);
  live_.set_status(r.index, s.is_ok(), s.is_ok() ? "" : s.message(), seconds, now_ms);
  // One log line per change of state (and of reason while down).
  const int up = s.is_ok() ? 1 : 0;
  if (up != r.logged_up || (!up && s.message() != r.logged_error)) {
    if (up) {
      log::info("source_up", {{"source", std::string(r.source->name())}});
    } else {
      log::warn("source_down", {{"source", std::string(r.source->name())}, {"reason", s.message()}});
    }
    r.logged_up = up;
    r.logged_error = up ? "" : s.message();
  }
}

void Agent::collect_once(int64_t now_ms) {
  for (auto& r : runners_) {
    Frame frame(registry_);
    sample_into(r, frame, now_ms);
  }
  publish_self(now_ms);
  history_->record(registry_, live_, now_ms);
}

void Agent::prefill(int64_t duration_ms) {
  const int64_t interval = std::max<int64_t>(options_.interval_ms, 1);
  const int64_t steps = std::min<int64_t>(duration_ms / interval, static_cast<int64_t>(history_->capacity()) - 1);
  const int64_t now = wall_ms();
  for (int64_t i = steps; i >= 1; --i) collect_once(now - i * interval);
}

void Agent::run_source(Runner& r) {
  Frame frame(registry_);
  const int64_t interval = options_.interval_ms;
  int64_t next = wall_ms();
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    lock.unlock();
    sample_into(r, frame, wall_ms());
    lock.lock();
    // Aligned ticks; after an overrun, skip the missed ones.
    next += interval;
    const int64_t now = wall_ms();
    if (next < now) next = now + interval - (now - next) % interval;
    stop_cv_.wait_for(lock, std::chrono::milliseconds(next - now), [&] { return stopping_; });
  }
}

void Agent::publish_self(int64_t now_ms) {
  Frame f(registry_);
  f.clear(now_ms);
  std::vector<SourceStatus> statuses;
  {
    std::lock_guard lock(live_.mutex());
    statuses = live_.sources();
  }
  for (const auto& s : statuses) {
    if (s.name == "gpulens") continue;
    const Labels src{{"source", s.name}};
    f.set_node(FieldId::kAgentSourceUp, src, s.up ? 1 : 0);
    f.set_node(FieldId::kAgentCollectionDuration, src, s.duration_seconds);
    if (s.last_success_ms > 0) f.set_node(FieldId::kAgentSourceAge, src, std::max<int64_t>(0, now_ms - s.last_success_ms) / 1000.0);
  }
  static const Labels kVersion{{"version", GPULENS_VERSION}};
  f.set_node(FieldId::kAgentBuildInfo, kVersion, 1);
  if (simulated()) f.set_node(FieldId::kAgentSimulated, Labels{{"scenario", options_.scenario_label}}, 1);
  for (auto& fill : hooks_.self_metrics) fill(f);
  // Series count includes this frame's own series.
  size_t count = 0;
  {
    std::lock_guard lock(live_.mutex());
    count = live_.present_count();
  }
  if (history_) {
    const History::Usage u = history_->usage();
    f.set_node(FieldId::kAgentHistoryBytes, static_cast<double>(u.bytes));
    if (u.samples > 0) {
      f.set_node(FieldId::kAgentHistoryBytesPerSample, static_cast<double>(u.bytes) / static_cast<double>(u.samples));
    }
  }
  f.set_node(FieldId::kAgentSeries, static_cast<double>(count + f.values().size() + 1));
  live_.publish(self_index_, f);
}

void Agent::run_recorder() {
  const int64_t interval = options_.interval_ms;
  int64_t next = wall_ms() + interval / 2;  // between source ticks
  // Series gone for a whole history window (exited processes), or pushed
  // and scraped ones gone kShortLivedReleaseMs, give back their slots about
  // once a minute.
  const int64_t reclaim_every = std::max<int64_t>(1, kReclaimPeriodMs / std::max<int64_t>(interval, 1));
  int64_t records = 0;
  std::unique_lock lock(stop_mu_);
  while (!stopping_) {
    const int64_t now = wall_ms();
    if (now < next) {
      stop_cv_.wait_for(lock, std::chrono::milliseconds(next - now), [&] { return stopping_; });
      continue;
    }
    lock.unlock();
    publish_self(now);
    history_->record(registry_, live_, now);
    if (++records % reclaim_every == 0) history_->reclaim(registry_, live_);
    for (auto& cb : hooks_.on_record) cb(now);
    lock.lock();
    next += interval;
    if (next < wall_ms()) next = wall_ms() + interval;
  }
}

Status Agent::start(AgentHooks hooks) {
  hooks_ = std::move(hooks);
  stopping_ = false;
  // A first sample of everything before serving, so the first scrape has data.
  collect_once(wall_ms());
  for (auto& r : runners_) r.thread = std::thread([this, &r] { run_source(r); });
  recorder_ = std::thread([this] { run_recorder(); });
  if (!options_.listen.empty()) {
    push::PushStore* push = options_.push.get();
    HttpServerOptions http{.listen = options_.listen};
    http.security = options_.security;
    if (push) {
      http.max_body_bytes = std::max({http.max_body_bytes, push->options().limits.max_body_bytes,
                                      static_cast<size_t>(profiles_->limits().max_result_bytes)});
      http.body_limit = [push, profiles = profiles_.get(), get = http.max_get_body_bytes](std::string_view m,
                                                                                       std::string_view p) -> size_t {
        if (auto limit = push_body_limit(push, m, p)) return *limit;
        if (auto limit = profile_body_limit(profiles, m, p)) return *limit;
        return m == "POST" || m == "PUT" ? size_t{1} << 20 : get;
      };
    }
    // Work that grows with the history runs on worker threads: a scrape
    // never waits behind it.
    http.offload = [](std::string_view, std::string_view path) { return answers_off_loop(path); };
    server_ = std::make_unique<HttpServer>(std::move(http),
                                           [this](const ServerRequest& req, ServerResponse& res) { handle(req, res); });
    if (Status s = server_->start(); !s) {
      server_.reset();
      stop();
      return s;
    }
  }
  return Status::ok();
}

void Agent::stop() {
  if (server_) server_->stop();
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (recorder_.joinable()) recorder_.join();
  for (auto& r : runners_) {
    if (r.thread.joinable()) r.thread.join();
  }
}

Status Agent::reload_web_config() { return options_.security ? options_.security->reload() : Status::ok(); }

HostVersions host_versions(const SeriesRegistry& registry) {
  HostVersions out;
  for (int g = 0; g < registry.gpu_count(); ++g) {
    const GpuIdentity* id = registry.gpu(g);
    if (id == nullptr) continue;
    if (out.driver.empty()) out.driver = id->driver;
    if (out.cuda.empty()) out.cuda = id->cuda;
  }
  return out;
}

std::string Agent::current_json(int only_gpu) {
  std::string out;
  out.reserve(1 << 16);
  const std::string host = registry_.hostname();  // takes the registry lock itself
  std::scoped_lock lock(registry_.mutex(), live_.mutex());
  const int gpus = registry_.gpu_count();
  // Per entity: "name{extra}": value (kept for one release: agents and
  // readers of the previous release know only these keys), and the same
  // series as objects, their labels as data:
  // {"name":"gpu_clock_event_active","labels":{"reason":"sw_thermal"},"value":0}
  std::vector<std::string> fields(gpus + 1), series_json(gpus + 1);
  for_each_current(registry_, live_, [&](const Series& series, const FieldDef& f, double value, int entity) {
    std::string& dst = fields[entity];
    if (!dst.empty()) dst += ',';
    // The key as agents have always written it: the series' own labels in
    // exposition text, a histogram's _sum and _count as a leading word.
    std::string key(f.name);
    if (!series.extra.empty() || series.part == HistogramPart::kSum || series.part == HistogramPart::kCount) {
      key += '{';
      if (series.part == HistogramPart::kSum) key += series.extra.empty() ? "sum" : "sum,";
      if (series.part == HistogramPart::kCount) key += series.extra.empty() ? "count" : "count,";
      series.extra.render(key);
      key += '}';
    }
    append_json_string(dst, key);
    dst += ':';
    append_json_number(dst, value);
    std::string& obj = series_json[entity];
    if (!obj.empty()) obj += ',';
    obj += "{\"name\":";
    append_json_string(obj, f.name);
    obj += ",\"labels\":";
    append_labels_json(obj, series.extra);
    if (const std::string_view part = histogram_part_json(series.part); !part.empty()) {
      obj += ",\"part\":";
      append_json_string(obj, part);
    }
    obj += ",\"value\":";
    append_json_number(obj, value);
    obj += '}';
  });
  out += "{\"time\":";
  append_json_string(out, std::to_string(wall_ms() / 1000));
  const HostVersions versions = host_versions(registry_);
  out += ",\"host\":{\"name\":";
  append_json_string(out, host);
  out += ",\"driver\":";
  append_json_string(out, versions.driver);
  out += ",\"cuda\":";
  append_json_string(out, versions.cuda);
  out += '}';
  out += ",\"simulated\":";
  out += simulated() ? "true" : "false";
  out += ",\"sources\":[";
  bool first = true;
  for (const auto& s : live_.sources()) {
    if (s.name == "gpulens") continue;
    if (!first) out += ',';
    first = false;
    out += "{\"name\":";
    append_json_string(out, s.name);
    out += ",\"up\":";
    out += s.up ? "true" : "false";
    out += ",\"error\":";
    append_json_string(out, s.last_error);
    out += '}';
  }
  out += "],\"gpus\":[";
  bool first_gpu = true;
  for (int g = 0; g < gpus; ++g) {
    if (only_gpu >= 0 && g != only_gpu) continue;
    if (!first_gpu) out += ',';
    first_gpu = false;
    const GpuIdentity* id = registry_.gpu(g);
    out += "{\"gpu\":";
    append_json_string(out, std::to_string(g));
    out += ",\"uuid\":";
    append_json_string(out, id ? id->uuid : "");
    out += ",\"name\":";
    append_json_string(out, id ? id->name : "");
    out += ",\"fields\":{";
    out += fields[g];
    out += "},\"series\":[";
    out += series_json[g];
    out += "]}";
  }
  out += "],\"node\":{\"fields\":{";
  out += fields[gpus];
  out += "},\"series\":[";
  out += series_json[gpus];
  out += "]}}\n";
  return out;
}

Status Agent::current_params(std::string_view query, int& gpu) {
  auto q = parse_query(query, {"gpu"});
  if (!q) return q.status();
  if (!q->has("gpu")) return Status::ok();
  const std::string_view v = q->get("gpu");
  const int count = registry_.gpu_count();
  for (int g = 0; g < count; ++g) {
    std::lock_guard lock(registry_.mutex());
    const GpuIdentity* id = registry_.gpu(g);
    if (v == std::to_string(g) || (id && !id->uuid.empty() && v == id->uuid)) {
      gpu = g;
      return Status::ok();
    }
  }
  return invalid_argument("gpu: no GPU \"" + std::string(v.substr(0, 64)) + "\" on this node (an index 0-" +
                          std::to_string(count - 1) + " or a UUID)");
}

Status Agent::findings_params(std::string_view query, int64_t& window_ms) {
  auto q = parse_query(query, {"range"});
  if (!q) return q.status();
  if (!q->has("range")) return Status::ok();
  auto d = parse_duration_ms(q->get("range"));
  if (!d) return invalid_argument("range: " + d.status().message());
  const int64_t kept = static_cast<int64_t>(history_->capacity()) * std::max<int64_t>(options_.interval_ms, 1);
  if (*d <= 0) return invalid_argument("range: must be positive");
  if (*d > kept) {
    return invalid_argument("range: " + format_duration(*d) + " is longer than the history this agent keeps (" +
                            format_duration(kept) + ")");
  }
  window_ms = *d;
  return Status::ok();
}

bool answers_off_loop(std::string_view path) {
  return path == "/api/v1/findings" || path == "/api/v1/history" || path == "/api/v1/export";
}

void Agent::handle(const ServerRequest& req, ServerResponse& res) {
  if (refuse_cross_site(guard_, req, res)) return;
  if (handle_push_route(options_.push.get(), req, res, wall_ms())) return;
  if (handle_profile_route(options_.push.get(), profiles_.get(), req, res, wall_ms())) return;
  if (req.path == "/metrics") {
    const Format format = negotiate(req.accept);
    const bool gzip = accepts_gzip(req.accept_encoding);
    Cached& c = cache_[format == Format::kOpenMetrics][gzip];
    uint64_t generation;
    {
      std::lock_guard lock(live_.mutex());
      generation = live_.generation();
    }
    if (c.generation != generation) {
      RenderOptions ro{.format = format, .native_names = true, .dcgm_names = options_.dcgm_names,
                       .dcgm_naming = options_.dcgm_naming,
                       .dcgm_rows = options_.selection && !options_.selection->all_dcgm
                                        ? &options_.selection->dcgm
                                        : nullptr,
                       .dcgm_file_rows = options_.selection && options_.selection->from_file};
      std::string_view body = renderer_.render(registry_, live_, ro);
      // A connection still sending the previous page holds it: render into
      // a new buffer then, else into this one (no allocation once warm).
      if (!c.body || c.body.use_count() > 1) c.body = std::make_shared<std::string>();
      if (gzip) {
        static thread_local Gzipper gz;
        gz.compress(body, *c.body);
      } else {
        c.body->assign(body);
      }
      c.generation = generation;
    }
    res.content_type = content_type(format);
    if (gzip) res.content_encoding = "gzip";
    res.shared_body = c.body;
    return;
  }
  if (req.path == "/healthz") {
    res.body = "ok\n";
    return;
  }
  if (handle_history_routes(HistoryView(registry_, live_, *history_, interval_ms()), req, res)) return;
  if (req.path == "/api/v1/current") {
    int gpu = -1;
    if (Status s = current_params(req.query, gpu); !s) {
      res.status = 400;
      res.body = s.message() + "\n";
      return;
    }
    res.content_type = "application/json";
    res.body = current_json(gpu);
    return;
  }
  if (req.path == "/api/v1/findings") {
    if (!hooks_.findings_json) {
      res.status = 404;
      res.body = "diagnosis is not enabled in this agent\n";
      return;
    }
    int64_t window = kFindingsWindowMs;
    if (Status s = findings_params(req.query, window); !s) {
      res.status = 400;
      res.body = s.message() + "\n";
      return;
    }
    res.content_type = "application/json";
    res.body = hooks_.findings_json(wall_ms(), window);
    return;
  }
  if (handle_web_routes(req, res)) return;
  res.status = 404;
  res.body = "not found: try /, /metrics, /api/v1/current, /api/v1/findings or /healthz\n";
}

}  // namespace gpulens
