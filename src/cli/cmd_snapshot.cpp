// `gpulens snapshot`: one look at every GPU through the three layers and
// health, in the terminal (a better nvidia-smi) or as JSON. Reads a running
// agent's /api/v1/current with --url, else collects locally.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include "cli/agent_findings.h"
#include "cli/command.h"
#include "cli/setup.h"
#include "cli/snapshot_processes.h"
#include "cli/snapshot_values.h"
#include "model/series.h"
#include "sources/sim/scenario.h"
#include "top/service_lines.h"
#include "util/duration.h"
#include "util/http_client.h"
#include "util/terminal_text.h"
#include "util/text_fit.h"

namespace gpulens::cli {
namespace {

// printf into a string.
template <typename... Args>
std::string format(const char* f, Args... args) {
  char b[512];
  std::snprintf(b, sizeof b, f, args...);
  return b;
}

std::string pct(double v) {
  if (v < 0) return "  - ";
  char b[16];
  std::snprintf(b, sizeof b, "%3.0f%%", v * 100);
  return b;
}

struct Gpu {
  std::string index, uuid, name;
  std::vector<top::NodeSeries> series;  // labels as data, in the agent's order
  // The label-free series `k`; nullptr when absent.
  const top::NodeSeries* find(std::string_view k) const {
    for (const top::NodeSeries& s : series) {
      if (s.name == k && s.labels.empty() && s.part == HistogramPart::kNone) return &s;
    }
    return nullptr;
  }
  double get(std::string_view k, double missing = -1) const {
    const top::NodeSeries* s = find(k);
    return s == nullptr ? missing : s->value;
  }
  // Largest value of `name` over all its label sets (pushed series carry a
  // pid); `missing` when none.
  double max_of(std::string_view metric, double missing = -1) const {
    double best = missing;
    for (const top::NodeSeries& s : series) {
      if (s.name != metric || s.part != HistogramPart::kNone) continue;
      if (best == missing || s.value > best) best = s.value;
    }
    return best;
  }
};

// One line per process that pushes allocator data to the agent:
//   "  GPU 0 pid 4242 (ml/trainer-0): slack 62%, external fragmentation 71% (pool large), 3 retries, 0 OOMs"
// Slack is 1 - allocated/reserved; external fragmentation is 1 - largest free
// block / free bytes inside reserved segments, the worst pool of the process.
std::vector<std::string> allocator_lines(const Gpu& g) {
  struct Proc {
    std::string where;
    double slack = -1, external = -1, retries = -1, ooms = -1;
    std::string pool;
  };
  std::map<std::string, Proc> procs;  // by pid
  for (const top::NodeSeries& s : g.series) {
    const std::string pid(s.labels.get("pid"));
    if (pid.empty()) continue;
    const std::string_view name = s.name;
    const double v = s.value;
    Proc& p = procs[pid];
    if (p.where.empty()) {
      const std::string ns(s.labels.get("namespace")), pod(s.labels.get("pod"));
      if (!pod.empty()) p.where = " (" + (ns.empty() ? "" : ns + "/") + pod + ")";
    }
    if (name == "gpu_memory_fragmentation_ratio") p.slack = std::max(p.slack, v);
    if (name == "gpu_allocator_external_fragmentation_ratio" && v > p.external) {
      p.external = v;
      p.pool = s.labels.get("pool");
    }
    if (name == "gpu_allocator_retries_total") p.retries = std::max(p.retries, v);
    if (name == "gpu_allocator_ooms_total") p.ooms = std::max(p.ooms, v);
  }
  std::vector<std::string> out;
  for (const auto& [pid, p] : procs) {
    if (p.slack < 0 && p.external < 0 && p.retries < 0) continue;  // a process the driver lists, nothing pushed
    std::string line = "  GPU " + g.index + " pid " + pid + p.where + ":";
    std::string parts;
    auto add = [&](const std::string& s) { parts += (parts.empty() ? " " : ", ") + s; };
    if (p.slack >= 0) add("slack " + pct(p.slack).substr(pct(p.slack).find_first_not_of(' ')));
    if (p.external >= 0) {
      const std::string e = pct(p.external);
      add("external fragmentation " + e.substr(e.find_first_not_of(' ')) +
          (p.pool.empty() ? "" : " (pool " + p.pool + ")"));
    }
    char b[64];
    if (p.retries >= 0) {
      std::snprintf(b, sizeof b, "%.0f retries", p.retries);
      add(b);
    }
    if (p.ooms >= 0) {
      std::snprintf(b, sizeof b, "%.0f OOMs", p.ooms);
      add(b);
    }
    out.push_back(line + parts);
  }
  return out;
}

// The table's columns, in the order drawn; a section's title stands over
// its first column. `width` 0: left-aligned, last (clocks).
struct TableColumn {
  int section;
  const char* label;
  size_t width;
  const char* legend;  // its line in the legend under the table ("" none)
};
constexpr const char* kSections[] = {"COMPUTE", "MEMORY", "IO", "HEALTH"};
const std::vector<TableColumn> kColumns = {
    {0, "util", 5, "util: a kernel ran (nvidia-smi)"},
    {0, "SM", 5, "SM: SMs busy"},
    {0, "occ", 5, "occ: warps resident"},
    {0, "TC", 5, "TC: tensor cores"},
    {1, "used", 9, ""},
    {1, "BW", 5, "BW: DRAM bandwidth"},
    {1, "frag", 5, "frag: allocator slack, 1 - allocated/reserved (worst process)"},
    {2, "pcie rx/tx", 11, "pcie: of peak"},
    {2, "link", 7, ""},
    {2, "nvl", 5, ""},
    {3, "power", 6, ""},
    {3, "temp", 5, ""},
    {3, "clocks", 0, ""},
};

struct Layout {
  size_t name = 24;    // columns of the GPU's name (0: the index alone)
  bool titles = true;  // COMPUTE, MEMORY, IO, HEALTH
  std::vector<bool> shown = std::vector<bool>(kColumns.size(), true);
};

// What narrows the table, in order, until it fits (docs/terminal.md).
struct Narrowing {
  const char* what;
  void (*apply)(Layout&);
};
size_t column_index(std::string_view label) {
  for (size_t c = 0; c < kColumns.size(); ++c) {
    if (kColumns[c].label == label) return c;
  }
  return 0;
}
const Narrowing kNarrowing[] = {
    {"name to 12", [](Layout& l) { l.name = 12; }},
    {"TC", [](Layout& l) { l.shown[column_index("TC")] = false; }},
    {"nvl", [](Layout& l) { l.shown[column_index("nvl")] = false; }},
    {"link", [](Layout& l) { l.shown[column_index("link")] = false; }},
    {"occ", [](Layout& l) { l.shown[column_index("occ")] = false; }},
    {"frag", [](Layout& l) { l.shown[column_index("frag")] = false; }},
    {"titles", [](Layout& l) { l.titles = false; }},
    {"BW", [](Layout& l) { l.shown[column_index("BW")] = false; }},
    {"power", [](Layout& l) { l.shown[column_index("power")] = false; }},
    {"name", [](Layout& l) { l.name = 0; }},
    {"SM", [](Layout& l) { l.shown[column_index("SM")] = false; }},
    {"pcie rx/tx", [](Layout& l) { l.shown[column_index("pcie rx/tx")] = false; }},
};

struct Row {
  std::string index, name, lost;                          // lost: the LOST text instead of values
  std::vector<std::pair<std::string, const char*>> values;  // per column: text, style ("" none)
};

// A GPU's name in at most `w` columns, cut between words ("NVIDIA H100 80GB
// HBM3" at 12: "H100 80GB"), never inside one.
std::string name_in(std::string name, size_t w) {
  if (name.size() <= w) return name;
  if (name.starts_with("NVIDIA ")) name = name.substr(7);  // the vendor says the least
  if (name.size() <= w) return name;
  size_t cut = w;
  while (cut > 0 && name[cut] != ' ' && name[cut] != '-') --cut;
  return name.substr(0, cut);
}

std::string pad_right(const std::string& s, size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }
std::string cell(const std::string& v, size_t width) {
  if (width == 0) return " " + v;
  return v.size() >= width ? " " + v : std::string(width - v.size(), ' ') + v;
}

std::vector<std::string> render_table(const Layout& l, const std::vector<Row>& rows, const char* reset) {
  std::vector<std::string> out;
  std::string header = "GPU";
  if (l.name > 0) header += " " + pad_right("NAME", l.name);
  for (int sec = 0; sec < 4; ++sec) {
    bool any = false;
    for (size_t c = 0; c < kColumns.size(); ++c) any = any || (kColumns[c].section == sec && l.shown[c]);
    if (!any) continue;
    header += std::string(" | ") + (l.titles ? kSections[sec] : "");
    for (size_t c = 0; c < kColumns.size(); ++c) {
      if (kColumns[c].section == sec && l.shown[c]) header += cell(kColumns[c].label, kColumns[c].width);
    }
  }
  out.push_back(header);
  for (const Row& r : rows) {
    std::string line = pad_right(r.index, 3);
    if (l.name > 0) line += " " + pad_right(name_in(r.name, l.name), l.name);
    if (!r.lost.empty()) {
      out.push_back(line + " | " + r.lost);
      continue;
    }
    for (int sec = 0; sec < 4; ++sec) {
      bool any = false;
      for (size_t c = 0; c < kColumns.size(); ++c) any = any || (kColumns[c].section == sec && l.shown[c]);
      if (!any) continue;
      line += " | " + std::string(l.titles ? std::string_view(kSections[sec]).size() : 0, ' ');
      for (size_t c = 0; c < kColumns.size(); ++c) {
        if (kColumns[c].section != sec || !l.shown[c]) continue;
        const auto& [text, style] = r.values[c];
        std::string v = cell(text, kColumns[c].width);
        const size_t lead = v.find_first_not_of(' ');
        if (*style && lead != std::string::npos) v = v.substr(0, lead) + style + v.substr(lead) + reset;
        line += v;
      }
    }
    out.push_back(line);
  }
  return out;
}

int widest(const std::vector<std::string>& lines) {
  int w = 0;
  for (const auto& l : lines) w = std::max(w, display_width(l));
  return w;
}

// The service lines (top/service_lines.h) from the node's series.
std::vector<std::string> serving_lines(const SnapshotSeries& node, size_t gpu_count) {
  std::vector<std::string> out = top::service_lines(node, gpu_count);
  for (std::string& l : out) l = "  " + l;
  return out;
}

// Renders the table from the agent's values. `note` (may be empty) is
// printed under the simulated-data banner.
int print_table(const SnapshotValues& values, bool colour, int width, const std::string& note, std::ostream& out) {
  std::vector<Gpu> gpus;
  for (const SnapshotGpu& g : values.gpus) {
    Gpu gpu{.index = g.index, .uuid = g.uuid, .name = g.name, .series = g.series};
    gpus.push_back(std::move(gpu));
  }
  const bool simulated = values.simulated;
  const char* red = colour ? "\033[31m" : "";
  const char* yellow = colour ? "\033[33m" : "";
  const char* dim = colour ? "\033[2m" : "";
  const char* reset = colour ? "\033[0m" : "";
  if (simulated) out << yellow << "SIMULATED DATA (no NVIDIA driver): values come from a scenario" << reset << "\n";
  if (!note.empty()) out << note << "\n";
  if (gpus.empty()) {
    std::string sources;
    for (const auto& n : values.sources) sources += (sources.empty() ? "" : ", ") + n;
    out << "no GPUs: the sources (" << sources << ") report none; --format json shows the node's values\n";
    return kExitOk;
  }
  // Columns: a section title, then each value right-aligned under its
  // label, so the header's separators line up with the rows'. Where the
  // table is wider than `width`, it narrows in the order of kNarrowing.
  std::vector<Row> rows;
  for (const auto& g : gpus) {
    Row r{.index = g.index, .name = g.name, .lost = "", .values = {}};
    if (g.get("gpu_up", 1) == 0) {
      r.lost = format("%sLOST: not answering (XID %g)%s", red, g.get("gpu_last_xid", 0), reset);
      rows.push_back(std::move(r));
      continue;
    }
    const double used = g.get("gpu_memory_used_bytes"), total = g.get("gpu_memory_total_bytes");
    char mem[32] = "-";
    if (used >= 0 && total > 0) std::snprintf(mem, sizeof mem, "%3.0f/%-3.0fG", used / (1 << 30), total / (1 << 30));
    const double gen = g.get("gpu_pcie_link_generation"), width_x = g.get("gpu_pcie_link_width");
    char link[40] = "-";
    if (gen >= 0) std::snprintf(link, sizeof link, "G%gx%g", gen, width_x);
    std::string throttle;
    for (const top::NodeSeries& s : g.series) {
      const std::string_view reason = s.labels.get("reason");
      if (s.name == "gpu_clock_event_active" && s.value > 0 && !reason.empty() && reason != "gpu_idle") {
        throttle += (throttle.empty() ? "" : ",") + std::string(reason);
      }
    }
    const double temp = g.get("gpu_temperature_celsius");
    char rxtx[32];
    std::snprintf(rxtx, sizeof rxtx, "%s/%s", pct(g.get("gpu_pcie_rx_bandwidth_util_ratio")).c_str(),
                  pct(g.get("gpu_pcie_tx_bandwidth_util_ratio")).c_str());
    // Absent is not zero: a power or temperature the GPU does not give is "-".
    r.values = {{pct(g.get("gpu_utilization_ratio")), ""},
                {pct(g.get("gpu_sm_active_ratio")), ""},
                {pct(g.get("gpu_sm_occupancy_ratio")), ""},
                {pct(g.get("gpu_tensor_core_util_ratio")), ""},
                {mem, ""},
                {pct(g.get("gpu_mem_bandwidth_util_ratio")), ""},
                {pct(g.max_of("gpu_memory_fragmentation_ratio")), ""},
                {rxtx, ""},
                {link, ""},
                {pct(g.get("gpu_nvlink_bandwidth_util_ratio")), ""},
                {g.find("gpu_power_watts") ? format("%.0fW", g.get("gpu_power_watts")) : "-", ""},
                {g.find("gpu_temperature_celsius") ? format("%3.0fC", temp) : "   -", temp > 80 ? red : ""},
                {throttle.empty() ? "ok" : throttle, throttle.empty() ? dim : red}};
    rows.push_back(std::move(r));
  }
  Layout layout;
  std::vector<std::string> table = render_table(layout, rows, reset);
  for (const Narrowing& step : kNarrowing) {
    if (width <= 0 || widest(table) <= width) break;
    step.apply(layout);
    table = render_table(layout, rows, reset);
  }
  for (const auto& line : table) out << line << "\n";
  std::vector<std::string> pushed;
  for (const auto& g : gpus) {
    for (auto& l : allocator_lines(g)) pushed.push_back(std::move(l));
  }
  if (!pushed.empty()) {
    out << "in-process allocators (pushed):\n";
    for (const auto& l : pushed) out << l << "\n";
  }
  if (const auto lines = serving_lines(values.node, gpus.size()); !lines.empty()) {
    out << "serving engines:\n";
    for (const auto& l : lines) out << l << "\n";
  }
  std::string legend;
  for (size_t c = 0; c < kColumns.size(); ++c) {
    if (layout.shown[c] && *kColumns[c].legend) legend += (legend.empty() ? "" : "; ") + std::string(kColumns[c].legend);
  }
  out << dim << legend << reset << "\n";
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

  std::string json, note;  // json: the --url answer
  SnapshotValues values;    // a local snapshot's, read from its agent
  std::string proc_root = "/proc";  // where the GPU processes' user and command are read
  std::unique_ptr<Agent> local;  // kept for the findings under the table
  int64_t last_ms = 0;            // its last sample's time
  diagnose::Thresholds thresholds;
  if (!url.empty()) {
    // Accept what users paste: host:port, a trailing slash, the /metrics URL.
    const std::string base = agent_base_url(url);
    if (!base.starts_with("http://")) {
      std::cerr << "gpulens snapshot: --url " << url << ": only http:// is supported\n";
      return kExitUsage;
    }
    HttpClient client({.timeout_ms = 5000});
    auto r = client.get(base + "/api/v1/current");
    if (!r) {
      std::cerr << "gpulens snapshot: " << r.status().message() << "\n";
      return kExitFailure;
    }
    if (r->status != 200) {
      std::cerr << "gpulens snapshot: " << url << " answered HTTP " << r->status << "\n";
      return kExitFailure;
    }
    json = std::move(r->body);
    // Another host's processes are not in this /proc.
    std::string host = base.substr(7);  // after http://
    host = host.substr(0, host.find('/'));
    host = host.starts_with("[") ? host.substr(0, host.find(']') + 1) : host.substr(0, host.find(':'));
    if (host != "127.0.0.1" && host != "localhost" && host != "[::1]") proc_root.clear();
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
    const int64_t start = wall_ms();
    (*agent)->collect_once(start);
    if ((*agent)->simulated()) {
      // A scenario's faults start later than time zero: show the moment the
      // last of them is in effect, and say which moment that is.
      const std::string dir =
          config->source.sim.scenario_dir.empty() ? sim::default_scenario_dir() : config->source.sim.scenario_dir;
      int64_t at = 0;
      if (auto sc = sim::load_scenario(config->source.sim.scenario, dir)) {
        for (const auto& f : sc->faults) at = std::max(at, f.after_ms);
      }
      if (at > 0) {
        at += 10'000;  // past the onset, so rates and clocks have settled
        last_ms = start + static_cast<int64_t>(static_cast<double>(at) / config->source.sim.speed);
        (*agent)->collect_once(last_ms);
        note = "scenario \"" + config->source.sim.scenario + "\" at " + format_duration(at) +
               " of scenario time, after its faults begin";
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(config->interval_ms, 1000)));
      (*agent)->collect_once(wall_ms());
    }
    if (format == "json") json = (*agent)->current_json();
    else values = snapshot_values(**agent);
    local = std::move(*agent);
    last_ms = std::max(last_ms, wall_ms());
    thresholds = config->diagnose;
    proc_root = config->source.nvml.proc_root;
  }
  if (format == "json") {
    std::cout << json;
    return kExitOk;
  }
  // The whole screen is written at once through the terminal rule: names,
  // labels and findings from the agent (pushed or scraped strings among
  // them) cannot carry escape sequences to the terminal.
  if (!url.empty()) {
    auto parsed = parse_snapshot_values(json);
    if (!parsed) {
      std::cerr << "gpulens snapshot: the agent answered something that is not JSON\n";
      return kExitFailure;
    }
    values = std::move(*parsed);
  }
  std::ostringstream screen;
  print_snapshot_header(values, screen);
  // The width to fit: COLUMNS, else the terminal's; none for a pipe.
  const int width = output_width(STDOUT_FILENO);
  int rc = kExitFailure;
  if (!values.has_gpus) std::cerr << "gpulens snapshot: no \"gpus\" in the agent's answer\n";
  else rc = print_table(values, isatty(STDOUT_FILENO), width, note, screen);
  if (rc == kExitOk) print_snapshot_processes(values, proc_root, screen);
  if (rc == kExitOk) print_snapshot_findings(url, local.get(), last_ms, thresholds, isatty(STDOUT_FILENO), screen);
  std::cout << fit_lines(terminal_safe(screen.str(), kTerminalLayout), width);
  return rc;
}

}  // namespace gpulens::cli
