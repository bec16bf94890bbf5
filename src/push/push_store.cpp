// Groups, the GPU join, limits and expiry of pushed series.
#include "push/push_store.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <set>
#include <unordered_map>

#include "model/label_rules.h"
#include "model/series_budget.h"
#include "util/json.h"

namespace gpulens::push {
namespace {

// Labels the join sets (or the GPU scope already carries); never passed through.
bool reserved_label(std::string_view n) {
  for (std::string_view r : {"job", "instance", "gpu", "gpu_uuid", "gpu_name", "pid", "process_pid", "namespace", "pod",
                             "container"}) {
    if (n == r) return true;
  }
  return false;
}

std::string normal_uuid(std::string_view u) {
  std::string s(u);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s.starts_with("gpu-")) s.erase(0, 4);
  return s;
}

std::string group_key(const LabelPairs& labels, std::string_view kind) {
  LabelPairs sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  std::string key(kind);
  for (const auto& [n, v] : sorted) key += "\x1f" + n + "\x1e" + v;
  return key;
}

const std::string* find_label(const LabelPairs& labels, std::string_view name) {
  for (const auto& [n, v] : labels) {
    if (n == name) return &v;
  }
  return nullptr;
}

// What the push needs from the agent, read once per push under its locks.
struct Directory {
  std::vector<std::string> uuids;  // normalised, by GPU index
  // pid -> (gpu, labels of its gpu_process_memory_used_bytes series)
  std::unordered_map<int64_t, std::vector<std::pair<int, Labels>>> processes;
};

Directory read_directory(SeriesRegistry* registry, LiveStore* live) {
  Directory d;
  if (!registry) return d;
  if (!live) {  // uuids only
    std::lock_guard lock(registry->mutex());
    for (int g = 0; g < registry->gpu_count(); ++g) {
      const GpuIdentity* id = registry->gpu(g);
      d.uuids.push_back(id ? normal_uuid(id->uuid) : "");
    }
    return d;
  }
  std::scoped_lock lock(registry->mutex(), live->mutex());
  for (int g = 0; g < registry->gpu_count(); ++g) {
    const GpuIdentity* id = registry->gpu(g);
    d.uuids.push_back(id ? normal_uuid(id->uuid) : "");
  }
  for (uint32_t slot : registry->slots_of(FieldId::kGpuProcessMemoryUsed)) {
    if (!live->present(slot)) continue;
    const Series& s = registry->series(slot);
    const std::string_view e = s.extra.get("pid");
    int64_t pid = 0;
    auto [p, ec] = std::from_chars(e.data(), e.data() + e.size(), pid);
    if (e.empty() || ec != std::errc() || p != e.data() + e.size()) continue;
    d.processes[pid].emplace_back(s.gpu, s.extra);
  }
  return d;
}

std::string pushable_names() {
  std::string out;
  for (const auto& f : catalog()) {
    if (pushable(f.id)) out += (out.empty() ? "" : ", ") + std::string(f.name);
  }
  return out;
}

std::string rpc_status(int code, std::string_view message) {
  std::string out = "{\"code\":" + std::to_string(code) + ",\"message\":";
  append_json_string(out, message);
  out += "}\n";
  return out;
}

// 429 for a limit of the receiver's (retry later), 409 for a conflict, else 400.
int status_of(const Status& s, std::string_view reason) {
  if (reason == "conflict") return 409;
  return s.code() == Code::kUnavailable ? 429 : 400;
}

bool pid_alive(const std::string& proc_root, int64_t pid) {
  struct stat st{};
  return stat((proc_root + "/" + std::to_string(pid)).c_str(), &st) == 0;
}

}  // namespace

bool pushable(FieldId id) {
  const FieldDef& f = field(id);
  return f.scope == Scope::kGpu && f.layer == Layer::kMemory &&
         (f.name.starts_with("gpu_allocator_") || id == FieldId::kGpuMemoryFragmentation);
}

void PushStore::count_rejected(std::string_view reason) {
  std::lock_guard lock(mu_);
  ++rejected_[std::string(reason)];
}

size_t PushStore::group_count() const {
  std::lock_guard lock(mu_);
  return groups_.size();
}

int PushStore::gpu_count() const {
  if (!registry_) return 0;
  std::lock_guard lock(registry_->mutex());
  return registry_->gpu_count();
}

