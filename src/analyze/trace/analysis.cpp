// The per-rank analyses. Each works on the indices of the selected events,
// in file order, and sorts only what it needs.
#include "analyze/trace/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "analyze/trace/classify.h"

namespace gpulens::trace {
namespace {

struct Interval {
  double s, e;
};

// Sorts and merges overlapping intervals (touching ones stay apart, as in HTA).
std::vector<Interval> merge(std::vector<Interval> v) {
  std::stable_sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.s < b.s; });
  std::vector<Interval> out;
  for (const Interval& iv : v) {
    if (out.empty() || iv.s > out.back().e) out.push_back(iv);
    else out.back().e = std::max(out.back().e, iv.e);
  }
  return out;
}

double length(const std::vector<Interval>& v) {
  double sum = 0;
  for (const Interval& iv : v) sum += iv.e - iv.s;
  return sum;
}

// Sweeps merged interval sets (one bit each) and returns the time spent in
// each non-empty combination of bits.
std::map<unsigned, double> sweep(const std::vector<std::vector<Interval>>& sets, bool truncate) {
  std::vector<std::pair<double, int>> edges;
  for (size_t i = 0; i < sets.size(); ++i) {
    int bit = 1 << i;
    for (const Interval& iv : sets[i]) {
      edges.emplace_back(iv.s, bit);
      edges.emplace_back(iv.e, -bit);
    }
  }
  std::stable_sort(edges.begin(), edges.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::map<unsigned, double> out;
  int running = 0;
  for (size_t i = 0; i + 1 < edges.size(); ++i) {
    running += edges[i].second;
    if (running <= 0) continue;
    double d = edges[i + 1].first - edges[i].first;
    if (truncate) d = std::trunc(d);  // HTA: .astype(int) on each segment
    out[static_cast<unsigned>(running)] += d;
  }
  return out;
}

Distribution distribution(std::vector<double> v) {
  Distribution d;
  d.count = v.size();
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  auto q = [&](double p) {  // linear interpolation, as numpy's default
    double pos = p * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  d.p50 = q(0.5);
  d.p95 = q(0.95);
  d.max = v.back();
  return d;
}

bool is_work(const Event& e) {
  return e.kind == EventKind::kKernel || e.kind == EventKind::kMemcpy || e.kind == EventKind::kMemset;
}

class RankAnalysis {
 public:
  RankAnalysis(const Trace& t, const Options& o, bool step_filter)
      : t_(t), o_(o), rules_(o.compat_hta ? Rules::kHta : Rules::kFixed) {
    select(step_filter);
    type_.resize(t.names.size() * 8, 0xff);
  }

  RankReport run() {
    RankReport r;
    r.rank = t_.rank.value_or(0);
    r.path = t_.path;
    r.events = sel_.size();
    r.filtered_out = t_.events.size() - sel_.size();
    r.skipped = t_.skipped;
    collect_gpu();
    temporal_and_types(r);
    idle_by_stream(r);
    top_kernels(r);
    launch_delay(r);
    memory(r);
    queue_length(r);
    cpu_ops(r);
    r.verdict = judge(r);
    return r;
  }

 private:
  bool gpu_like(const Event& e) const {  // HTA's GPUKernelFilter
    if (e.stream >= 0 && e.correlation >= 0) return true;
    std::string_view n = t_.name_of(e);
    return n == "Event Sync" || n == "Context Sync";
  }

  // HTA drops the last profiler step: CPU events that start at or after the
  // last ProfilerStep#N, and GPU events not launched by a kept CPU event.
  void select(bool step_filter) {
    const auto& ev = t_.events;
    kept_.assign(ev.size(), true);
    if (step_filter) {
      double last_start = -INFINITY, min_cpu = INFINITY;
      bool any_cpu = false, any_step = false;
      for (const Event& e : ev) {
        if (gpu_like(e)) continue;
        any_cpu = true;
        min_cpu = std::min(min_cpu, e.ts);
        if (is_profiler_step(t_.name_of(e))) {
          any_step = true;
          last_start = std::max(last_start, e.ts);
        }
      }
      if (any_cpu) {
        if (!any_step) last_start = min_cpu;
        std::unordered_set<int64_t> corr;
        for (size_t i = 0; i < ev.size(); ++i) {
          if (gpu_like(ev[i])) continue;
          kept_[i] = ev[i].ts < last_start;
          if (kept_[i]) corr.insert(ev[i].correlation);
        }
        for (size_t i = 0; i < ev.size(); ++i)
          if (gpu_like(ev[i])) kept_[i] = corr.count(ev[i].correlation) > 0;
      }
    }
    for (size_t i = 0; i < ev.size(); ++i)
      if (kept_[i]) sel_.push_back(static_cast<uint32_t>(i));
  }

  KernelType type_of(const Event& e) {
    uint8_t& slot = type_[e.name * 8 + static_cast<size_t>(e.kind)];
    if (slot == 0xff) slot = static_cast<uint8_t>(classify_kernel(e.kind, t_.name_of(e), rules_));
    return static_cast<KernelType>(slot);
  }

  // GPU work: HTA counts everything with a stream arg; ours only kernels,
  // copies and sets (sync waits and annotations are not work).
  void collect_gpu() {
    for (uint32_t i : sel_) {
      const Event& e = t_.events[i];
      if (!e.on_gpu()) continue;
      if (!o_.compat_hta && !is_work(e)) continue;
      gpu_.push_back(i);
    }
  }

  void temporal_and_types(RankReport& r) {
    std::vector<Interval> all, by_type[3];
    for (uint32_t i : gpu_) {
      const Event& e = t_.events[i];
      all.push_back({e.ts, e.end()});
      KernelType k = type_of(e);
      if (k != KernelType::kOther) by_type[static_cast<int>(k)].push_back({e.ts, e.end()});
    }
    if (all.empty()) return;
    auto merged = merge(std::move(all));
    auto comp = merge(std::move(by_type[0]));
    auto comm = merge(std::move(by_type[1]));
    auto mem = merge(std::move(by_type[2]));
    Temporal& tb = r.temporal;
    tb.span_us = merged.back().e - merged.front().s;
    tb.idle_us = tb.span_us - length(merged);
    tb.compute_us = length(comp);
    tb.non_compute_us = tb.span_us - tb.compute_us - tb.idle_us;

    static constexpr const char* kNames[3] = {"computation", "communication", "memory"};
    for (auto [bits, us] : sweep({comp, comm, mem}, o_.compat_hta)) {
      std::string label;
      for (int b = 0; b < 3; ++b) {
        if (!(bits & (1u << b))) continue;
        if (!label.empty()) label += " overlapping ";
        label += kNames[b];
      }
      r.kernel_types.push_back({label, us});
    }
    std::stable_sort(r.kernel_types.begin(), r.kernel_types.end(),
                     [](auto& a, auto& b) { return a.us > b.us; });

    double comm_len = length(comm);
    if (comm_len > 0) {
      auto both = sweep({comm, comp}, false);
      r.comm_comp_overlap_pct = 100.0 * both[3] / comm_len;
    }
  }

  // The CPU call that enqueued each GPU event, by correlation id.
  std::unordered_map<int64_t, uint32_t> launches() {
    std::unordered_map<int64_t, uint32_t> by_corr;
    const auto& ev = t_.events;
    if (o_.compat_hta) {
      // HTA links a GPU event to the last CPU event in the file that shares
      // its correlation id (whatever that event is), before filtering.
      for (size_t i = 0; i < ev.size(); ++i)
        if (ev[i].correlation != kNoCorrelation && !gpu_like(ev[i])) by_corr[ev[i].correlation] = static_cast<uint32_t>(i);
      for (auto it = by_corr.begin(); it != by_corr.end();)
        it = kept_[it->second] ? std::next(it) : by_corr.erase(it);
      return by_corr;
    }
    for (uint32_t i : sel_) {
      const Event& e = ev[i];
      if (e.kind != EventKind::kRuntime || e.correlation == kNoCorrelation) continue;
      if (!is_launch_call(t_.name_of(e), Rules::kFixed)) continue;
      auto [it, fresh] = by_corr.emplace(e.correlation, i);
      if (!fresh && e.ts < ev[it->second].ts) it->second = i;  // runtime call before its driver call
    }
    return by_corr;
  }

  void idle_by_stream(RankReport& r) {
    auto launch = launches();
    std::map<int, std::vector<uint32_t>> streams;
    for (uint32_t i : sel_) {
      const Event& e = t_.events[i];
      if (e.on_gpu() && is_work(e)) streams[e.stream].push_back(i);
    }
    for (auto& [stream, ids] : streams) {
      std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return t_.events[a].ts < t_.events[b].ts; });
      StreamIdle s;
      s.stream = stream;
      double prev_end = t_.events[ids[0]].end();
      for (size_t k = 1; k < ids.size(); ++k) {
        const Event& e = t_.events[ids[k]];
        double before = prev_end;
        double gap = e.ts - before;
        prev_end = o_.compat_hta ? e.end() : std::max(prev_end, e.end());
        if (!o_.compat_hta && gap <= 0) continue;
        auto it = launch.find(e.correlation);
        bool host = false;
        if (it != launch.end()) {
          host = t_.events[it->second].ts > before;
        } else if (o_.compat_hta && e.correlation >= 0 && t_.first_is_event && kept_[0]) {
          host = t_.events[0].ts > before;  // HTA joins unmatched ids to row 0
        }
        if (host) s.host_wait_us += gap;
        else if (gap < o_.kernel_wait_us) s.kernel_wait_us += gap;
        else s.other_us += gap;
      }
      r.idle_by_stream.push_back(s);
    }
  }

  void top_kernels(RankReport& r) {
    std::unordered_map<uint32_t, TopKernel> by_name;
    for (uint32_t i : gpu_) {
      const Event& e = t_.events[i];
      KernelType k = type_of(e);
      if (k == KernelType::kOther) continue;
      TopKernel& tk = by_name[e.name];
      if (tk.count == 0) {
        tk.name = std::string(t_.name_of(e));
        tk.type = std::string(to_string(k));
      }
      ++tk.count;
      tk.total_us += e.dur;
    }
    std::vector<TopKernel> all;
    all.reserve(by_name.size());
    for (auto& [id, tk] : by_name) all.push_back(std::move(tk));
    std::sort(all.begin(), all.end(), [](auto& a, auto& b) {
      return a.total_us != b.total_us ? a.total_us > b.total_us : a.name < b.name;
    });
    if (all.size() > o_.top_n) all.resize(o_.top_n);
    r.top_kernels = std::move(all);
  }

  void launch_delay(RankReport& r) {
    const auto& ev = t_.events;
    std::vector<double> delays;
    if (o_.compat_hta) {
      // HTA: every CPU event (no stream) and every GPU event sharing a
      // correlation id with a cudaLaunchKernel/ExC/MemcpyAsync/MemsetAsync.
      std::unordered_set<int64_t> ids;
      for (uint32_t i : sel_)
        if (is_launch_call(t_.name_of(ev[i]), Rules::kHta)) ids.insert(ev[i].correlation);
      std::unordered_map<int64_t, std::vector<double>> cpu_end;
      for (uint32_t i : sel_)
        if (!ev[i].on_gpu() && ids.count(ev[i].correlation)) cpu_end[ev[i].correlation].push_back(ev[i].end());
      for (uint32_t i : sel_) {
        if (!ev[i].on_gpu()) continue;
        auto it = cpu_end.find(ev[i].correlation);
        if (it == cpu_end.end()) continue;
        for (double end : it->second) delays.push_back(std::max(0.0, ev[i].ts - end));
      }
    } else {
      auto launch = launches();
      for (uint32_t i : gpu_) {
        auto it = launch.find(ev[i].correlation);
        if (it != launch.end()) delays.push_back(std::max(0.0, ev[i].ts - ev[it->second].end()));
      }
    }
    r.launch_delay = distribution(std::move(delays));
  }

  void memory(RankReport& r) {
    std::map<std::string_view, MemoryTime> by_dir;
    for (uint32_t i : gpu_) {
      const Event& e = t_.events[i];
      if (type_of(e) != KernelType::kMemory) continue;
      std::string_view dir = memory_direction(t_.name_of(e));
      MemoryTime& m = by_dir[dir];
      m.direction = std::string(dir);
      ++m.count;
      m.total_us += e.dur;
      if (e.bytes > 0) m.bytes += e.bytes;
    }
    for (auto& [dir, m] : by_dir) r.memory.push_back(std::move(m));
  }

  // HTA's queue length: +1 when a launch call enqueues work on a stream,
  // -1 when that work starts on the GPU.
  void queue_length(RankReport& r) {
    const auto& ev = t_.events;
    std::unordered_map<int64_t, int32_t> stream_of;
    for (uint32_t i : gpu_) stream_of.emplace(ev[i].correlation, ev[i].stream);
    std::map<int, std::vector<std::pair<double, int>>> steps;
    std::unordered_set<int64_t> enqueued;
    for (uint32_t i : sel_) {
      const Event& e = ev[i];
      if (e.on_gpu() || !is_queue_launch_call(t_.name_of(e))) continue;
      auto it = stream_of.find(e.correlation);
      if (it == stream_of.end()) continue;
      steps[it->second].emplace_back(e.ts, +1);
      enqueued.insert(e.correlation);
    }
    for (uint32_t i : gpu_)
      if (enqueued.count(ev[i].correlation)) steps[ev[i].stream].emplace_back(ev[i].ts, -1);
    for (auto& [stream, v] : steps) {
      // Ties: HTA's unstable sort usually puts the GPU start first.
      std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) {
        return a.first != b.first ? a.first < b.first : a.second < b.second;
      });
      QueueLength q;
      q.stream = stream;
      double sum = 0;
      int len = 0;
      q.max = -INFINITY;
      for (auto& [ts, d] : v) {
        len += d;
        sum += len;
        q.max = std::max(q.max, static_cast<double>(len));
      }
      q.mean = sum / static_cast<double>(v.size());
      r.queue_length.push_back(q);
    }
  }

  // Self time per name: the events of each thread sorted by start (longer
  // first at equal starts), a stack of the open ones; each event's time is
  // taken from the self time of the innermost open event containing it.
  void cpu_ops(RankReport& r) {
    const auto& ev = t_.events;
    for (const Event& e : ev) {
      if (e.on_gpu() || (e.kind != EventKind::kCpuOp && e.kind != EventKind::kRuntime)) {
        r.gpu_timeline = true;
        break;
      }
    }
    struct Item {
      uint32_t thread;
      double ts, dur;
      uint32_t index;
    };
    std::vector<Item> items;
    for (uint32_t i : sel_) {
      const Event& e = ev[i];
      if (e.on_gpu() || (e.kind != EventKind::kCpuOp && e.kind != EventKind::kRuntime)) continue;
      items.push_back({e.thread, e.ts, e.dur, i});
    }
    if (items.empty()) return;
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
      if (a.thread != b.thread) return a.thread < b.thread;
      if (a.ts != b.ts) return a.ts < b.ts;
      if (a.dur != b.dur) return a.dur > b.dur;
      return a.index < b.index;
    });
    std::vector<double> self(items.size());
    std::vector<size_t> open;  // indices into items
    CpuSummary& c = r.cpu;
    c.events = items.size();
    double first = INFINITY, last = -INFINITY;
    for (size_t k = 0; k < items.size(); ++k) {
      const Item& it = items[k];
      if (k == 0 || it.thread != items[k - 1].thread) {
        open.clear();
        ++c.threads;
      }
      double end = it.ts + it.dur;
      first = std::min(first, it.ts);
      last = std::max(last, end);
      while (!open.empty() && items[open.back()].ts + items[open.back()].dur <= it.ts) open.pop_back();
      self[k] = it.dur;
      // The innermost open event loses the part inside it; a part that
      // outlives it (malformed nesting) is taken from the next one out.
      double from = it.ts;
      for (size_t s = open.size(); s-- > 0 && from < end;) {
        const Item& p = items[open[s]];
        double part = std::min(end, p.ts + p.dur) - from;
        if (part > 0) {
          self[open[s]] -= part;
          from = p.ts + p.dur;
        }
      }
      open.push_back(k);
      if (t_.cat_of(ev[it.index]).empty()) ++c.uncategorised;
    }
    c.span_us = last - first;
    std::unordered_map<uint32_t, size_t> slot;  // name id -> ops index
    std::vector<CpuOp> ops;
    uint32_t step_slot = UINT32_MAX;
    for (size_t k = 0; k < items.size(); ++k) {
      const Event& e = ev[items[k].index];
      double s = std::max(0.0, self[k]);
      c.busy_us += s;
      std::string_view name = t_.name_of(e);
      size_t at;
      if (is_profiler_step(name)) {
        if (step_slot == UINT32_MAX) {
          step_slot = static_cast<uint32_t>(ops.size());
          ops.push_back({"ProfilerStep#*", 0, 0, 0});
        }
        at = step_slot;
      } else {
        auto [pos, fresh] = slot.emplace(e.name, ops.size());
        if (fresh) ops.push_back({std::string(name), 0, 0, 0});
        at = pos->second;
      }
      CpuOp& op = ops[at];
      ++op.count;
      op.self_us += s;
      op.total_us += e.dur;
    }
    std::sort(ops.begin(), ops.end(), [](const CpuOp& a, const CpuOp& b) {
      return a.self_us != b.self_us ? a.self_us > b.self_us : a.name < b.name;
    });
    if (ops.size() > o_.top_n) ops.resize(o_.top_n);
    r.top_cpu_ops = std::move(ops);
  }

  const Trace& t_;
  const Options& o_;
  Rules rules_;
  std::vector<bool> kept_;
  std::vector<uint32_t> sel_;   // selected events, file order
  std::vector<uint32_t> gpu_;   // selected GPU work
  std::vector<uint8_t> type_;   // KernelType cache per (name, kind)
};

}  // namespace

