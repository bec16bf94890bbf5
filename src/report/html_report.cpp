// The HTML report page and the diagnose report's evidence series.
#include "report/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "diagnose/engine.h"
#include "diagnose/report.h"
#include "model/pcie.h"
#include "server/web_assets.h"
#include "util/json.h"

namespace gpulens::report {
namespace {

using diagnose::GpuSig;
using diagnose::HostSig;
using diagnose::Series;

// Inlined code (the report's own script and style sheet) must not close
// its <script> or <style> early.
std::string inline_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      std::string next(s.substr(i + 2, 6));
      for (char& c : next) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (next == "script" || next.starts_with("style")) {
        out += "<\\/";
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// Text in an element or a quoted attribute.
std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else if (c == '\'') out += "&#39;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string json_for_script(std::string_view json) {
  // JSON has '<', '>' and '&' only inside strings, where \u escapes mean
  // the same characters to JSON.parse; with none left, nothing in the data
  // can end the <script> element ("</script"), open an HTML comment that
  // swallows the page ("<!--" then "<script>"), or start a character
  // reference.
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

namespace {

// a op b on equal timestamps.
template <typename Op>
Series pair(const Series& a, const Series& b, Op op) {
  Series out;
  size_t j = 0;
  for (const auto& p : a) {
    while (j < b.size() && b[j].t_ms < p.t_ms) ++j;
    if (j < b.size() && b[j].t_ms == p.t_ms) {
      const double v = op(p.v, b[j].v);
      if (std::isfinite(v)) out.push_back({p.t_ms, v});
    }
  }
  return out;
}

// The series behind an evidence signal's name (the names rules.cpp gives).
Series evidence_series(std::string_view name, const diagnose::HostSignals& h, const diagnose::GpuSignals& g) {
  auto sig = [&](GpuSig s) { return g.sig(s); };
  auto host = [&](HostSig s) { return h.sig(s); };
  auto ratio = [](double a, double b) { return b > 0 ? a / b : NAN; };
  auto maxv = [](double a, double b) { return std::max(a, b); };
  if (name == "temperature") return sig(GpuSig::kTemperature);
  if (name == "sm_clock_ratio") return pair(sig(GpuSig::kSmClock), sig(GpuSig::kSmClockMax), ratio);
  if (name == "power_over_limit") return pair(sig(GpuSig::kPower), sig(GpuSig::kPowerLimit), ratio);
  if (name == "pcie_util") {
    if (!g.sig(GpuSig::kPcieRxUtil).empty()) return pair(sig(GpuSig::kPcieRxUtil), sig(GpuSig::kPcieTxUtil), maxv);
    const Series bps = pair(sig(GpuSig::kPcieRxBps), sig(GpuSig::kPcieTxBps), maxv);
    return pair(bps, sig(GpuSig::kPciePeak), ratio);
  }
  if (name == "pcie_util_full_link") {
    // The traffic over the nominal peak of the link at its maximum generation
    // and width (as rules.cpp judges it), not over the measured peak.
    Series full = pair(sig(GpuSig::kLinkGenMax), sig(GpuSig::kLinkWidthMax), [](double gen, double width) {
      return pcie_link_bytes_per_second(static_cast<int>(gen), static_cast<int>(width));
    });
    std::erase_if(full, [](const diagnose::Point& p) { return !(p.v > 0); });
    if (!g.sig(GpuSig::kPcieRxBps).empty() || !g.sig(GpuSig::kPcieTxBps).empty()) {
      return pair(pair(sig(GpuSig::kPcieRxBps), sig(GpuSig::kPcieTxBps), maxv), full, ratio);
    }
    // Only the agent's utilisation: back to bytes through the current link.
    const Series now = pair(sig(GpuSig::kLinkGen), sig(GpuSig::kLinkWidth), [](double gen, double width) {
      return pcie_link_bytes_per_second(static_cast<int>(gen), static_cast<int>(width));
    });
    const Series util = pair(sig(GpuSig::kPcieRxUtil), sig(GpuSig::kPcieTxUtil), maxv);
    return pair(pair(util, now, [](double u, double b) { return u * b; }), full, ratio);
  }
  if (name == "dram_active") return sig(GpuSig::kDramActive);
  if (name == "tensor_active") return sig(GpuSig::kTensorActive);
  // The rules' utilisation: GPU util, else graphics engine active.
  if (name == "gpu_util") return sig(g.sig(GpuSig::kGpuUtil).empty() ? GpuSig::kGrActive : GpuSig::kGpuUtil);
  if (name == "sm_active") return sig(GpuSig::kSmActive);
  if (name == "gr_engine_active") return sig(GpuSig::kGrActive);
  if (name == "sm_occupancy") return sig(GpuSig::kSmOccupancy);
  if (name == "nvlink_util") return sig(GpuSig::kNvlinkUtil);
  if (name == "fragmentation") return sig(GpuSig::kFragmentation);
  if (name == "external_fragmentation") return sig(GpuSig::kExternalFragmentation);
  if (name == "fb_used") return sig(GpuSig::kFbUsed);
  if (name == "fb_used_ratio") {
    return pair(sig(GpuSig::kFbUsed), sig(GpuSig::kFbFree), [](double u, double f) { return u + f > 0 ? u / (u + f) : NAN; });
  }
  if (name == "gpu_up") return sig(GpuSig::kGpuUp);
  if (name == "thermal_throttle") return sig(GpuSig::kThermalThrottle);
  if (name == "power_throttle") return sig(GpuSig::kPowerThrottle);
  if (name == "link_gen") return sig(GpuSig::kLinkGen);
  if (name == "link_width") return sig(GpuSig::kLinkWidth);
  // Judged: the current link against the one recorded by `gpulens calibrate`
  // (the evidence's threshold), so the chart is the current link.
  if (name == "link_gen_calibrated") return sig(GpuSig::kLinkGen);
  if (name == "link_width_calibrated") return sig(GpuSig::kLinkWidth);
  if (name == "gpu_numa_node") return sig(GpuSig::kNumaNode);  // against the node the process may run on
  if (name == "last_xid") return sig(GpuSig::kLastXid);
  if (name == "ecc_uncorrected_rate") return sig(GpuSig::kEccUncorrectedRate);
  if (name == "row_remap_failure") return sig(GpuSig::kRowRemapFailure);
  if (name == "health_status") return sig(GpuSig::kHealthStatus);  // worst DCGM health watch
  if (name == "allocator_retries_per_second") return sig(GpuSig::kAllocRetryRate);
  if (name == "allocator_ooms_per_second") return sig(GpuSig::kAllocOomRate);
  if (name == "host_cpu_busy") return host(HostSig::kCpuBusy);
  if (name == "iowait") return host(HostSig::kIowait);
  if (name == "psi_cpu") return host(HostSig::kPsiCpu);
  if (name == "psi_io") return host(HostSig::kPsiIo);
  if (name == "disk_busy") return host(HostSig::kDiskBusy);
  if (name == "nic_util") {
    if (!h.sig(HostSig::kNicUtil).empty()) return host(HostSig::kNicUtil);
    return pair(pair(host(HostSig::kNicRxBps), host(HostSig::kNicTxBps), maxv), host(HostSig::kNicSpeed), ratio);
  }
  if (name == "ib_util") return host(HostSig::kIbUtil);
  if (name == "latency_p99") return host(HostSig::kLatencyP99);    // seconds, as the SLO
  if (name == "latency_mean") return host(HostSig::kLatencyMean);  // seconds
  if (name == "kv_cache_usage") return host(HostSig::kKvCacheUsage);
  if (name == "preemption_rate") return host(HostSig::kPreemptionRate);
  if (name == "requests_waiting") return host(HostSig::kRequestsWaiting);
  if (name == "requests_running") return host(HostSig::kRequestsRunning);
  if (name == "ttft_p99") return host(HostSig::kTtftP99);  // seconds
  if (name == "requests_waiting_for_capacity") return host(HostSig::kWaitingForCapacity);
  if (name == "prefix_cache_hit_ratio") return host(HostSig::kPrefixCacheHitRatio);
  if (name == "batch_max_tokens") return host(HostSig::kBatchMaxTokens);
  if (name == "ib_bps") return pair(host(HostSig::kIbRxBps), host(HostSig::kIbTxBps), [](double a, double b) { return a + b; });
  // gpu_topology_path: the path to a peer GPU is a placement fact, not a
  // series; its evidence detail names it.
  return {};
}

// At most `n` points: means of equal-time buckets.
Series downsample(const Series& s, size_t n) {
  if (s.size() <= n) return s;
  Series out;
  const int64_t t0 = s.front().t_ms, span = std::max<int64_t>(1, s.back().t_ms - t0 + 1);
  size_t i = 0;
  for (size_t b = 0; b < n && i < s.size(); ++b) {
    const int64_t end = t0 + static_cast<int64_t>((static_cast<double>(b + 1) / static_cast<double>(n)) * static_cast<double>(span));
    double sum = 0;
    size_t k = 0;
    int64_t t = s[i].t_ms;
    for (; i < s.size() && s[i].t_ms < end; ++i, ++k) sum += s[i].v;
    if (k) out.push_back({t, sum / static_cast<double>(k)});
  }
  return out;
}

}  // namespace

std::string html_report(std::string_view title, std::string_view data_json, std::string_view banner) {
  const WebAsset* js = find_web_asset("report.js");
  const WebAsset* css = find_web_asset("report.css");
  std::string o;
  o.reserve(data_json.size() + 100'000);
  o += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" "
       "content=\"width=device-width, initial-scale=1\">\n<title>";
  o += html_escape(title);
  o += "</title>\n<style>\n";
  if (css) o += inline_safe(css->body);
  o += "\n</style></head><body>\n";
  if (!banner.empty()) o += "<p class=\"banner\" id=\"simulated\">" + html_escape(banner) + "</p>\n";
  o += "<main id=\"report\"><noscript>This report draws its charts with JavaScript.</noscript></main>\n"
       "<script type=\"application/json\" id=\"gpulens-data\">";
  o += json_for_script(data_json);
  o += "</script>\n<script>\n";
  if (js) o += inline_safe(js->body);
  o += "\n</script>\n</body></html>\n";
  return o;
}

void add_evidence_plots(const diagnose::SignalSet& set, const diagnose::Report& report, EvidencePlots& out) {
  for (const diagnose::HostReport& hr : report.hosts) {
    auto h = std::find_if(set.hosts.begin(), set.hosts.end(), [&](const auto& x) { return x.name == hr.host; });
    if (h == set.hosts.end()) continue;
    for (const diagnose::GpuReport& gr : hr.gpus) {
      auto g = std::find_if(h->gpus.begin(), h->gpus.end(), [&](const auto& x) { return x.index == gr.gpu; });
      if (g == h->gpus.end()) continue;
      for (const diagnose::Finding& f : gr.findings) {
        for (const diagnose::Evidence& e : f.evidence) {
          Series s = evidence_series(e.signal, *h, *g);
          std::erase_if(s, [&](const diagnose::Point& p) { return p.t_ms < set.from_ms || p.t_ms > set.to_ms; });
          if (s.empty()) continue;
          out.push_back({hr.host, gr.gpu, f.cause, e.signal, e.threshold, downsample(s, kMaxPlotPoints)});
        }
      }
    }
  }
}

std::string diagnose_report_data(const diagnose::Report& report, const EvidencePlots& plots, std::string_view source) {
  std::string o = "{\"kind\":\"diagnose\",\"source\":";
  append_json_string(o, source);
  o += ",\"report\":";
  o += diagnose::report_json(report);
  o += ",\"evidence\":[";
  for (size_t i = 0; i < plots.size(); ++i) {
    const EvidencePlot& p = plots[i];
    if (i) o += ',';
    o += "{\"host\":";
    append_json_string(o, p.host);
    o += ",\"gpu\":";
    append_json_string(o, p.gpu);
    o += ",\"cause\":";
    append_json_string(o, p.cause);
    o += ",\"signal\":";
    append_json_string(o, p.signal);
    o += ",\"threshold\":";
    append_json_number(o, p.threshold);
    o += ",\"t\":[";
    for (size_t k = 0; k < p.points.size(); ++k) {
      if (k) o += ',';
      o += std::to_string(p.points[k].t_ms);
    }
    o += "],\"v\":[";
    for (size_t k = 0; k < p.points.size(); ++k) {
      if (k) o += ',';
      append_json_number(o, p.points[k].v);
    }
    o += "]}";
  }
  o += "]}";
  return o;
}

std::string trace_report_data(std::string_view trace_json) {
  std::string o = "{\"kind\":\"trace\",\"trace\":";
  std::string_view t = trace_json;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  o += t;
  o += '}';
  return o;
}

}  // namespace gpulens::report
