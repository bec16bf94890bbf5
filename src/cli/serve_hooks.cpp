// Live diagnosis every 15 s over the last 30 min of history; remote_write;
// what a SIGHUP changes in them.
#include "cli/serve_hooks.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "cli/profile_trigger.h"
#include "diagnose/live_input.h"
#include "diagnose/report.h"
#include "diagnose/thresholds.h"
#include "export/remote_write/remote_write.h"
#include "util/duration.h"
#include "util/log.h"

namespace gpulens::cli {
namespace {

constexpr int64_t kDiagnoseEveryMs = 15'000;
constexpr int64_t kWindowMs = kFindingsWindowMs;

// A diagnosis builds the window's signals (megabytes) and frees them; glibc
// keeps freed memory in the calling thread's arena, so each thread that ran
// one held ~24 MiB more RSS for good. Handing the free pages back is a few
// percent of the agent's CPU (docs/PERFORMANCE.md "History memory").
void release_free_memory() { malloc_trim(0); }

class Extras final : public ServeExtras {
 public:
  Extras(Agent& agent, diagnose::Thresholds t, ProfileTriggerOptions p)
      : agent_(agent),
        thresholds_(t),
        trigger_(std::move(p), agent.profiles(), [&agent](int gpu) {
          return agent.push_store() ? agent.push_store()->pids_on_gpu(gpu) : std::vector<int64_t>{};
        }) {}

  // Re-runs the diagnosis when the cached one is older than the period.
  diagnose::Report report(int64_t now_ms) {
    std::lock_guard lock(mu_);
    // Refresh every period, and until the history holds enough to see GPUs.
    if (now_ms - last_ms_ >= kDiagnoseEveryMs || last_ms_ == 0 || report_.gpu_count == 0 || rethink_) {
      rethink_ = false;
      report_ = diagnose::diagnose_live(agent_.registry(), agent_.history(), now_ms, thresholds_, kWindowMs, host());
      release_free_memory();
      accumulate_waste(last_ms_ ? now_ms - last_ms_ : 0);
      log_changes();
      last_ms_ = now_ms;
    }
    // Captures asked for by findings (diagnose.profile_on): requested at a
    // diagnosis, collected and attached at any call after their result came.
    trigger_.step(report_, now_ms);
    return report_;
  }

  // A diagnosis over another window than the periodic one (?range=), not cached.
  diagnose::Report report_over(int64_t now_ms, int64_t window_ms) {
    diagnose::Thresholds t;
    {
      std::lock_guard lock(mu_);
      t = thresholds_;
    }
    diagnose::Report r = diagnose::diagnose_live(agent_.registry(), agent_.history(), now_ms, t, window_ms, host());
    release_free_memory();
    std::lock_guard lock(mu_);
    trigger_.attach(r);
    return r;
  }

  void fill_findings(Frame& f) {
    const diagnose::Report r = report(f.time_ms());
    for (const auto& h : r.hosts) {
      for (const auto& g : h.gpus) {
        const int gpu = std::atoi(g.gpu.c_str());
        for (const auto& finding : g.findings) {
          // pending: not yet a finding; ended: no longer holds (still in the report's window)
          if (finding.state != diagnose::State::kFiring || !finding.ongoing) continue;
          f.set(FieldId::kAgentFinding, gpu,
                Labels{{"cause", finding.cause}, {"severity", diagnose::severity_name(finding.severity)}}, 1);
        }
      }
    }
    std::lock_guard lock(mu_);
    for (const auto& [key, seconds] : waste_) {
      f.set(FieldId::kAgentWasteGpuSeconds, key.first, Labels{{"cause", key.second}}, seconds);
    }
  }

  std::string host() const {
    std::string h = agent_.registry().hostname();
    if (h.empty()) {
      char buf[256] = {};
      gethostname(buf, sizeof buf - 1);
      h = buf;
    }
    return h;
  }