std::vector<int64_t> PushStore::pids_on_gpu(int gpu) const {
  std::vector<int64_t> out;
  const Directory dir = read_directory(registry_, live_);  // before mu_, as resolve() does
  for (const auto& [pid, gpus] : dir.processes) {
    for (const auto& g : gpus) {
      if (g.first == gpu) {
        out.push_back(pid);
        break;
      }
    }
  }
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, g] : groups_) {
      for (const Entry& e : g.entries) {
        if (e.gpu == gpu && e.pid > 0) out.push_back(e.pid);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status PushStore::resolve(const std::vector<PushedSample>& samples, const LabelPairs& group_labels,
                          std::vector<Entry>& out, std::string& reason) {
  const Directory dir = read_directory(registry_, live_);
  for (const PushedSample& s : samples) {
    reason = "malformed";
    auto fail = [&](std::string_view why, const std::string& problem) {
      reason = std::string(why);
      return invalid_argument(s.where + ": " + problem);
    };
    // The group's labels win over the sample's (Pushgateway: the URL overrides the body).
    LabelPairs labels = s.labels;
    for (const auto& g : group_labels) {  // a pair, not a binding: clang 14 cannot capture bindings
      auto it = std::find_if(labels.begin(), labels.end(), [&](const auto& l) { return l.first == g.first; });
      if (it != labels.end()) it->second = g.second;
      else labels.emplace_back(g);
    }
    if (labels.size() > options_.limits.max_labels) {
      return fail("limit", s.name + " has " + std::to_string(labels.size()) + " labels with the group's, more than " +
                               std::to_string(options_.limits.max_labels) + " (push.max_labels)");
    }
    auto id = find_field(s.name);
    if (!id || !pushable(*id)) {
      return fail("unknown_metric", printable(s.name) + " is not a metric the push receiver takes (it takes: " +
                                        pushable_names() + ")");
    }
    const FieldDef& f = field(*id);
    // The one rule of every outside label and value (model/label_rules.h).
    const LabelKind kind = f.type == MetricType::kCounter ? LabelKind::kCounter : LabelKind::kGauge;
    const LabelLimits label_limits{options_.limits.max_labels, options_.limits.max_label_length,
                                   options_.limits.max_label_length};
    if (LabelCheck c = check_labels(labels, label_limits, kind); !c) {
      return fail(gpulens::reason(c.problem), s.name + ": " + c.message);
    }
    if (LabelCheck c = check_value(s.value, kind); !c) return fail(gpulens::reason(c.problem), s.name + ": " + c.message);
    if ((s.type == "counter" && f.type != MetricType::kCounter) || (s.type == "gauge" && f.type != MetricType::kGauge) ||
        s.type == "histogram" || s.type == "summary") {
      return fail("malformed", s.name + " pushed as " + s.type + ", but it is a " + std::string(type_name(f.type)));
    }
    int64_t pid = 0;
    const std::string* pid_text = find_label(labels, "pid");
    if (!pid_text) pid_text = find_label(labels, "process_pid");
    if (pid_text) {
      auto [p, ec] = std::from_chars(pid_text->data(), pid_text->data() + pid_text->size(), pid);
      if (ec != std::errc() || p != pid_text->data() + pid_text->size() || pid <= 0 || pid > (1LL << 31)) {
        return fail("malformed", s.name + ": pid \"" + *pid_text + "\" is not a process id");
      }
    }
    int gpu = -1;
    Labels join;  // pid, namespace, pod, container
    const auto procs = pid ? dir.processes.find(pid) : dir.processes.end();
    if (const std::string* uuid = find_label(labels, "gpu_uuid")) {
      const std::string want = normal_uuid(*uuid);
      for (size_t g = 0; g < dir.uuids.size(); ++g) {
        if (!want.empty() && dir.uuids[g] == want) gpu = static_cast<int>(g);
      }
      if (gpu < 0) {
        std::string known;
        for (const auto& u : dir.uuids) known += (known.empty() ? "GPU-" : ", GPU-") + u;
        return fail("unknown_gpu", s.name + ": gpu_uuid \"" + *uuid + "\" is not a GPU of this node (its GPUs: " +
                                       (known.empty() ? "none" : known) + ")");
      }
      if (procs != dir.processes.end()) {
        for (const auto& [g, extra] : procs->second) {
          if (g == gpu) join = extra;
        }
      }
    } else if (pid) {
      if (procs == dir.processes.end()) {
        return fail("unknown_gpu", s.name + ": pid " + std::to_string(pid) +
                                       " uses no GPU of this node (per the driver's process list) and the series has "
                                       "no gpu_uuid label");
      }
      if (procs->second.size() > 1) {
        return fail("unknown_gpu", s.name + ": pid " + std::to_string(pid) + " uses " +
                                       std::to_string(procs->second.size()) +
                                       " GPUs; say which with a gpu_uuid label");
      }
      gpu = procs->second.front().first;
      join = procs->second.front().second;
    } else {
      return fail("unknown_gpu", s.name + " names no GPU: give it a gpu_uuid label, or a pid that uses a GPU");
    }
    if (join.empty() && pid) join = Labels{{"pid", std::to_string(pid)}};
    // The labels were checked above (check_labels): valid names, no name
    // twice; the join's labels are reserved, so none of the rest replaces one.
    Labels extra = std::move(join);
    for (const auto& [n, v] : labels) {
      if (!reserved_label(n)) extra.set(n, v);
    }
    out.push_back({s.name, *id, gpu, std::move(extra), pid, s.value});
  }
  reason.clear();
  return Status::ok();
}

std::string PushStore::series_id(const Entry& e) {
  return std::to_string(static_cast<int>(e.field)) + "|" + std::to_string(e.gpu) + "|" + e.extra.render();
}

void PushStore::drop_entries_locked(const std::string& key, const Group& g, int64_t now_ms) {
  for (const Entry& e : g.entries) {
    std::string id = series_id(e);
    if (auto o = owners_.find(id); o != owners_.end() && o->second == key) owners_.erase(o);
    removed_[std::move(id)] = {g.job, now_ms + kHeldAfterRemovalMs};
  }
}

size_t PushStore::held_locked(const std::string& job, size_t& of_job, int64_t now_ms) {
  std::erase_if(removed_, [&](const auto& r) { return r.second.until_ms <= now_ms; });
  size_t total = removed_.size();
  of_job = 0;
  for (const auto& [id, r] : removed_) of_job += r.job == job ? 1 : 0;
  for (const auto& [k, g] : groups_) {
    total += g.entries.size();
    if (g.job == job) of_job += g.entries.size();
  }
  return total;
}

void PushStore::count_dropped(std::string_view reason, size_t series) {
  std::lock_guard lock(mu_);
  dropped_[std::string(reason)] += series;
}

void PushStore::mark_short_lived(const std::vector<Entry>& entries) {
  if (!registry_) return;
  for (const Entry& e : entries) registry_->mark_short_lived(registry_->slot(e.field, e.gpu, e.extra));
}

Status PushStore::merge(const std::string& key, const std::string& job, std::vector<Entry> entries, bool replace_all,
                        int64_t now_ms, std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(key);
  if (it == groups_.end() && groups_.size() >= options_.limits.max_groups) {
    reason = "limit";
    return unavailable("the receiver holds " + std::to_string(groups_.size()) +
                              " groups, its limit (push.max_groups); groups expire after push.ttl");
  }
  std::vector<Entry> merged;
  if (!replace_all && it != groups_.end()) {
    std::set<std::string_view> names;
    for (const auto& e : entries) names.insert(e.name);
    for (const auto& e : it->second.entries) {
      if (!names.count(e.name)) merged.push_back(e);
    }
  }
  for (auto& e : entries) merged.push_back(std::move(e));
  // Within a group a series is kept once: the last one pushed wins.
  std::set<std::string> seen;
  std::vector<Entry> unique;
  for (auto e = merged.rbegin(); e != merged.rend(); ++e) {
    if (seen.insert(series_id(*e)).second) unique.push_back(std::move(*e));
  }
  std::reverse(unique.begin(), unique.end());
  if (unique.size() > options_.limits.max_series_per_group) {
    reason = "limit";
    return invalid_argument("the group would hold " + std::to_string(unique.size()) + " series, more than " +
                            std::to_string(options_.limits.max_series_per_group) + " (push.max_series_per_group)");
  }
  // Another group holding the same series (groups that differ only in job or
  // instance, which the exported series do not carry) would overwrite it.
  for (const Entry& e : unique) {
    auto o = owners_.find(series_id(e));
    if (o == owners_.end() || o->second == key) continue;
    reason = "conflict";
    std::string other = o->second.substr(o->second.find('\x1f') == std::string::npos ? o->second.size()
                                                                                       : o->second.find('\x1f'));
    for (char& c : other) c = c == '\x1f' ? ' ' : c == '\x1e' ? '=' : c;
    return invalid_argument(e.name + "{" + printable(e.extra.render(), 200) + "} is already pushed by another group (" +
                    printable(other, 200) + "); groups that differ only in job or instance would overwrite each "
                    "other's series: DELETE that group first, or add a label that tells them apart");
  }
  // The budgets count the series held now plus those removed within
  // kHeldAfterRemovalMs, which the history still keeps.
  size_t fresh = 0;
  for (const Entry& e : unique) {
    const std::string id = series_id(e);
    if (!owners_.contains(id) && !removed_.contains(id)) ++fresh;
  }
  size_t of_job = 0;
  const size_t total = held_locked(job, of_job, now_ms);
  if (total + fresh > options_.limits.max_series || of_job + fresh > options_.limits.max_series_per_job) {
    reason = "limit";
    const bool whole = total + fresh > options_.limits.max_series;
    return unavailable("the push would add " + std::to_string(fresh) + " series to the " +
                       std::to_string(whole ? total : of_job) + (whole ? "" : " of job \"" + printable(job) + "\"") +
                       " the receiver holds, more than " +
                       std::to_string(whole ? options_.limits.max_series : options_.limits.max_series_per_job) +
                       (whole ? " (push.max_series)" : " (push.max_series_per_job)") +
                       "; series a DELETE or a new PUT removed count for another " +
                       std::to_string(kHeldAfterRemovalMs / 1000) + " s");
  }
  Group& g = groups_[key];
  {
    // Series of the group this push does not keep are removed.
    std::set<std::string> kept;
    for (const Entry& e : unique) kept.insert(series_id(e));
    Group gone;
    gone.job = g.job.empty() ? job : g.job;
    for (const Entry& e : g.entries) {
      if (!kept.contains(series_id(e))) gone.entries.push_back(e);
    }
    drop_entries_locked(key, gone, now_ms);
  }
  for (const Entry& e : unique) {
    std::string id = series_id(e);
    removed_.erase(id);
    owners_[std::move(id)] = key;
  }
  g.job = job;
  g.entries = std::move(unique);
  g.last_push_ms = now_ms;
  return Status::ok();
}

PushAnswer PushStore::pushgateway(std::string_view method, std::string_view path, std::string_view body,
                                  int64_t now_ms) {
  PushAnswer a;
  auto refuse = [&](int status, std::string_view reason, const std::string& message) {
    count_rejected(reason);
    a.status = status;
    a.body = message + "\n";
    return a;
  };
  auto key_labels = parse_group_path(path, options_.limits);
  if (!key_labels) return refuse(400, "malformed", key_labels.status().message());
  const std::string key = group_key(*key_labels, "pushgateway");
  if (method == "DELETE") {
    if (!body.empty()) return refuse(400, "malformed", "DELETE takes no body");
    std::lock_guard lock(mu_);
    if (auto g = groups_.find(key); g != groups_.end()) {
      drop_entries_locked(key, g->second, now_ms);
      groups_.erase(g);
    }
    a.status = 202;
    return a;
  }
  if (method != "PUT" && method != "POST") {
    a.status = 405;
    a.body = "push with PUT (replace the group), POST (replace metrics of the same names) or DELETE\n";
    return a;
  }
  auto samples = parse_text_body(body, options_.limits);
  if (!samples) return refuse(400, "malformed", "text format: " + samples.status().message());
  std::vector<Entry> entries;
  std::string reason;
  if (Status s = resolve(*samples, *key_labels, entries, reason); !s) {
    count_dropped(reason, samples->size());
    return refuse(400, reason, s.message());
  }
  const std::string* job = find_label(*key_labels, "job");
  const std::vector<Entry> accepted = entries;
  if (Status s = merge(key, job ? *job : "", std::move(entries), method == "PUT", now_ms, reason); !s) {
    count_dropped(reason, samples->size());
    return refuse(status_of(s, reason), reason, s.message());
  }
  mark_short_lived(accepted);
  return a;
}

PushAnswer PushStore::otlp_json(std::string_view body, int64_t now_ms) {
  PushAnswer a;
  a.content_type = "application/json";
  auto refuse = [&](int status, std::string_view reason, const std::string& message) {
    count_rejected(reason);
    a.status = status;
    a.body = rpc_status(status == 429 ? 8 : 3, message);  // RESOURCE_EXHAUSTED, INVALID_ARGUMENT
    return a;
  };
  auto parsed = parse_otlp_json(body, options_.limits);
  if (!parsed) return refuse(400, "malformed", parsed.status().message());
  for (const OtlpResource& r : parsed->resources) {
    if (r.samples.empty()) continue;
    std::vector<Entry> entries;
    std::string reason;
    // Resource attributes are the group's labels, but a point's own attributes win.
    std::vector<PushedSample> samples = r.samples;
    for (auto& s : samples) {
      for (const auto& [n, v] : r.attributes) {
        if (!find_label(s.labels, n)) s.labels.emplace_back(n, v);
      }
    }
    if (Status s = resolve(samples, {}, entries, reason); !s) {
      count_dropped(reason, samples.size());
      return refuse(400, reason, s.message());
    }
    const std::string* job = find_label(r.attributes, "service_name");
    if (!job) job = find_label(r.attributes, "job");
    const std::vector<Entry> accepted = entries;
    if (Status s = merge(group_key(r.attributes, "otlp"), job ? *job : "", std::move(entries), false, now_ms, reason);
        !s) {
      count_dropped(reason, samples.size());
      return refuse(status_of(s, reason), reason, s.message());
    }
    mark_short_lived(accepted);
  }
  if (parsed->rejected_points > 0) {
    count_rejected("partial");
    a.body = "{\"partialSuccess\":{\"rejectedDataPoints\":\"" + std::to_string(parsed->rejected_points) +
             "\",\"errorMessage\":";
    append_json_string(a.body, parsed->rejected_message);
    a.body += "}}\n";
  } else {
    a.body = "{}\n";
  }
  return a;
}

void PushStore::fill(Frame& frame) {
  const int64_t now = frame.time_ms();
  std::lock_guard lock(mu_);
  std::unordered_map<int64_t, bool> alive;
  size_t series = 0;
  for (auto it = groups_.begin(); it != groups_.end();) {
    Group& g = it->second;
    if (now - g.last_push_ms > options_.ttl_ms) {
      ++rejected_["expired"];
      drop_entries_locked(it->first, g, now);
      it = groups_.erase(it);
      continue;
    }
    const bool had = !g.entries.empty();
    Group gone;
    gone.job = g.job;
    std::erase_if(g.entries, [&](const Entry& e) {
      if (!e.pid || !options_.check_pids) return false;
      auto [a, inserted] = alive.try_emplace(e.pid, false);
      if (inserted) a->second = pid_alive(options_.proc_root, e.pid);
      if (!a->second) gone.entries.push_back(e);
      return !a->second;
    });
    drop_entries_locked(it->first, gone, now);
    if (had && g.entries.empty()) {  // every process it described is gone
      ++rejected_["expired"];
      it = groups_.erase(it);
      continue;
    }
    for (const Entry& e : g.entries) frame.set(e.field, e.gpu, e.extra, e.value);
    series += g.entries.size();
    ++it;
  }
  if (!options_.self_metrics) return;
  frame.set_node(FieldId::kAgentPushGroups, static_cast<double>(groups_.size()));
  frame.set_node(FieldId::kAgentPushSeries, static_cast<double>(series));
  for (const auto& [reason, n] : rejected_) frame.set_node(FieldId::kAgentPushRejected, Labels{{"reason", reason}}, static_cast<double>(n));
  for (const auto& [reason, n] : dropped_) {
    frame.set_node(FieldId::kAgentSeriesDropped, Labels{{"source", "push"}, {"reason", reason}},
                   static_cast<double>(n));
  }
}

namespace {

class PushSource : public Source {
 public:
  explicit PushSource(std::shared_ptr<PushStore> store) : store_(std::move(store)) {}
  std::string_view name() const override { return "push"; }
  Status open(SeriesRegistry&) override { return Status::ok(); }
  Status sample(Frame& frame) override {
    store_->fill(frame);
    return Status::ok();
  }

 private:
  std::shared_ptr<PushStore> store_;
};

}  // namespace

std::unique_ptr<Source> make_push_source(std::shared_ptr<PushStore> store) {
  return std::make_unique<PushSource>(std::move(store));
}

}  // namespace gpulens::push
