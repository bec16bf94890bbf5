// Scenario YAML loading with strict keys and file:line:column errors.
#include "sources/sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "util/duration.h"
#include "util/yaml_reader.h"

namespace gpulens::sim {
namespace {

using yaml::ParseError;
using yaml::Reader;


Workload read_workload(const Reader& r, const YAML::Node& n, const std::string& path, const Workload& base = {}) {
  Workload w = base;
  auto ratio = [&](double& dst, const char* key) {
    return [&r, &dst, key, path](const YAML::Node& v) { dst = r.ratio(v, path + "." + key); };
  };
  auto rate = [&](double& dst, const char* key) {
    return [&r, &dst, key, path](const YAML::Node& v) { dst = r.number(v, path + "." + key, 0, 1e6); };
  };
  r.map(n, path,
        {{"kind", [&](const YAML::Node& v) { w.kind = r.choice(v, path + ".kind", {"training", "inference", "idle"}); }},
         {"duty", ratio(w.duty, "duty")},
         {"sm_efficiency", ratio(w.sm_efficiency, "sm_efficiency")},
         {"occupancy", ratio(w.occupancy, "occupancy")},
         {"tensor", ratio(w.tensor, "tensor")},
         {"fp32", ratio(w.fp32, "fp32")},
         {"fp16", ratio(w.fp16, "fp16")},
         {"fp64", ratio(w.fp64, "fp64")},
         {"dram", ratio(w.dram, "dram")},
         {"burst", [&](const YAML::Node& v) { w.burst = r.boolean(v, path + ".burst"); }},
         {"h2d_gbps", rate(w.h2d_gbps, "h2d_gbps")},
         {"d2h_gbps", rate(w.d2h_gbps, "d2h_gbps")},
         {"nvlink_gbps", rate(w.nvlink_gbps, "nvlink_gbps")},
         {"net_gbps", rate(w.net_gbps, "net_gbps")},
         {"transport", [&](const YAML::Node& v) { w.transport = r.choice(v, path + ".transport", {"ib", "socket"}); }},
         {"mem_used", ratio(w.mem_used, "mem_used")},
         {"fragmentation", ratio(w.fragmentation, "fragmentation")},
         {"fragmentation_end", ratio(w.fragmentation_end, "fragmentation_end")},
         {"cpu_busy", ratio(w.cpu_busy, "cpu_busy")},
         {"iowait", ratio(w.iowait, "iowait")},
         {"psi_cpu", ratio(w.psi_cpu, "psi_cpu")},
         {"psi_io", ratio(w.psi_io, "psi_io")},
         {"disk_busy", ratio(w.disk_busy, "disk_busy")},
         {"disk_read_mbps", rate(w.disk_read_mbps, "disk_read_mbps")},
         {"rps", rate(w.rps, "rps")},
         {"p50_ms", rate(w.p50_ms, "p50_ms")},
         {"p99_ms", rate(w.p99_ms, "p99_ms")},
         {"queue", rate(w.queue, "queue")},
         {"kv_usage", ratio(w.kv_usage, "kv_usage")},
         {"preemptions", rate(w.preemptions, "preemptions")},
         {"queue_growth", rate(w.queue_growth, "queue_growth")},
         {"batch", rate(w.batch, "batch")},
         {"ttft_ms", rate(w.ttft_ms, "ttft_ms")},
         {"ttft_p99_ms", rate(w.ttft_p99_ms, "ttft_p99_ms")}});
  if (w.kind == "idle") {
    w.duty = w.sm_efficiency = w.tensor = w.dram = w.fp32 = w.fp16 = w.fp64 = 0;
    w.h2d_gbps = w.d2h_gbps = w.nvlink_gbps = w.net_gbps = 0;
  }
  if (w.p99_ms > 0 && w.p99_ms < w.p50_ms) r.fail(n, path + ": p99_ms must be >= p50_ms");
  return w;
}

Scenario read_scenario(const YAML::Node& root, const std::string& origin) {
  Reader r(origin);
  Scenario s;
  s.source_path = origin;
  std::string model = "h100-sxm";
  YAML::Node model_node, links_node, job_node, engines_node;
  bool has_engines = false;
  bool model_given = false;
  Workload defaults;
  r.map(root, "scenario",
        {{"name", [&](const YAML::Node& v) { s.name = r.text(v, "name"); }},
         {"description", [&](const YAML::Node& v) { s.description = r.text(v, "description"); }},
         {"repeat", [&](const YAML::Node& v) { s.repeat = r.boolean(v, "repeat"); }},
         {"expect",
          [&](const YAML::Node& v) {
            r.map(v, "expect",
                  {{"cause", [&](const YAML::Node& c) { s.expect_cause = r.text(c, "expect.cause"); }},
                   {"gpus", [&](const YAML::Node& g) {
                      if (g.IsScalar() && g.Scalar() == "all") return;
                      if (!g.IsSequence()) r.fail(g, "expect.gpus: expected \"all\" or a list of indices");
                      for (const auto& i : g) s.expect_gpus.push_back(r.integer(i, "expect.gpus[]", 0, 63));
                    }}});
          }},
         {"node",
          [&](const YAML::Node& v) {
            r.map(v, "node",
                  {{"hostname", [&](const YAML::Node& x) { s.hostname = r.text(x, "node.hostname"); }},
                   {"gpu_model", [&](const YAML::Node& x) { model = r.text(x, "node.gpu_model"); model_node = x; model_given = true; }},
                   {"gpus", [&](const YAML::Node& x) { s.gpus = r.integer(x, "node.gpus", 1, 64); }},
                   {"pcie_gen", [&](const YAML::Node& x) { s.pcie_gen = r.integer(x, "node.pcie_gen", 1, 6); }},
                   {"pcie_width", [&](const YAML::Node& x) { s.pcie_width = r.integer(x, "node.pcie_width", 1, 32); }},
                   {"cpus", [&](const YAML::Node& x) { s.cpus = r.integer(x, "node.cpus", 1, 4096); }},
                   {"nic", [&](const YAML::Node& x) { s.nic = r.text(x, "node.nic"); }},
                   {"nic_gbps", [&](const YAML::Node& x) { s.nic_gbps = r.number(x, "node.nic_gbps", 0.1, 1e4); }},
                   {"ib_ports", [&](const YAML::Node& x) { s.ib_ports = r.integer(x, "node.ib_ports", 0, 64); }},
                   {"ib_gbps", [&](const YAML::Node& x) { s.ib_gbps = r.number(x, "node.ib_gbps", 1, 1e4); }},
                   {"gpu_links", [&](const YAML::Node& x) {
                      s.gpu_links = r.choice(x, "node.gpu_links", {"nvlink", "pcie"});
                      links_node = x;
                    }}});
          }},
         {"job",
          [&](const YAML::Node& v) {
            job_node = v;
            auto indices = [&](const YAML::Node& x, const std::string& path, std::vector<int>& out) {
              if (!x.IsSequence() || x.size() == 0) r.fail(x, path + ": expected a non-empty list of indices");
              for (const auto& i : x) out.push_back(r.integer(i, path + "[]", 0, 63));
            };
            r.map(v, "job",
                  {{"gpus", [&](const YAML::Node& x) { indices(x, "job.gpus", s.job.gpus); }},
                   {"numa_nodes", [&](const YAML::Node& x) { indices(x, "job.numa_nodes", s.job.numa_nodes); }},
                   {"processes", [&](const YAML::Node& x) {
                      s.job.one_process = r.choice(x, "job.processes", {"per_gpu", "one"}) == "one";
                    }},
                   {"id", [&](const YAML::Node& x) { s.job.id = r.text(x, "job.id"); }},
                   {"source", [&](const YAML::Node& x) {
                      s.job.source = r.choice(x, "job.source", {"slurm", "environment"});
                    }},
                   {"first_rank", [&](const YAML::Node& x) { s.job.first_rank = r.integer(x, "job.first_rank", 0, 1 << 20); }},
                   {"world_size", [&](const YAML::Node& x) { s.job.world_size = r.integer(x, "job.world_size", 1, 1 << 20); }}});
            if (s.job.gpus.empty()) r.fail(v, "job: needs gpus");
          }},
         {"defaults", [&](const YAML::Node& v) { defaults = read_workload(r, v, "defaults"); }},
         {"engines", [&](const YAML::Node& v) {
            engines_node = v;
            has_engines = true;
          }},
         {"phases",
          [&](const YAML::Node& v) {
            if (!v.IsSequence() || v.size() == 0) r.fail(v, "phases: expected a non-empty list");
            for (size_t i = 0; i < v.size(); ++i) {
              const std::string path = "phases[" + std::to_string(i) + "]";
              Phase p;
              YAML::Node wl;
              bool has_workload = false;
              r.map(v[i], path,
                    {{"name", [&](const YAML::Node& x) { p.name = r.text(x, path + ".name"); }},
                     {"duration", [&](const YAML::Node& x) { p.duration_ms = r.duration(x, path + ".duration"); }},
                     {"workload", [&](const YAML::Node& x) { wl = x; has_workload = true; }}});
              if (p.duration_ms <= 0) r.fail(v[i], path + ": needs a positive duration");
              p.workload = has_workload ? read_workload(r, wl, path + ".workload") : defaults;
              s.phases.push_back(std::move(p));
            }
          }},
         {"faults", [&](const YAML::Node& v) {
            if (!v.IsSequence()) r.fail(v, "faults: expected a list");
            for (size_t i = 0; i < v.size(); ++i) {
              const std::string path = "faults[" + std::to_string(i) + "]";
              Fault f;
              r.map(v[i], path,
                    {{"kind", [&](const YAML::Node& x) {
                        f.kind = r.choice(x, path + ".kind", {"thermal", "power_cap", "xid", "link_degraded", "idle_gpu", "hang"});
                      }},
                     {"gpu", [&](const YAML::Node& x) { f.gpu = r.integer(x, path + ".gpu", 0, 63); }},
                     {"after", [&](const YAML::Node& x) { f.after_ms = r.duration(x, path + ".after"); }},
                     {"xid", [&](const YAML::Node& x) { f.xid = r.integer(x, path + ".xid", 1, 1000); }},
                     {"gen", [&](const YAML::Node& x) { f.gen = r.integer(x, path + ".gen", 1, 6); }},
                     {"width", [&](const YAML::Node& x) { f.width = r.integer(x, path + ".width", 1, 32); }}});
              if (f.kind.empty()) r.fail(v[i], path + ": needs a kind");
              s.faults.push_back(f);
            }
          }}});
  if (s.name.empty()) r.fail(root, "scenario: needs a name");
  if (s.phases.empty()) r.fail(root, "scenario: needs phases");
  auto m = find_gpu_model(model);
  if (!m) {
    std::string known;
    for (const auto& g : gpu_models()) known += (known.empty() ? "" : ", ") + std::string(g.key);
    r.fail(model_given ? model_node : root, "node.gpu_model: unknown model \"" + model + "\" (known: " + known + ")");
  }
  s.model = *m;
  if (s.pcie_gen == 0) s.pcie_gen = s.model.pcie_gen;
  if (s.pcie_width == 0) s.pcie_width = s.model.pcie_width;
  for (const auto& f : s.faults) {
    if (f.gpu >= s.gpus) throw ParseError{origin + ": fault on gpu " + std::to_string(f.gpu) + " but the node has " + std::to_string(s.gpus) + " GPUs"};
  }
  if (s.gpu_links.empty()) s.gpu_links = s.model.nvlink_links > 0 ? "nvlink" : "pcie";
  if (s.gpu_links == "nvlink" && s.model.nvlink_links == 0) {
    r.fail(links_node, "node.gpu_links: nvlink, but " + model + " has no NVLink");
  }
  for (int g : s.job.gpus) {
    if (g >= s.gpus) r.fail(job_node, "job.gpus names gpu " + std::to_string(g) + " beyond the node's " + std::to_string(s.gpus));
  }
  for (int n : s.job.numa_nodes) {
    if (n >= s.numa_nodes()) {
      r.fail(job_node, "job.numa_nodes names node " + std::to_string(n) + " but the node has " +
                           std::to_string(s.numa_nodes()) + " (the first half of the GPUs on 0, the rest on 1)");
    }
  }
  if (has_engines) {
    // After the phases: an engine's per-phase overrides start from them.
    const YAML::Node& v = engines_node;
    if (!v.IsSequence() || v.size() == 0) r.fail(v, "engines: expected a non-empty list");
    if (v.size() > 8) r.fail(v, "engines: at most 8");
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string path = "engines[" + std::to_string(i) + "]";
      Engine e;
      YAML::Node phases;
      r.map(v[i], path,
            {{"kind", [&](const YAML::Node& x) { e.kind = r.choice(x, path + ".kind", {"vllm"}); }},
             {"model", [&](const YAML::Node& x) { e.model = r.text(x, path + ".model"); }},
             {"port", [&](const YAML::Node& x) { e.port = r.integer(x, path + ".port", 1, 65535); }},
             {"gpus", [&](const YAML::Node& x) {
                if (!x.IsSequence() || x.size() == 0) r.fail(x, path + ".gpus: expected a non-empty list of indices");
                for (const auto& g : x) {
                  const int gi = r.integer(g, path + ".gpus[]", 0, 63);
                  if (gi >= s.gpus) r.fail(g, path + ".gpus names gpu " + std::to_string(gi) + " beyond the node's " + std::to_string(s.gpus));
                  e.gpus.push_back(gi);
                }
              }},
             {"phases", [&](const YAML::Node& x) {
                if (!x.IsMap()) r.fail(x, path + ".phases: expected a map of phase name to workload");
                phases = x;
              }}});
      for (const Phase& p : s.phases) e.by_phase.push_back(p.workload);
      for (auto it = phases.begin(); phases && it != phases.end(); ++it) {
        const std::string name = it->first.as<std::string>();
        const std::string at = path + ".phases." + name;
        bool found = false;
        for (size_t k = 0; k < s.phases.size(); ++k) {
          if (s.phases[k].name != name) continue;
          e.by_phase[k] = read_workload(r, it->second, at, s.phases[k].workload);
          found = true;
        }
        if (!found) r.fail(it->first, at + ": no phase of that name");
      }
      for (const Engine& o : s.engines) {
        if (o.port == e.port) r.fail(v[i], path + ": port " + std::to_string(e.port) + " is another engine's");
        for (int g : o.gpus.empty() ? std::vector<int>{0} : o.gpus) {
          if (e.gpus.empty() || o.gpus.empty() || std::find(e.gpus.begin(), e.gpus.end(), g) != e.gpus.end()) {
            r.fail(v[i], path + ": shares a GPU with another engine (one engine per GPU)");
          }
        }
      }
      s.engines.push_back(std::move(e));
    }
  }
  for (int g : s.expect_gpus) {
    if (g >= s.gpus) throw ParseError{origin + ": expect.gpus names gpu " + std::to_string(g) + " beyond the node's " + std::to_string(s.gpus)};
  }
  return s;
}

}  // namespace

