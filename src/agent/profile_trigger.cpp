// Diagnosis-triggered captures: the choice of finding and process, the rate
// limits, the collection of results and their summaries.
#include "agent/profile_trigger.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "analyze/trace/files.h"
#include "diagnose/report.h"
#include "util/duration.h"
#include "util/log.h"

namespace gpulens {
namespace {

constexpr int64_t kHourMs = 3'600'000;
constexpr size_t kTop = 3;
constexpr int64_t kRetryMs = 15'000;  // a refused request is asked again after this (one diagnosis period)

std::string pct(double share) {
  char b[16];
  std::snprintf(b, sizeof b, "%.1f%%", share * 100);
  return b;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string items_text(const std::vector<diagnose::ProfileItem>& top) {
  std::string o;
  for (size_t i = 0; i < top.size(); ++i) o += (i ? ", " : "") + top[i].name + " " + pct(top[i].share);
  return o;
}

bool numeric_gpu(const std::string& gpu) {
  return !gpu.empty() && std::all_of(gpu.begin(), gpu.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

const std::vector<std::string_view>& profile_causes() {
  static const std::vector<std::string_view> causes{"input_pipeline", "idle",          "host_transfer",
                                                    "memory_bandwidth", "communication", "kernel_launch",
                                                    "small_batch"};
  return causes;
}

std::string_view profile_kind(std::string_view cause) {
  return cause == "input_pipeline" || cause == "idle" ? "stacks" : "torch";
}

Status check_profile_cause(std::string_view cause) {
  const auto& ok = profile_causes();
  if (std::find(ok.begin(), ok.end(), cause) != ok.end()) return Status::ok();
  std::string list;
  for (auto c : ok) list += (list.empty() ? "" : ", ") + std::string(c);
  const auto& all = diagnose::cause_order();
  if (std::find(all.begin(), all.end(), cause) != all.end()) {
    return invalid_argument("\"" + std::string(cause) +
                            "\" is a cause of the GPU or the node, which a capture inside the program does not "
                            "explain (profile_on takes: " + list + ")");
  }
  return invalid_argument("unknown cause \"" + std::string(cause.substr(0, 64)) + "\" (profile_on takes: " + list +
                          ")");
}

diagnose::ProfileSummary summarise_trace(const trace::JobReport& job) {
  diagnose::ProfileSummary s;
  s.kind = "torch";
  s.state = "done";
  if (job.ranks.empty()) {
    s.summary = "the trace holds no events";
    return s;
  }
  const trace::RankReport& r = job.ranks.front();
  s.verdict = r.verdict.bound;
  if (r.gpu_timeline && !r.top_kernels.empty()) {
    // Shares of the time the GPU ran something (compute and the rest).
    const double busy = r.temporal.compute_us + r.temporal.non_compute_us;
    s.of = "kernels";
    for (size_t i = 0; i < r.top_kernels.size() && i < kTop; ++i) {
      s.top.push_back({r.top_kernels[i].name, busy > 0 ? std::min(1.0, r.top_kernels[i].total_us / busy) : 0});
    }
    s.summary = "top kernels by GPU time: " + items_text(s.top) + "; verdict " + r.verdict.bound;
    return s;
  }
  s.of = "cpu_ops";
  for (size_t i = 0; i < r.top_cpu_ops.size() && i < kTop; ++i) {
    s.top.push_back({r.top_cpu_ops[i].name, r.cpu.busy_us > 0 ? r.top_cpu_ops[i].self_us / r.cpu.busy_us : 0});
  }
  s.summary = s.top.empty() ? "the trace has no CPU ops and no GPU timeline"
                            : "top CPU ops by self time: " + items_text(s.top) +
                                  (r.gpu_timeline ? std::string() : " (no GPU timeline in the trace)");
  return s;
}

diagnose::ProfileSummary summarise_stacks(const StacksAnalysis& a) {
  diagnose::ProfileSummary s;
  s.kind = "stacks";
  s.state = "done";
  s.of = "frames";
  s.dataloader_wait = a.dataloader_wait;
  s.device_sync = a.device_sync;
  s.verdict = a.verdict;
  const StackThread* main = nullptr;
  for (const StackThread& t : a.threads) {
    if (t.main) main = &t;
  }
  if (main) {
    std::vector<const StackFrame*> frames;
    for (const StackFrame& f : main->frames) {
      if (f.self > 0) frames.push_back(&f);
    }
    std::stable_sort(frames.begin(), frames.end(), [](auto* x, auto* y) { return x->self > y->self; });
    for (size_t i = 0; i < frames.size() && i < kTop; ++i) {
      s.top.push_back({frames[i]->function + " (" + base_name(frames[i]->file) + ":" +
                           std::to_string(frames[i]->line) + ")",
                       frames[i]->self});
    }
  }
  std::string hottest = s.top.empty() ? "no main-thread samples" : "hottest frames: " + items_text(s.top);
  if (a.verdict == "dataloader") {
    s.summary = "the main thread waits on the DataLoader in " + pct(a.dataloader_wait) + " of its samples; " + hottest;
  } else if (a.verdict == "device_sync") {
    s.summary = "the main thread waits on device syncs in " + pct(a.device_sync) + " of its samples; " + hottest;
  } else {
    s.summary = "the main thread does not wait on the DataLoader (" + pct(a.dataloader_wait) + ") or a device sync (" +
                pct(a.device_sync) + "); " + hottest;
  }
  return s;
}

Result<trace::JobReport> analyse_trace_upload(std::string_view bytes, const std::string& keep_path) {
  std::string path = keep_path, dir;
  if (path.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpulens-profile-XXXXXX";
    if (!::mkdtemp(tmpl.data())) return io_error("cannot make a temporary directory in " + tmpl);
    dir = tmpl;
    path = dir + "/trace.json.gz";
  }
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f.flush()) {
      if (!dir.empty()) {
        ::unlink(path.c_str());
        ::rmdir(dir.c_str());
      }
      return io_error("cannot write " + path);
    }
  }
  auto job = trace::analyse_files({path}, {}, {}, false);
  if (!dir.empty()) {
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
  return job;
}

void ProfileTrigger::collect(int64_t now_ms) {
  for (auto& [id, c] : captures_) {
    if (c.summary.state != "requested") continue;
    auto e = table_->get(id, now_ms);
    if (!e) {
      c.summary.state = "failed";
      c.summary.summary = "the agent forgot the capture";
      c.summary.at_ms = now_ms;
      continue;
    }
    if (e->state == push::ProfileState::kPending || e->state == push::ProfileState::kRunning) continue;
    diagnose::ProfileSummary s;
    if (e->state == push::ProfileState::kDone) {
      if (c.kind == "stacks") {
        auto a = analyse_stacks(e->result);
        if (a) s = summarise_stacks(*a);
        else s.summary = "the capture cannot be analysed: " + a.status().message();
      } else {
        auto job = analyse_trace_upload(e->result);
        if (job) s = summarise_trace(*job);
        else s.summary = "the trace cannot be analysed: " + job.status().message();
      }
      if (s.state.empty()) s.state = "failed";
    } else {
      s.state = "failed";
      s.summary = "capture " + std::string(state_name(e->state)) + ": " + e->error;
    }
    s.kind = c.kind;
    s.pid = c.pid;
    s.capture = id;
    s.at_ms = e->finished_ms ? e->finished_ms : now_ms;
    c.summary = std::move(s);
    log::info("profile_attached", {{"capture", id}, {"pid", std::to_string(c.pid)}, {"state", c.summary.state},
                                   {"summary", c.summary.summary}});
  }
}

void ProfileTrigger::request(const std::string& gpu, const std::string& cause, int64_t now_ms) {
  const Key key{gpu, cause};
  const std::string kind(profile_kind(cause));
  std::vector<int64_t> on = pids_on_gpu_(std::atoi(gpu.c_str()));
  const std::vector<int64_t> clients = table_->clients(now_ms);
  std::vector<int64_t> pids;
  std::set_intersection(on.begin(), on.end(), clients.begin(), clients.end(), std::back_inserter(pids));
  if (pids.empty()) return;  // no process there runs the client: nothing to capture in
  // The process's capture of the same kind within the period serves this finding too.
  for (int64_t pid : pids) {
    auto last = last_by_pid_.find(pid);
    if (last == last_by_pid_.end() || now_ms - last->second >= options_.per_process_ms) continue;
    for (auto it = captures_.rbegin(); it != captures_.rend(); ++it) {
      if (it->second.pid == pid && it->second.kind == kind && now_ms - it->second.summary.at_ms < options_.per_process_ms) {
        attached_[key] = it->first;
        skipped_.erase(key);
        return;
      }
    }
  }
  while (!recent_.empty() && now_ms - recent_.front() >= kHourMs) recent_.pop_front();
  int64_t chosen = 0;
  for (int64_t pid : pids) {
    auto last = last_by_pid_.find(pid);
    if (last == last_by_pid_.end() || now_ms - last->second >= options_.per_process_ms) {
      chosen = pid;
      break;
    }
  }
  diagnose::ProfileSummary skip;
  skip.state = "skipped";
  skip.kind = kind;
  skip.pid = pids.front();
  skip.at_ms = now_ms;
  if (chosen == 0) {
    skip.summary = "pid " + std::to_string(pids.front()) + " was captured at " +
                   format_rfc3339(last_by_pid_[pids.front()]) + "; one capture per process per " +
                   format_duration(options_.per_process_ms) + " (diagnose.profile_every)";
    skipped_[key] = skip;
    return;
  }
  if (static_cast<int64_t>(recent_.size()) >= options_.max_per_hour) {
    skip.pid = chosen;
    skip.summary = std::to_string(recent_.size()) + " captures in the last hour, the limit " +
                   "(diagnose.profile_max_per_hour)";
    skipped_[key] = skip;
    return;
  }
  push::ProfileRequest req;
  req.pid = chosen;
  req.kind = kind;
  req.duration_s = static_cast<double>(options_.window_ms) / 1000.0;
  req.max_bytes = static_cast<uint64_t>(options_.max_bytes);
  std::string id;
  if (auto e = table_->request(std::move(req), now_ms, id)) {
    // A capture of someone else in progress (409) or a full table: tried again after a diagnosis period.
    retry_at_[key] = now_ms + kRetryMs;
    log::info("profile_not_requested", {{"pid", std::to_string(chosen)}, {"cause", cause}, {"why", e->message}});
    return;
  }
  ++requested_;
  last_by_pid_[chosen] = now_ms;
  recent_.push_back(now_ms);
  Capture c;
  c.kind = kind;
  c.pid = chosen;
  c.summary.state = "requested";
  c.summary.kind = kind;
  c.summary.pid = chosen;
  c.summary.capture = id;
  c.summary.at_ms = now_ms;
  captures_[id] = std::move(c);
  attached_[key] = id;
  skipped_.erase(key);
  log::info("profile_requested", {{"gpu", gpu}, {"cause", cause}, {"pid", std::to_string(chosen)}, {"kind", kind},
                                  {"capture", id}});
}

void ProfileTrigger::step(diagnose::Report& r, int64_t now_ms) {
  if (!table_) return;
  collect(now_ms);
  std::map<Key, bool> present;
  for (const auto& h : r.hosts) {
    for (const auto& g : h.gpus) {
      for (const auto& f : g.findings) {
        const Key key{g.gpu, f.cause};
        present[key] = true;
        if (options_.causes.empty() || !numeric_gpu(g.gpu)) continue;
        if (f.state != diagnose::State::kFiring || !f.ongoing) continue;
        if (std::find(options_.causes.begin(), options_.causes.end(), f.cause) == options_.causes.end()) continue;
        if (attached_.contains(key)) continue;
        if (auto retry = retry_at_.find(key); retry != retry_at_.end() && now_ms < retry->second) continue;
        request(g.gpu, f.cause, now_ms);
      }
    }
  }
  // A summary goes with its finding; one whose finding left the report is dropped.
  std::erase_if(attached_, [&](const auto& a) { return !present.contains(a.first); });
  std::erase_if(skipped_, [&](const auto& a) { return !present.contains(a.first); });
  std::erase_if(retry_at_, [&](const auto& a) { return now_ms >= a.second; });
  std::erase_if(captures_, [&](const auto& c) {
    if (now_ms - c.second.summary.at_ms < std::max(options_.per_process_ms, kHourMs)) return false;
    return std::none_of(attached_.begin(), attached_.end(), [&](const auto& a) { return a.second == c.first; });
  });
  std::erase_if(last_by_pid_, [&](const auto& p) { return now_ms - p.second >= options_.per_process_ms; });
  attach(r);
}

void ProfileTrigger::attach(diagnose::Report& r) const {
  for (auto& h : r.hosts) {
    for (auto& g : h.gpus) {
      for (auto& f : g.findings) {
        const Key key{g.gpu, f.cause};
        if (auto a = attached_.find(key); a != attached_.end()) {
          if (auto c = captures_.find(a->second); c != captures_.end()) f.profile = c->second.summary;
        } else if (auto s = skipped_.find(key); s != skipped_.end()) {
          f.profile = s->second;
        }
      }
    }
  }
}

}  // namespace gpulens
