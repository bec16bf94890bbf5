// JSON and text rendering of trace reports. The JSON is written by hand:
// the shape is small and fixed, and numbers use the shortest exact form.
#include "analyze/trace/report.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/json.h"
#include "util/terminal_text.h"

namespace gpulens::trace {
namespace {

class Json {
 public:
  std::string out;

  void str(std::string_view s) { append_json_string(out, s); }
  void num(double v) {
    if (!std::isfinite(v)) {
      out += "null";
      return;
    }
    if (v == 0) v = 0;  // no "-0"
    char b[32];
    auto [p, ec] = std::to_chars(b, b + sizeof b, v);
    out.append(b, p);
  }
  void key(std::string_view k) {
    str(k);
    out += ": ";
  }
  void kv(std::string_view k, double v) { key(k); num(v); }
  void kv(std::string_view k, std::string_view v) { key(k); str(v); }
};

void rank_json(Json& j, const RankReport& r) {
  auto& o = j.out;
  o += "{";
  j.kv("rank", r.rank); o += ", ";
  j.kv("file", r.path); o += ", ";
  j.kv("events", static_cast<double>(r.events)); o += ", ";
  j.kv("filtered_out", static_cast<double>(r.filtered_out)); o += ",\n   ";
  j.key("skipped");
  o += "{";
  j.kv("non_complete", static_cast<double>(r.skipped.non_complete)); o += ", ";
  j.kv("missing_fields", static_cast<double>(r.skipped.missing_fields)); o += ", ";
  j.kv("bad_values", static_cast<double>(r.skipped.bad_values)); o += "},\n   ";
  j.key("temporal");
  o += "{";
  j.kv("idle_us", r.temporal.idle_us); o += ", ";
  j.kv("compute_us", r.temporal.compute_us); o += ", ";
  j.kv("non_compute_us", r.temporal.non_compute_us); o += ", ";
  j.kv("span_us", r.temporal.span_us); o += "},\n   ";
  j.key("idle_by_stream");
  o += "[";
  for (size_t i = 0; i < r.idle_by_stream.size(); ++i) {
    const auto& s = r.idle_by_stream[i];
    o += i ? ", {" : "{";
    j.kv("stream", s.stream); o += ", ";
    j.kv("host_wait_us", s.host_wait_us); o += ", ";
    j.kv("kernel_wait_us", s.kernel_wait_us); o += ", ";
    j.kv("other_us", s.other_us); o += "}";
  }
  o += "],\n   ";
  j.key("comm_comp_overlap_pct");
  if (r.comm_comp_overlap_pct) j.num(*r.comm_comp_overlap_pct);
  else o += "null";
  o += ",\n   ";
  double types_total = 0;
  for (const auto& k : r.kernel_types) types_total += k.us;
  j.key("kernel_types");
  o += "[";
  for (size_t i = 0; i < r.kernel_types.size(); ++i) {
    const auto& k = r.kernel_types[i];
    o += i ? ", {" : "{";
    j.kv("type", k.type); o += ", ";
    j.kv("us", k.us); o += ", ";
    j.kv("pct", types_total > 0 ? 100.0 * k.us / types_total : 0.0); o += "}";
  }
  o += "],\n   ";
  j.key("top_kernels");
  o += "[";
  for (size_t i = 0; i < r.top_kernels.size(); ++i) {
    const auto& k = r.top_kernels[i];
    o += i ? ",\n     {" : "\n     {";
    j.kv("name", k.name); o += ", ";
    j.kv("type", k.type); o += ", ";
    j.kv("count", static_cast<double>(k.count)); o += ", ";
    j.kv("total_us", k.total_us); o += "}";
  }
  o += "],\n   ";
  j.key("launch_delay");
  o += "{";
  j.kv("count", static_cast<double>(r.launch_delay.count)); o += ", ";
  j.kv("mean_us", r.launch_delay.mean); o += ", ";
  j.kv("p50_us", r.launch_delay.p50); o += ", ";
  j.kv("p95_us", r.launch_delay.p95); o += ", ";
  j.kv("max_us", r.launch_delay.max); o += "},\n   ";
  j.key("memory");
  o += "[";
  for (size_t i = 0; i < r.memory.size(); ++i) {
    const auto& m = r.memory[i];
    o += i ? ", {" : "{";
    j.kv("direction", m.direction); o += ", ";
    j.kv("count", static_cast<double>(m.count)); o += ", ";
    j.kv("total_us", m.total_us); o += ", ";
    j.kv("bytes", static_cast<double>(m.bytes)); o += "}";
  }
  o += "],\n   ";
  j.key("queue_length");
  o += "[";
  for (size_t i = 0; i < r.queue_length.size(); ++i) {
    const auto& q = r.queue_length[i];
    o += i ? ", {" : "{";
    j.kv("stream", q.stream); o += ", ";
    j.kv("max", q.max); o += ", ";
    j.kv("mean", q.mean); o += "}";
  }
  o += "],\n   ";
  j.key("gpu_timeline");
  o += r.gpu_timeline ? "true" : "false";
  o += ",\n   ";
  j.key("cpu");
  o += "{";
  j.kv("events", static_cast<double>(r.cpu.events)); o += ", ";
  j.kv("threads", static_cast<double>(r.cpu.threads)); o += ", ";
  j.kv("uncategorised", static_cast<double>(r.cpu.uncategorised)); o += ", ";
  j.kv("busy_us", r.cpu.busy_us); o += ", ";
  j.kv("span_us", r.cpu.span_us); o += "},\n   ";
  j.key("top_cpu_ops");
  o += "[";
  for (size_t i = 0; i < r.top_cpu_ops.size(); ++i) {
    const auto& c = r.top_cpu_ops[i];
    o += i ? ",\n     {" : "\n     {";
    j.kv("name", c.name); o += ", ";
    j.kv("count", static_cast<double>(c.count)); o += ", ";
    j.kv("self_us", c.self_us); o += ", ";
    j.kv("total_us", c.total_us); o += "}";
  }
  o += "],\n   ";
  j.key("verdict");
  o += "{";
  j.kv("bound", r.verdict.bound); o += ", ";
  j.kv("evidence", r.verdict.evidence); o += "}}";
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string duration(double us) {
  if (us >= 1e6) return fmt("%.2f s", us / 1e6);
  if (us >= 1e3) return fmt("%.1f ms", us / 1e3);
  return fmt("%.1f us", us);
}

void cpu_ops_text(std::string& o, const RankReport& r) {
  if (r.top_cpu_ops.empty()) return;
  const CpuSummary& c = r.cpu;
  o += "  CPU: " + std::to_string(c.events) + " events on " + std::to_string(c.threads) +
       (c.threads == 1 ? " thread" : " threads") + " over a " + duration(c.span_us) + " span, " +
       duration(c.busy_us) + " inside them" + (c.threads == 1 ? "" : " (summed over threads)") + "\n";
  o += "  top CPU ops by self time:\n";
  o += "         self us   share      total us   count  name\n";
  for (const auto& op : r.top_cpu_ops) {
    std::string name = op.name.size() > 90 ? op.name.substr(0, 87) + "..." : op.name;
    o += "    " + fmt("%12.1f", op.self_us) + fmt("  %5.1f%%", c.busy_us > 0 ? 100 * op.self_us / c.busy_us : 0.0) +
         fmt("  %12.1f", op.total_us) + fmt("  %6.0fx  ", static_cast<double>(op.count)) + name + "\n";
  }
}

}  // namespace

std::string to_json(const JobReport& job) {
  Json j;
  auto& o = j.out;
  o += "{";
  j.kv("compat", job.compat_hta ? "hta" : "none");
  o += ",\n ";
  j.key("ranks");
  o += "[";
  for (size_t i = 0; i < job.ranks.size(); ++i) {
    o += i ? ",\n  " : "\n  ";
    rank_json(j, job.ranks[i]);
  }
  o += "],\n ";
  j.key("stragglers");
  o += "[";
  for (size_t i = 0; i < job.stragglers.size(); ++i) {
    o += i ? ", {" : "{";
    j.kv("rank", job.stragglers[i].rank); o += ", ";
    j.kv("reason", job.stragglers[i].reason); o += "}";
  }
  o += "]}\n";
  return o;
}

std::string to_text(const JobReport& job) {
  std::string o;
  for (const auto& r : job.ranks) {
    const Temporal& t = r.temporal;
    auto share = [&](double v) { return t.span_us > 0 ? fmt("%.1f%%", 100 * v / t.span_us) : std::string("-"); };
    o += "rank " + std::to_string(r.rank) + "  " + r.path + "\n";
    o += "  verdict: " + r.verdict.bound + " - " + r.verdict.evidence + "\n";
    if (!r.gpu_timeline) {
      o += "  no GPU timeline in this trace (CPU activities only): no GPU idle, kernel or launch numbers\n";
      if (r.cpu.uncategorised) {
        o += "  " + std::to_string(r.cpu.uncategorised) +
             " events without categories: the autograd profiler's export (a torch build without Kineto)\n";
      }
    } else {
      o += "  GPU span " + fmt("%.1f us", t.span_us) + ": idle " + share(t.idle_us) + ", compute " +
           share(t.compute_us) + ", non-compute " + share(t.non_compute_us) + "\n";
      if (r.comm_comp_overlap_pct) o += "  communication overlapped by computation: " + fmt("%.1f%%", *r.comm_comp_overlap_pct) + "\n";
      for (const auto& s : r.idle_by_stream) {
        o += "  stream " + std::to_string(s.stream) + " idle: host wait " + fmt("%.1f us", s.host_wait_us) +
             ", kernel wait " + fmt("%.1f us", s.kernel_wait_us) + ", other " + fmt("%.1f us", s.other_us) + "\n";
      }
      for (const auto& k : r.kernel_types) o += "  " + k.type + ": " + fmt("%.1f us", k.us) + "\n";
      if (r.launch_delay.count) {
        o += "  launch delay (" + std::to_string(r.launch_delay.count) + " launches): median " +
             fmt("%.1f us", r.launch_delay.p50) + ", p95 " + fmt("%.1f us", r.launch_delay.p95) + ", max " +
             fmt("%.1f us", r.launch_delay.max) + "\n";
      }
      for (const auto& m : r.memory) {
        o += "  " + m.direction + ": " + std::to_string(m.count) + " ops, " + fmt("%.1f us", m.total_us) + "\n";
      }
      for (const auto& q : r.queue_length) {
        o += "  stream " + std::to_string(q.stream) + " queue length: max " + fmt("%.0f", q.max) + ", mean " + fmt("%.1f", q.mean) + "\n";
      }
      o += "  top kernels:\n";
      for (const auto& k : r.top_kernels) {
        std::string name = k.name.size() > 90 ? k.name.substr(0, 87) + "..." : k.name;
        o += "    " + fmt("%12.1f us", k.total_us) + fmt("  %6.0fx  ", static_cast<double>(k.count)) + name + "\n";
      }
    }
    cpu_ops_text(o, r);
    uint64_t skipped = r.skipped.missing_fields + r.skipped.bad_values;
    if (skipped) o += "  skipped " + std::to_string(skipped) + " malformed events (missing fields or bad values)\n";
    if (r.filtered_out) o += "  " + std::to_string(r.filtered_out) + " events after the last profiler step left out (--compat hta)\n";
    o += "\n";
  }
  if (job.ranks.size() > 1) {
    if (job.stragglers.empty()) o += "no stragglers\n";
    for (const auto& s : job.stragglers) o += "straggler: rank " + std::to_string(s.rank) + " - " + s.reason + "\n";
  }
  return terminal_safe(o, kTerminalLayout);  // kernel names from the trace: no escapes
}

}  // namespace gpulens::trace