RankReport analyse_rank(const Trace& t, const Options& opts, bool apply_step_filter) {
  return RankAnalysis(t, opts, apply_step_filter).run();
}

JobReport analyse_job(const std::vector<Trace>& traces, const Options& opts) {
  JobReport job;
  job.compat_hta = opts.compat_hta;
  // HTA filters only when its job-wide symbol table has two or more
  // distinct ProfilerStep names.
  bool filter = false;
  if (opts.compat_hta) {
    std::set<std::string_view> steps;
    for (const Trace& t : traces)
      for (const std::string& n : t.names)
        if (is_profiler_step(n)) steps.insert(n);
    filter = steps.size() > 1;
  }
  // HTA moves every timestamp so that the job's first event is at 0. With
  // float timestamps that changes the last bits, which its integer
  // truncations and equality tests see; compat mode does the same.
  double shift = INFINITY;
  if (opts.compat_hta)
    for (const Trace& t : traces)
      for (const Event& e : t.events) shift = std::min(shift, e.ts);
  for (size_t i = 0; i < traces.size(); ++i) {
    RankReport r;
    if (std::isfinite(shift)) {
      Trace aligned = traces[i];
      for (Event& e : aligned.events) e.ts -= shift;
      r = analyse_rank(aligned, opts, filter);
    } else {
      r = analyse_rank(traces[i], opts, filter);
    }
    if (!traces[i].rank) r.rank = static_cast<int>(i);
    job.ranks.push_back(std::move(r));
  }
  std::stable_sort(job.ranks.begin(), job.ranks.end(), [](auto& a, auto& b) { return a.rank < b.rank; });
  job.stragglers = find_stragglers(job.ranks);
  return job;
}

}  // namespace gpulens::trace
