// Verdict rules: what bounds a rank, and which ranks straggle.
//
// A trace shows where GPU time goes, not why a kernel is slow, so the rules
// read the breakdowns in the order DESIGN.md gives for low utilisation:
// first whether the GPU waits for the host, then communication, then memory
// traffic, else computation.
#include <algorithm>
#include <cstdio>
#include <string>

#include "analyze/trace/analysis.h"

namespace gpulens::trace {
namespace {

std::string pct(double part, double whole) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", whole > 0 ? 100.0 * part / whole : 0.0);
  return b;
}

std::string us(double v) {
  char b[32];
  if (v >= 1e6) std::snprintf(b, sizeof b, "%.2f s", v / 1e6);
  else if (v >= 1e3) std::snprintf(b, sizeof b, "%.1f ms", v / 1e3);
  else std::snprintf(b, sizeof b, "%.1f us", v);
  return b;
}

double type_time(const RankReport& r, std::string_view type, bool exclusive) {
  double sum = 0;
  for (const auto& k : r.kernel_types) {
    if (exclusive ? k.type == type : k.type.find(type) != std::string::npos) sum += k.us;
  }
  return sum;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

Verdict judge(const RankReport& r) {
  const Temporal& t = r.temporal;
  if (!r.gpu_timeline && r.cpu.events > 0) {
    // Nothing here says how busy a GPU was: the verdict names only the CPU side.
    std::string e = "no GPU timeline in the trace (CPU activities only): " + std::to_string(r.cpu.events) +
                    " CPU events on " + std::to_string(r.cpu.threads) + (r.cpu.threads == 1 ? " thread" : " threads") +
                    " over " + us(r.cpu.span_us);
    if (!r.top_cpu_ops.empty()) {
      const CpuOp& top = r.top_cpu_ops.front();
      e += "; the most self time: " + top.name + " " + us(top.self_us) + " (" + pct(top.self_us, r.cpu.busy_us) +
           " of the CPU events' time)";
    }
    return {"cpu-only", e};
  }
  if (t.span_us <= 0) return {"idle", "no GPU work in the trace"};
  double host = 0, kernel = 0, other = 0;
  for (const auto& s : r.idle_by_stream) {
    host += s.host_wait_us;
    kernel += s.kernel_wait_us;
    other += s.other_us;
  }
  double busy = t.span_us - t.idle_us;
  double comm_only = type_time(r, "communication", true);
  double comm_all = type_time(r, "communication", false);
  double mem = type_time(r, "memory", false);

  if (t.idle_us >= 0.4 * t.span_us && host + kernel >= other) {
    std::string e = "GPU idle " + pct(t.idle_us, t.span_us) + " of its " + us(t.span_us) +
                    " span; of the idle time between kernels on its streams " + pct(host, host + kernel + other) +
                    " is host wait (the launch came after the stream ran dry) and " +
                    pct(kernel, host + kernel + other) + " launch gaps under the kernel-wait threshold";
    if (r.launch_delay.count) e += "; median launch delay " + us(r.launch_delay.p50);
    return {"host-bound", e};
  }
  if (comm_all > 0 && comm_only >= 0.3 * busy) {
    std::string e = "communication kernels run " + us(comm_all) + ", " + pct(comm_only, busy) +
                    " of GPU busy time with nothing overlapping them";
    if (r.comm_comp_overlap_pct) e += "; only " + pct(*r.comm_comp_overlap_pct, 100) + " of communication overlaps computation";
    return {"communication-bound", e};
  }
  if (mem >= 0.3 * busy) {
    return {"memory-bound", "memcpy/memset take " + us(mem) + ", " + pct(mem, busy) + " of GPU busy time"};
  }
  std::string e = "computation kernels busy " + pct(t.compute_us, t.span_us) + " of the span (idle " +
                  pct(t.idle_us, t.span_us) + ")";
  if (t.idle_us >= 0.4 * t.span_us) e += "; most idle time is neither host nor launch wait (syncs, events, other streams)";
  return {"compute-bound", e};
}

std::vector<Straggler> find_stragglers(const std::vector<RankReport>& ranks) {
  std::vector<Straggler> out;
  if (ranks.size() < 2) return out;
  std::vector<double> compute, comm;
  for (const auto& r : ranks) {
    compute.push_back(r.temporal.compute_us);
    comm.push_back(type_time(r, "communication", false));
  }
  double mc = median(compute), mm = median(comm);
  for (size_t i = 0; i < ranks.size(); ++i) {
    // In a collective every rank waits for the slowest: that one computes
    // longest and spends the least time inside the collective.
    bool slow_compute = mc > 0 && compute[i] > 1.2 * mc;
    bool short_comm = mm > 0 && comm[i] < 0.5 * mm;
    if (!slow_compute && !short_comm) continue;
    std::string why;
    if (slow_compute) why = "computation " + us(compute[i]) + " vs median " + us(mc);
    if (short_comm) {
      if (!why.empty()) why += "; ";
      why += "communication " + us(comm[i]) + " vs median " + us(mm) + " (others wait for it)";
    }
    out.push_back({ranks[i].rank, why});
  }
  return out;
}

}  // namespace gpulens::trace
