// The serving causes, kv_cache_pressure and overload, over the engine
// signals of a GPU's host; rules.h documents the conditions.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "diagnose/rules.h"

namespace gpulens::diagnose {
namespace {

// Mean of the known values in (t - span, t], per point.
Aligned trailing_mean(const GpuContext& c, const Aligned& v, int64_t span_ms) {
  const size_t n = v.size();
  Aligned out(n, std::nan(""));
  double sum = 0;
  size_t cnt = 0, lo = 0;
  for (size_t i = 0; i < n; ++i) {
    if (known(v[i])) {
      sum += v[i];
      ++cnt;
    }
    while (c.t[lo] <= c.t[i] - span_ms) {
      if (known(v[lo])) {
        sum -= v[lo];
        --cnt;
      }
      ++lo;
    }
    if (cnt && known(v[i])) out[i] = sum / static_cast<double>(cnt);
  }
  return out;
}

// The value of `v` at the latest point at or before t - ago, per point.
Aligned ago(const GpuContext& c, const Aligned& v, int64_t ago_ms) {
  Aligned out(v.size(), std::nan(""));
  size_t j = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    while (j + 1 <= i && c.t[j + 1] <= c.t[i] - ago_ms) ++j;
    if (c.t[j] <= c.t[i] - ago_ms) out[i] = v[j];
  }
  return out;
}

double low_percentile(Aligned v, double q) {
  std::erase_if(v, [](double x) { return !known(x); });
  if (v.empty()) return std::nan("");
  const size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

// 1 where `lat` is above the SLO (or factor x its window's 10th percentile),
// 0 where below, NaN where unknown; `limit` the bound used.
Aligned degraded_of(const Aligned& lat, const Thresholds& th, double& limit) {
  Aligned out(lat.size(), std::nan(""));
  limit = th.latency_p99_slo_seconds;
  const double base = low_percentile(lat, 0.1);
  if (!known(base)) return out;
  if (!(limit > 0)) limit = th.latency_degraded_factor * base;
  for (size_t i = 0; i < lat.size(); ++i) {
    if (known(lat[i])) out[i] = lat[i] > limit ? 1 : 0;
  }
  return out;
}

RuleResult make(std::string_view cause, std::string_view layer, size_t n, int64_t for_ms) {
  RuleResult r;
  r.cause = cause;
  r.layer = layer;
  r.severity = Severity::kWarning;
  r.for_ms = for_ms;
  r.holds.assign(n, -1);
  return r;
}

double last_known(const Aligned& v, const std::vector<int8_t>& holds) {
  for (size_t i = v.size(); i-- > 0;) {
    if (holds[i] == 1 && known(v[i])) return v[i];
  }
  return std::nan("");
}

}  // namespace

Aligned engine_aligned(const GpuContext& c, const Series& s) {
  Aligned v = c.align(s);
  const int64_t step = std::max<int64_t>(median_step_ms(s), 1);
  size_t j = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    while (j + 1 < s.size() && s[j + 1].t_ms <= c.t[i]) ++j;
    if (s.empty() || s[j].t_ms > c.t[i] || c.t[i] - s[j].t_ms >= step) v[i] = std::nan("");
  }
  return v;
}

