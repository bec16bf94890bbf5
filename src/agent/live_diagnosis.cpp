// Live diagnosis every 15 s over the last 30 min of history: the report,
// the findings and waste metrics, the log lines when findings change; what
// a SIGHUP changes in them.
#include "agent/live_diagnosis.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

#include "diagnose/live_input.h"
#include "diagnose/report.h"
#include "util/duration.h"
#include "util/log.h"

namespace gpulens {
namespace {

constexpr int64_t kDiagnoseEveryMs = 15'000;
constexpr int64_t kWindowMs = kFindingsWindowMs;

// A diagnosis builds the window's signals (megabytes) and frees them; glibc
// keeps freed memory in the calling thread's arena, so each thread that ran
// one held ~24 MiB more RSS for good. Handing the free pages back is a few
// percent of the agent's CPU (docs/PERFORMANCE.md "History memory").
void release_free_memory() { malloc_trim(0); }

class Diagnosis final : public LiveDiagnosis {
 public:
  Diagnosis(Agent& agent, diagnose::Thresholds t, ProfileTriggerOptions p)
      : agent_(agent),
        thresholds_(t),
        trigger_(std::move(p), agent.profiles(), [&agent](int gpu) {
          return agent.push_store() ? agent.push_store()->pids_on_gpu(gpu) : std::vector<int64_t>{};
        }) {}

  // Re-runs the diagnosis when the cached one (report_) is older than the
  // period. Called with mu_ held; report_ is read under it, never copied
  // (it carries every evidence's series, up to 600 points each).
  void refresh(int64_t now_ms) {
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

  std::string findings_json(int64_t now_ms, int64_t window_ms) override {
    if (window_ms != kWindowMs) return diagnose::report_json(report_over(now_ms, window_ms));
    std::lock_guard lock(mu_);
    refresh(now_ms);
    return diagnose::report_json(report_);
  }

  void fill_findings(Frame& f) override {
    std::lock_guard lock(mu_);
    refresh(f.time_ms());
    for (const auto& h : report_.hosts) {
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
    for (const auto& [key, seconds] : waste_) {
      f.set(FieldId::kAgentWasteGpuSeconds, key.first, Labels{{"cause", key.second}}, seconds);
    }
  }

  std::string host() const { return agent_host(agent_); }

  void reconfigure(const diagnose::Thresholds& thresholds, const ProfileTriggerOptions& profile_on) override {
    std::lock_guard lock(mu_);
    thresholds_ = thresholds;
    trigger_.set_options(profile_on);
    rethink_ = true;  // the next report is computed with the new thresholds
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

std::unique_ptr<LiveDiagnosis> make_live_diagnosis(Agent& agent, diagnose::Thresholds thresholds,
                                                   ProfileTriggerOptions profile_on) {
  return std::make_unique<Diagnosis>(agent, thresholds, std::move(profile_on));
}

std::string agent_host(Agent& agent) {
  std::string h = agent.registry().hostname();
  if (h.empty()) {
    char buf[256] = {};
    gethostname(buf, sizeof buf - 1);
    h = buf;
  }
  return h;
}

}  // namespace gpulens
