// Parsing the agent's JSON documents into what `gpulens top` draws.
#include "top/top_model.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "diagnose/report_parse.h"

namespace gpulens::top {
namespace {

// The series each layer's sparkline reads; where a layer names two, the
// larger value of the two is drawn (PCIe: the busier direction), and
// compute falls back to the coarse utilisation where SM activity is absent.
constexpr std::string_view kHistorySeries =
    "gpu_sm_active_ratio,gpu_utilization_ratio,gpu_mem_bandwidth_util_ratio,"
    "gpu_pcie_rx_bandwidth_util_ratio,gpu_pcie_tx_bandwidth_util_ratio,gpu_temperature_celsius";

TopProcess& process_of(TopModel& m, const std::string& pid, const std::string& gpu) {
  for (TopProcess& p : m.processes) {
    if (p.pid == pid && p.gpu == gpu) return p;
  }
  m.processes.push_back({.pid = pid, .gpu = gpu});
  return m.processes.back();
}

int layer_of(std::string_view name) {
  if (name == "gpu_sm_active_ratio" || name == "gpu_utilization_ratio") return kCompute;
  if (name == "gpu_mem_bandwidth_util_ratio") return kMemory;
  if (name.starts_with("gpu_pcie_")) return kIo;
  if (name == "gpu_temperature_celsius") return kHealth;
  return -1;
}

}  // namespace

std::string history_query(int64_t range_ms, int points) {
  const int64_t step_s = std::max<int64_t>(1, (range_ms / 1000 + points - 1) / std::max(points, 1));
  return "/api/v1/history?series=" + std::string(kHistorySeries) + "&range=" + std::to_string(range_ms / 1000) +
         "s&step=" + std::to_string(step_s) + "s";
}

Status read_current(std::string_view json, TopModel& m) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc)) return invalid_argument("the agent answered something that is not JSON");
  simdjson::dom::array gpus;
  if (doc["gpus"].get_array().get(gpus)) return invalid_argument("no \"gpus\" in the agent's /api/v1/current");
  std::string_view sv;
  m.time_s = 0;
  if (!doc["time"].get_string().get(sv)) std::from_chars(sv.data(), sv.data() + sv.size(), m.time_s);
  bool simulated = false;
  m.simulated = !doc["simulated"].get_bool().get(simulated) && simulated;
  m.sources.clear();
  simdjson::dom::array sources;
  if (!doc["sources"].get_array().get(sources)) {
    for (auto s : sources) {
      TopSource src;
      if (!s["name"].get_string().get(sv)) src.name = sv;
      bool up = true;
      if (!s["up"].get_bool().get(up)) src.up = up;
      if (!s["error"].get_string().get(sv)) src.error = sv;
      if (src.name != "gpulens") m.sources.push_back(std::move(src));
    }
  }
  // Keep each GPU's history across refreshes: read_history replaces it.
  std::map<std::string, TopGpu> old;
  for (TopGpu& g : m.gpus) old.emplace(g.index, std::move(g));
  m.gpus.clear();
  m.processes.clear();
  for (auto g : gpus) {
    TopGpu gpu;
    if (!g["gpu"].get_string().get(sv)) gpu.index = sv;
    if (!g["uuid"].get_string().get(sv)) gpu.uuid = sv;
    if (!g["name"].get_string().get(sv)) gpu.name = sv;
    if (auto it = old.find(gpu.index); it != old.end()) {
      for (int l = 0; l < kLayerCount; ++l) gpu.history[l] = std::move(it->second.history[l]);
    }
    // Processes and jobs from the series' labels as data.
    gpu.series = entity_series(g);
    for (const NodeSeries& s : gpu.series) {
      if (s.name == "gpu_process_memory_used_bytes" || s.name == "gpu_process_sm_util_ratio") {
        TopProcess& p = process_of(m, std::string(s.labels.get("pid")), gpu.index);
        (s.name == "gpu_process_memory_used_bytes" ? p.memory_bytes : p.sm_ratio) = s.value;
        const std::string ns(s.labels.get("namespace")), pod(s.labels.get("pod"));
        if (!pod.empty()) p.pod = ns.empty() ? pod : ns + "/" + pod;
      } else if (s.name == "gpu_job_info") {
        const std::string rank(s.labels.get("rank"));
        gpu.job += (gpu.job.empty() ? "" : ", ") + std::string(s.labels.get("job_id")) + (rank.empty() ? "" : " rank " + rank);
      }
    }
    m.gpus.push_back(std::move(gpu));
  }
  if (simdjson::dom::element node; !doc["node"].get(node)) {
    m.node = entity_series(node);
    for (const NodeSeries& s : m.node) {
      if (s.name != "host_gpu_process_affinity_info") continue;
      TopProcess& p = process_of(m, std::string(s.labels.get("pid")), std::string(s.labels.get("gpu")));
      p.cpus = s.labels.get("cpus");
      p.numa = s.labels.get("numa_nodes");
    }
  }
  std::stable_sort(m.processes.begin(), m.processes.end(), [](const TopProcess& a, const TopProcess& b) {
    if (a.gpu.size() != b.gpu.size()) return a.gpu.size() < b.gpu.size();
    return a.gpu < b.gpu;
  });
  return Status::ok();
}

Status read_history(std::string_view json, int64_t range_ms, TopModel& m) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array series;
  if (parser.parse(json.data(), json.size()).get(doc) || doc["series"].get_array().get(series)) {
    return invalid_argument("the agent's /api/v1/history answer has no \"series\"");
  }
  std::map<std::string, TopGpu*, std::less<>> by_index;
  for (TopGpu& g : m.gpus) {
    by_index[g.index] = &g;
    for (auto& h : g.history) h.clear();
  }
  // The coarse utilisation only stands in where SM activity is absent.
  std::map<std::string, std::vector<double>, std::less<>> coarse;
  for (auto s : series) {
    std::string_view name, gpu;
    simdjson::dom::array values;
    if (s["name"].get_string().get(name) || s["gpu"].get_string().get(gpu) || s["values"].get_array().get(values)) continue;
    auto it = by_index.find(gpu);
    const int layer = layer_of(name);
    if (it == by_index.end() || layer < 0) continue;
    std::vector<double> v;
    for (auto x : values) {
      double d = 0;
      v.push_back(x.get_double().get(d) ? std::nan("") : d);
    }
    if (name == "gpu_utilization_ratio") {
      coarse[std::string(gpu)] = std::move(v);
      continue;
    }
    std::vector<double>& h = it->second->history[layer];
    if (h.empty()) {
      h = std::move(v);
    } else {  // the busier of two series (PCIe rx and tx)
      for (size_t i = 0; i < std::min(h.size(), v.size()); ++i) {
        if (std::isnan(h[i]) || v[i] > h[i]) h[i] = v[i];
      }
    }
  }
  for (auto& [gpu, v] : coarse) {
    auto& h = by_index[gpu]->history[kCompute];
    if (std::all_of(h.begin(), h.end(), [](double x) { return std::isnan(x); })) h = std::move(v);
  }
  m.history_range_ms = range_ms;
  return Status::ok();
}

Status read_findings(std::string_view json, TopModel& m) {
  auto r = diagnose::report_from_json(json, "the agent's /api/v1/findings");
  if (!r) return r.status();
  m.findings = std::move(*r);
  m.have_findings = true;
  m.findings_note.clear();
  return Status::ok();
}

}  // namespace gpulens::top