std::pair<RuleResult, RuleResult> serving_rules(const GpuContext& c, const EngineSignals& h, const Aligned& util,
                                                const Aligned& busy, std::vector<NotAssessed>& not_assessed) {
  auto has = [&](HostSig s) { return !h.sig(s).empty(); };
  auto fresh = [&](const Series& s) { return engine_aligned(c, s); };
  auto A = [&](HostSig s) { return fresh(h.sig(s)); };
  const bool engine = has(HostSig::kKvCacheUsage) || has(HostSig::kRequestsWaiting) || has(HostSig::kTtftP99) ||
                      has(HostSig::kPreemptionRate);
  if (!engine) return {};
  if (!h.invalid.empty()) {
    not_assessed.push_back({"kv_cache_pressure", "engine " + h.describe() + " said " + h.invalid});
    not_assessed.push_back({"overload", "engine " + h.describe() + " said " + h.invalid});
    return {};
  }
  const size_t n = c.t.size();
  // Which engine, on which GPUs, joined how: the first evidence says so.
  std::string who = "engine " + h.describe();
  if (!h.gpus.empty()) {
    who += " on GPU" + std::string(h.gpus.size() > 1 ? "s " : " ");
    for (size_t i = 0; i < h.gpus.size(); ++i) who += (i ? "," : "") + h.gpus[i];
    who += h.joined_by == "only engine" ? " (the host's only engine)" : " (joined by " + h.joined_by + ")";
  }
  const Thresholds& th = c.th;
  // The latency the engine's users see: p99 end to end, else the mean
  // (Triton), and the time to first token; degraded when either is.
  const bool p99 = has(HostSig::kLatencyP99);
  const Aligned lat = p99 ? A(HostSig::kLatencyP99) : A(HostSig::kLatencyMean);
  const Aligned ttft = A(HostSig::kTtftP99);
  double lat_limit = 0, ttft_limit = 0;
  const Aligned lat_bad = degraded_of(lat, th, lat_limit), ttft_bad = degraded_of(ttft, th, ttft_limit);
  Aligned degraded(n, std::nan(""));
  for (size_t i = 0; i < n; ++i) {
    if (lat_bad[i] == 1 || ttft_bad[i] == 1) degraded[i] = 1;
    else if (known(lat_bad[i]) || known(ttft_bad[i])) degraded[i] = 0;
  }
  const bool lat_known = has(HostSig::kLatencyP99) || has(HostSig::kLatencyMean) || has(HostSig::kTtftP99);
  auto add_latency = [&](RuleResult& r) {
    if (has(HostSig::kLatencyP99) || has(HostSig::kLatencyMean)) {
      r.evidence.push_back({p99 ? EvidenceName("latency_p99") : EvidenceName("latency_mean"), lat, lat_limit});
    }
    if (has(HostSig::kTtftP99)) r.evidence.push_back({"ttft_p99", ttft, ttft_limit});
  };
  const Aligned kv = A(HostSig::kKvCacheUsage), preempt = A(HostSig::kPreemptionRate),
                waiting = A(HostSig::kRequestsWaiting), running = A(HostSig::kRequestsRunning);
  // vLLM V1 says why requests wait: for capacity (KV-cache space, a batch
  // slot) is what the cache's pressure explains; where it says, that count
  // is the queue kv_cache_pressure reads.
  const bool by_reason = has(HostSig::kWaitingForCapacity);
  const Aligned for_capacity = A(HostSig::kWaitingForCapacity);

  RuleResult pressure;
  if (!has(HostSig::kKvCacheUsage)) {
    not_assessed.push_back({"kv_cache_pressure", "no KV-cache usage (vLLM kv_cache_usage_perc or "
                                                 "gpu_cache_usage_perc, SGLang token_usage)"});
  } else if (!lat_known) {
    not_assessed.push_back({"kv_cache_pressure", "no serving latency (an engine's latency histograms)"});
  } else {
    pressure = make("kv_cache_pressure", "memory", n, th.default_for_ms);
    for (size_t i = 0; i < n; ++i) {
      if (!known(kv[i]) || !known(degraded[i])) continue;
      const bool squeezed = preempt[i] > 0 || (by_reason ? for_capacity[i] : waiting[i]) >= 1;
      pressure.holds[i] = kv[i] >= kKvCacheFull && squeezed && degraded[i] == 1;
    }
    pressure.evidence.push_back({"kv_cache_usage", kv, kKvCacheFull, who});
    if (has(HostSig::kPreemptionRate)) pressure.evidence.push_back({"preemption_rate", preempt, 0});
    if (by_reason) {
      pressure.evidence.push_back({"requests_waiting_for_capacity", for_capacity, 1});
    } else if (has(HostSig::kRequestsWaiting)) {
      pressure.evidence.push_back({"requests_waiting", waiting, 1});
    }
    add_latency(pressure);
    // The prefix cache: a low hit ratio while the cache is full is prefill
    // recomputed for prompts whose start the engine has seen.
    const Aligned prefix = A(HostSig::kPrefixCacheHitRatio);
    std::string prefix_note;
    if (has(HostSig::kPrefixCacheHitRatio)) {
      pressure.evidence.push_back({"prefix_cache_hit_ratio", prefix, kPrefixCacheLow});
      double sum = 0;
      size_t cnt = 0;
      for (size_t i = 0; i < n; ++i) {
        if (pressure.holds[i] == 1 && known(prefix[i])) {
          sum += prefix[i];
          ++cnt;
        }
      }
      if (cnt && sum / static_cast<double>(cnt) < kPrefixCacheLow) {
        char share[32];
        std::snprintf(share, sizeof share, "%.0f", 100 * sum / static_cast<double>(cnt));
        prefix_note = std::string(" Its prefix cache finds ") + share +
                      " % of the prompt tokens it looks up: keep prefix caching on (vLLM --enable-prefix-caching, "
                      "SGLang without --disable-radix-cache) and put what prompts share (system prompt, few-shot "
                      "examples) first and byte-identical, so that cached blocks are reused instead of recomputed "
                      "and held twice.";
      }
    }
    pressure.action =
        "The engine's KV cache is full: it preempts requests (recomputing them later) and queues new ones, so "
        "latency and time to first token grow while the GPU looks busy. Change the engine before adding GPUs: "
        "lower the concurrent sequences (vLLM --max-num-seqs, SGLang --max-running-requests) or the maximum "
        "model length (--max-model-len), give the cache more memory (vLLM --gpu-memory-utilization, SGLang "
        "--mem-fraction-static), turn on prefix caching, quantise the KV cache (--kv-cache-dtype fp8), or "
        "spread the model over more GPUs (a larger --tensor-parallel-size)." +
        prefix_note;
  }

  RuleResult over;
  if (!has(HostSig::kRequestsWaiting)) {
    not_assessed.push_back({"overload", "no queue length (requests waiting) from the engine"});
  } else if (!lat_known) {
    not_assessed.push_back({"overload", "no serving latency (an engine's latency histograms)"});
  } else {
    over = make("overload", "capacity", n, th.default_for_ms);
    const int64_t minute = std::max<int64_t>(60'000, 2 * c.step_ms);
    const Aligned queue = trailing_mean(c, waiting, minute);
    const Aligned before = ago(c, queue, minute);
    const Aligned occ = c.align(c.gpu.sig(GpuSig::kSmOccupancy));
    // The batch's cap, where the engine says how full it is: TGI's tokens
    // the batch may grow to (its cap, --max-batch-total-tokens, is not on
    // the page: the window's peak stands for it), beside running requests.
    const Aligned tokens = A(HostSig::kBatchMaxTokens);
    double peak = 0, peak_tokens = 0;
    for (double r : running) {
      if (known(r)) peak = std::max(peak, r);
    }
    for (double t : tokens) {
      if (known(t)) peak_tokens = std::max(peak_tokens, t);
    }
    for (size_t i = 0; i < n; ++i) {
      if (!known(waiting[i]) || !known(queue[i]) || !known(before[i]) || !known(degraded[i]) || !known(util[i])) {
        continue;
      }
      const bool growing = waiting[i] >= 1 && queue[i] > before[i];
      const bool kv_fine = !known(kv[i]) || kv[i] < kKvCacheFull;
      const bool useful = util[i] >= th.busy_util && (!known(busy[i]) || busy[i] >= th.starved_sm_active) &&
                          (!known(occ[i]) || occ[i] >= th.sm_occupancy);
      const bool run_at_cap = known(running[i]) && peak > 0 && running[i] >= kBatchAtPeak * peak;
      const bool tokens_at_cap = known(tokens[i]) && peak_tokens > 0 && tokens[i] >= kBatchAtPeak * peak_tokens;
      const bool at_cap = (!known(running[i]) && !known(tokens[i])) || run_at_cap || tokens_at_cap;
      over.holds[i] = growing && kv_fine && useful && at_cap && degraded[i] == 1;
    }
    over.evidence.push_back({"requests_waiting", waiting, 1, who});
    if (has(HostSig::kRequestsRunning)) over.evidence.push_back({"requests_running", running, kBatchAtPeak * peak});
    if (has(HostSig::kBatchMaxTokens)) {
      over.evidence.push_back({"batch_max_tokens", tokens, kBatchAtPeak * peak_tokens});
    }
    if (has(HostSig::kKvCacheUsage)) over.evidence.push_back({"kv_cache_usage", kv, kKvCacheFull});
    over.evidence.push_back({"gpu_util", util, th.busy_util});
    add_latency(over);
    // How fast the queue grows while the cause holds: what the replicas lack.
    std::string growth, replicas;
    const double q_now = last_known(queue, over.holds), q_before = last_known(before, over.holds);
    if (known(q_now) && known(q_before)) {
      char b[96];
      std::snprintf(b, sizeof b, " (the queue grew by %.0f requests a minute at a batch of %.0f)", q_now - q_before,
                    peak);
      growth = b;
      // Replicas the arrivals need: arrivals (served + the queue's growth)
      // over what one replica serves, rounded up.
      const Aligned served = fresh(h.completions);
      double sum = 0;
      size_t cnt = 0;
      for (size_t i = 0; i < n; ++i) {
        if (over.holds[i] == 1 && known(served[i])) {
          sum += served[i];
          ++cnt;
        }
      }
      const double per_replica = cnt ? sum / static_cast<double>(cnt) : std::nan("");
      const double arrivals = per_replica + std::max(0.0, q_now - q_before) / 60.0;
      if (known(per_replica) && per_replica > 0) {
        const double need = std::max(2.0, std::ceil(arrivals / per_replica - 1e-9));
        std::snprintf(b, sizeof b, " The measured arrivals, %.3g requests/s against %.3g served by this one, need %.0f",
                      arrivals, per_replica, need);
        replicas = std::string(b) + " replicas of it (" + std::to_string(static_cast<int>(need) - 1) + " more).";
      }
    }
    over.action = "More requests arrive than the engine can serve" + growth +
                  ": its batch is at its peak, its KV cache is not the limit and the GPU is busy with useful work. "
                  "This is the cause whose fix is more GPUs: add replicas (or raise the batch cap only if "
                  "latency allows), until the queue stops growing." + replicas;
  }
  return {std::move(pressure), std::move(over)};
}

}  // namespace gpulens::diagnose