  Status apply(const AgentConfig& next) override {
    if (!same_remote_write(next.remote_write, remote_write_)) {
      std::unique_ptr<RemoteWriter> fresh;
      if (!next.remote_write.url.empty()) {
        fresh = std::make_unique<RemoteWriter>(writer_options(next), agent_.registry(), agent_.live());
        if (Status s = fresh->start(); !s) return s;
      }
      std::unique_ptr<RemoteWriter> old;
      {
        std::lock_guard lock(writer_mu_);
        old = std::move(writer_);
        writer_ = std::move(fresh);
      }
      if (old) old->stop();  // outside the lock: scrapes keep reading the new writer's metrics
      remote_write_ = next.remote_write;
    }
    std::lock_guard lock(mu_);
    thresholds_ = next.diagnose;
    trigger_.set_options(next.profile_on);
    rethink_ = true;  // the next report is computed with the new thresholds
    return Status::ok();
  }

  Status start_remote_write(const AgentConfig& config) {
    remote_write_ = config.remote_write;
    if (config.remote_write.url.empty()) return Status::ok();
    auto w = std::make_unique<RemoteWriter>(writer_options(config), agent_.registry(), agent_.live());
    if (Status s = w->start(); !s) return s;
    std::lock_guard lock(writer_mu_);
    writer_ = std::move(w);
    return Status::ok();
  }

  void fill_remote_write(Frame& f) {
    std::lock_guard lock(writer_mu_);
    if (writer_) writer_->fill(f);
  }

  void stop() override {
    std::unique_ptr<RemoteWriter> w;
    {
      std::lock_guard lock(writer_mu_);
      w = std::move(writer_);
    }
    if (w) w->stop();
  }

 private:
  // GPU-seconds lost since the last diagnosis to each finding that holds
  // now: (1 - SM active) of the elapsed time, all of it for an idle GPU.
  void accumulate_waste(int64_t elapsed_ms) {
    if (elapsed_ms <= 0) return;
    for (const auto& h : report_.hosts) {
      for (const auto& g : h.gpus) {
        if (g.findings.empty()) continue;
        const int gpu = std::atoi(g.gpu.c_str());
        double sm_active = 0;
        {
          std::scoped_lock lock(agent_.registry().mutex(), agent_.live().mutex());
          for (uint32_t slot : agent_.registry().slots_of(FieldId::kGpuSmActive)) {
            if (agent_.registry().series(slot).gpu == gpu && agent_.live().present(slot)) {
              sm_active = agent_.live().value(slot);
            }
          }
        }
        for (const auto& finding : g.findings) {
          if (finding.severity == diagnose::Severity::kInfo || finding.state != diagnose::State::kFiring) continue;
          const double lost = finding.cause == "idle" ? 1.0 : std::clamp(1.0 - sm_active, 0.0, 1.0);
          waste_[{gpu, finding.cause}] += lost * static_cast<double>(elapsed_ms) / 1000.0;
        }
      }
    }
  }

  // One log line when a firing finding appears and one when it is gone.
  void log_changes() {
    std::map<std::pair<std::string, std::string>, const diagnose::Finding*> now, ended;
    for (const auto& h : report_.hosts) {
      for (const auto& g : h.gpus) {
        for (const auto& f : g.findings) {
          if (f.state == diagnose::State::kFiring && f.ongoing) now[{g.gpu, f.cause}] = &f;
          else if (f.state == diagnose::State::kFiring) ended[{g.gpu, f.cause}] = &f;
        }
      }
    }
    for (const auto& [key, f] : now) {
      if (firing_.count(key)) continue;
      std::string evidence;
      if (!f->evidence.empty()) {
        const auto& e = f->evidence.front();
        evidence = e.signal + "=" + std::to_string(e.value) + " threshold=" + std::to_string(e.threshold);
      }
      log::warn("finding_started", {{"gpu", key.first}, {"cause", key.second},
                                    {"severity", std::string(diagnose::severity_name(f->severity))},
                                    {"since", format_rfc3339(f->since_ms)}, {"evidence", evidence}});
    }
    for (const auto& key : firing_) {
      if (now.count(key)) continue;
      // Still in the window: say how long it held and when it stopped.
      if (auto e = ended.find(key); e != ended.end() && !e->second->periods.empty()) {
        log::info("finding_ended", {{"gpu", key.first}, {"cause", key.second},
                                    {"held", format_duration(e->second->held_ms / 1000 * 1000)},
                                    {"until", format_rfc3339(e->second->periods.back().second)}});
      } else {
        log::info("finding_ended", {{"gpu", key.first}, {"cause", key.second}});
      }
    }
    firing_.clear();
    for (const auto& [key, _] : now) firing_.insert(key);
  }