int64_t Scenario::total_ms() const {
  int64_t t = 0;
  for (const auto& p : phases) t += p.duration_ms;
  return t;
}

size_t Scenario::phase_index(int64_t elapsed_ms) const {
  int64_t into = 0;
  const Phase& p = phase_at(elapsed_ms, &into);
  return static_cast<size_t>(&p - phases.data());
}

const Phase& Scenario::phase_at(int64_t elapsed_ms, int64_t* into_ms) const {
  const int64_t total = total_ms();
  if (elapsed_ms < 0) elapsed_ms = 0;
  if (repeat && total > 0) elapsed_ms %= total;
  for (const auto& p : phases) {
    if (elapsed_ms < p.duration_ms) {
      *into_ms = elapsed_ms;
      return p;
    }
    elapsed_ms -= p.duration_ms;
  }
  *into_ms = phases.back().duration_ms;  // hold the last phase
  return phases.back();
}

Result<Scenario> parse_scenario(const std::string& yaml_text, const std::string& origin) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root || root.IsNull()) return invalid_argument(origin + ": empty scenario");
    return read_scenario(root, origin);
  } catch (const ParseError& e) {
    return invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return invalid_argument(origin + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": " + e.msg);
  }
}

Result<Scenario> load_scenario(const std::string& name_or_path, const std::string& dir) {
  namespace fs = std::filesystem;
  std::string path = name_or_path;
  const bool looks_like_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml") ||
                               name_or_path.ends_with(".yml");
  if (!looks_like_path) path = dir + "/" + name_or_path + ".yaml";
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!looks_like_path) {
      std::string known;
      for (const auto& n : list_scenarios(dir)) known += (known.empty() ? "" : ", ") + n;
      return not_found("unknown scenario \"" + name_or_path + "\" (in " + dir + ": " + known + ")");
    }
    return not_found("cannot read scenario " + path);
  }
  std::stringstream buf;
  buf << in.rdbuf();
  if (buf.str().size() > (4u << 20)) return invalid_argument(path + ": scenario file larger than 4 MiB");
  return parse_scenario(buf.str(), path);
}

std::vector<std::string> list_scenarios(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string default_scenario_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("GPULENS_SCENARIOS"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& candidate : {exe.parent_path() / "../share/gpulens/scenarios", exe.parent_path() / "../../scenarios",
                                      exe.parent_path() / "../scenarios"}) {
      if (fs::is_directory(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
    }
  }
#ifdef GPULENS_SOURCE_SCENARIOS
  return GPULENS_SOURCE_SCENARIOS;
#else
  return "scenarios";
#endif
}

}  // namespace gpulens::sim
