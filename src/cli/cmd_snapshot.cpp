// `gpulens snapshot`: one look at every GPU through the three layers and
// health, in the terminal (a better nvidia-smi) or as JSON. Reads a running
// agent's /api/v1/current with --url, else collects locally.
#include <simdjson.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <map>
#include <thread>

#include "cli/command.h"
#include "cli/setup.h"
#include "util/http_client.h"

namespace gpulens::cli {
namespace {

struct Gpu {
  std::string index, uuid, name;
  std::map<std::string, double, std::less<>> fields;
  double get(std::string_view k, double missing = -1) const {
    auto it = fields.find(k);
    return it == fields.end() ? missing : it->second;
  }
};

std::string pct(double v) {
  if (v < 0) return "  - ";
  char b[16];
  std::snprintf(b, sizeof b, "%3.0f%%", v * 100);
  return b;
}

// Renders the table from the JSON document (the same one the API serves).
int print_table(const std::string& json, bool colour) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc)) {
    std::cerr << "gpulens snapshot: the agent answered something that is not JSON\n";
    return kExitFailure;
  }
  std::vector<Gpu> gpus;
  simdjson::dom::array arr;
  if (doc["gpus"].get_array().get(arr)) {
    std::cerr << "gpulens snapshot: no \"gpus\" in the agent's answer\n";
    return kExitFailure;
  }
  for (auto g : arr) {
    Gpu gpu;
    std::string_view sv;
    if (!g["gpu"].get_string().get(sv)) gpu.index = sv;
    if (!g["uuid"].get_string().get(sv)) gpu.uuid = sv;
    if (!g["name"].get_string().get(sv)) gpu.name = sv;
    simdjson::dom::object fields;
    if (!g["fields"].get_object().get(fields)) {
      for (auto kv : fields) {
        double v = 0;
        if (!kv.value.get_double().get(v)) gpu.fields.emplace(std::string(kv.key), v);
      }
    }
    gpus.push_back(std::move(gpu));
  }
  bool simulated = false;
  if (doc["simulated"].get_bool().get(simulated)) simulated = false;
  const char* red = colour ? "\033[31m" : "";
  const char* yellow = colour ? "\033[33m" : "";
  const char* dim = colour ? "\033[2m" : "";
  const char* reset = colour ? "\033[0m" : "";
  if (simulated) std::cout << yellow << "SIMULATED DATA (no NVIDIA driver): values come from a scenario" << reset << "\n";
  std::printf("%-3s %-24s | %-24s | %-26s | %-25s | %s\n", "GPU", "NAME", "COMPUTE util SM occ TC", "MEMORY used    BW  frag",
              "IO pcie rx/tx link nvl", "HEALTH power temp clocks");
  for (const auto& g : gpus) {
    std::string name = g.name.size() > 24 ? g.name.substr(0, 24) : g.name;
    if (g.get("gpu_up", 1) == 0) {
      std::printf("%-3s %-24s | %sLOST: not answering (XID %g)%s\n", g.index.c_str(), name.c_str(), red,
                  g.get("gpu_last_xid", 0), reset);
      continue;
    }
    const double used = g.get("gpu_memory_used_bytes"), total = g.get("gpu_memory_total_bytes");
    char mem[32] = "   -";
    if (used >= 0 && total > 0) std::snprintf(mem, sizeof mem, "%3.0f/%-3.0fG", used / (1 << 30), total / (1 << 30));
    const double gen = g.get("gpu_pcie_link_generation"), width = g.get("gpu_pcie_link_width");
    char link[40] = "-";
    if (gen >= 0) std::snprintf(link, sizeof link, "G%gx%g", gen, width);
    std::string throttle;
    for (const auto& [k, v] : g.fields) {
      if (k.starts_with("gpu_clock_event_active{") && v > 0 && k.find("gpu_idle") == std::string::npos) {
        auto q = k.find('"');
        throttle += (throttle.empty() ? "" : ",") + k.substr(q + 1, k.rfind('"') - q - 1);
      }
    }
    const double temp = g.get("gpu_temperature_celsius");
    std::printf("%-3s %-24s | %s %s %s %s | %-9s %s %s | %s/%s %-7s %s | %4.0fW %s%3.0fC%s %s%s%s\n", g.index.c_str(),
                name.c_str(), pct(g.get("gpu_utilization_ratio")).c_str(), pct(g.get("gpu_sm_active_ratio")).c_str(),
                pct(g.get("gpu_sm_occupancy_ratio")).c_str(), pct(g.get("gpu_tensor_core_util_ratio")).c_str(), mem,
                pct(g.get("gpu_mem_bandwidth_util_ratio")).c_str(), pct(g.get("gpu_memory_fragmentation_ratio")).c_str(),
                pct(g.get("gpu_pcie_rx_bandwidth_util_ratio")).c_str(), pct(g.get("gpu_pcie_tx_bandwidth_util_ratio")).c_str(),
                link, pct(g.get("gpu_nvlink_bandwidth_util_ratio")).c_str(), g.get("gpu_power_watts", 0),
                temp > 80 ? red : "", temp, reset, throttle.empty() ? dim : red,
                throttle.empty() ? "ok" : throttle.c_str(), reset);
  }
  std::cout << dim
            << "util: a kernel ran (nvidia-smi); SM: SMs busy; occ: warps resident; TC: tensor cores; BW: DRAM bandwidth; "
               "frag: allocator fragmentation; pcie: of peak"
            << reset << "\n";
  return kExitOk;
}

}  // namespace

int run_snapshot(int argc, char** argv) {
  CLI::App app{"Show every GPU through compute, memory, IO and health, once.", "gpulens snapshot"};
  CommonFlags flags;
  std::string url, format = "table";
  flags.add_to(app);
  app.add_option("--url", url, "read a running agent (e.g. http://127.0.0.1:9400) instead of collecting locally");
  app.add_option("--format", format, "table or json")->check(CLI::IsMember({"table", "json"}));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  std::string json;
  if (!url.empty()) {
    HttpClient client({.timeout_ms = 5000});
    auto r = client.get(url + "/api/v1/current");
    if (!r) {
      std::cerr << "gpulens snapshot: " << r.status().message() << "\n";
      return kExitFailure;
    }
    if (r->status != 200) {
      std::cerr << "gpulens snapshot: " << url << " answered HTTP " << r->status << "\n";
      return kExitFailure;
    }
    json = std::move(r->body);
  } else {
    auto config = flags.resolve();
    if (!config) {
      std::cerr << "gpulens snapshot: " << config.status().message() << "\n";
      return kExitUsage;
    }
    AgentOptions options{.listen = "", .interval_ms = config->interval_ms, .history_ms = config->interval_ms,
                         .dcgm_names = false, .scenario_label = ""};
    auto agent = make_agent(*config, options, true);
    if (!agent) {
      std::cerr << "gpulens snapshot: " << agent.status().message() << "\n";
      return kExitFailure;
    }
    // Rates (PCIe, GPM) need two samples on real GPUs.
    (*agent)->collect_once(wall_ms());
    if (!(*agent)->simulated()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(config->interval_ms, 1000)));
      (*agent)->collect_once(wall_ms());
    }
    json = (*agent)->current_json();
  }
  if (format == "json") {
    std::cout << json;
    return kExitOk;
  }
  return print_table(json, isatty(STDOUT_FILENO));
}

}  // namespace gpulens::cli