  RemoteWriteOptions writer_options(const AgentConfig& config) const {
    const RemoteWriteConfig& c = config.remote_write;
    RemoteWriteOptions o;
    o.url = c.url;
    o.interval_ms = c.interval_ms > 0 ? c.interval_ms : config.interval_ms;
    o.external_labels = {{"instance", host()}, {"job", c.job}};
    o.queue_max_samples = static_cast<size_t>(c.queue_max_samples);
    o.max_samples_per_send = static_cast<size_t>(c.max_samples_per_send);
    o.timeout_ms = c.timeout_ms;
    o.min_backoff_ms = c.min_backoff_ms;
    o.max_backoff_ms = c.max_backoff_ms;
    o.flush_timeout_ms = c.flush_timeout_ms;
    const HttpClientOptions client = c.client.options(c.timeout_ms);
    o.tls = client.tls;
    o.auth = client.auth;
    return o;
  }

  // Every remote_write.* key, through the one key table.
  static bool same_remote_write(const RemoteWriteConfig& a, const RemoteWriteConfig& b) {
    AgentConfig x, y;
    x.remote_write = a;
    y.remote_write = b;
    for (const ConfigKey& k : config_keys()) {
      if (k.key.starts_with("remote_write.") && k.show(x) != k.show(y)) return false;
    }
    return true;
  }

  std::mutex writer_mu_;                  // guards writer_ (replaced on SIGHUP)
  std::unique_ptr<RemoteWriter> writer_;  // null: remote_write off
  RemoteWriteConfig remote_write_;        // what writer_ runs with (signal thread only)
  std::set<std::pair<std::string, std::string>> firing_;  // (gpu, cause) logged as started
  std::map<std::pair<int, std::string>, double> waste_;
  Agent& agent_;
  diagnose::Thresholds thresholds_;
  ProfileTrigger trigger_;  // guarded by mu_
  std::mutex mu_;
  int64_t last_ms_ = 0;
  bool rethink_ = false;  // thresholds changed: the cached report is out of date
  diagnose::Report report_;
};

}  // namespace

Result<std::unique_ptr<ServeExtras>> add_serve_extras(Agent& agent, const AgentConfig& config, AgentHooks& hooks) {
  if (!config.profile_on.causes.empty() && !agent.profiles()) {
    return invalid_argument("diagnose.profile_on needs the push receiver (serve --push, or push: {enabled: true}): "
                            "captures ride on it");
  }
  auto extras = std::make_unique<Extras>(agent, config.diagnose, config.profile_on);
  Extras* e = extras.get();
  hooks.self_metrics.push_back([e](Frame& f) { e->fill_findings(f); });
  hooks.findings_json = [e](int64_t now_ms, int64_t window_ms) {
    return diagnose::report_json(window_ms == kWindowMs ? e->report(now_ms) : e->report_over(now_ms, window_ms));
  };

  if (Status s = e->start_remote_write(config); !s) return s;
  hooks.self_metrics.push_back([e](Frame& f) { e->fill_remote_write(f); });
  return std::unique_ptr<ServeExtras>(std::move(extras));
}

}  // namespace gpulens::cli
