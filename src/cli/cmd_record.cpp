// `gpulens record`: write the agent's series over a duration to an
// OpenMetrics file with a timestamp on every sample, ending in "# EOF" —
// the format `promtool tsdb create-blocks-from openmetrics` and
// `gpulens diagnose --replay` read.
//
// With the simulator the clock is virtual: a 24 h recording is written in
// seconds, ending now. With real sources it samples in real time.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <thread>

#include "cli/command.h"
#include "cli/setup.h"
#include "export/exposition.h"
#include "util/duration.h"

namespace gpulens::cli {
namespace {

struct Point {
  int64_t t_ms;
  double v;
};

// Writes all buffered points family by family (OpenMetrics forbids
// interleaving families), each series in time order.
void write_openmetrics(std::ostream& out, const SeriesRegistry& reg, const std::vector<std::vector<Point>>& points) {
  std::string buf;
  for (const FieldDef& f : catalog()) {
    if (!f.native) continue;
    bool any = false;
    for (uint32_t s : reg.slots_of(f.id)) any |= s < points.size() && !points[s].empty();
    if (!any) continue;
    const std::string_view fam = family_name(f, true);
    append_family_header(buf, fam, type_name(f.type), f.help, true);
    auto sample = [&](std::string_view suffix, std::string_view labels, const Point& p) {
      buf += f.name;
      buf += suffix;
      if (!labels.empty()) {
        buf += '{';
        buf += labels;
        buf += '}';
      }
      buf += ' ';
      append_value(buf, p.v);
      append_timestamp(buf, p.t_ms);
      buf += '\n';
    };
    if (f.type == MetricType::kHistogram) {
      // One metric point per timestamp: buckets, then sum and count.
      const auto& slots = reg.slots_of(f.id);
      const std::vector<Point>* count = nullptr;
      for (uint32_t s : slots) {
        if (reg.series(s).extra == "count" && s < points.size()) count = &points[s];
      }
      if (!count) continue;
      for (size_t i = 0; i < count->size(); ++i) {
        const int64_t t = (*count)[i].t_ms;
        auto at = [&](uint32_t s) -> const Point* {
          if (s >= points.size()) return nullptr;
          if (i < points[s].size() && points[s][i].t_ms == t) return &points[s][i];  // the usual case
          for (const auto& p : points[s]) {
            if (p.t_ms == t) return &p;
          }
          return nullptr;
        };
        for (uint32_t s : slots) {
          const auto& extra = reg.series(s).extra;
          if (extra == "sum" || extra == "count") continue;
          if (const Point* p = at(s)) sample("_bucket", reg.series(s).labels, *p);
        }
        for (uint32_t s : slots) {
          if (reg.series(s).extra == "sum") {
            if (const Point* p = at(s)) sample("_sum", "", *p);
          }
        }
        sample("_count", "", (*count)[i]);
      }
    } else {
      for (uint32_t s : reg.slots_of(f.id)) {
        if (s >= points.size()) continue;
        for (const auto& p : points[s]) sample("", reg.series(s).labels, p);
      }
    }
    out << buf;
    buf.clear();
  }
  out << "# EOF\n";
}

}  // namespace

int run_record(int argc, char** argv) {
  CLI::App app{"Record the agent's series to an OpenMetrics file (timestamps on every sample, # EOF).",
               "gpulens record"};
  CommonFlags flags;
  std::string duration = "10m", out_path = "-";
  bool realtime = false;
  flags.add_to(app);
  app.add_option("--duration", duration, "how long to record (default 10m)");
  app.add_option("-o,--out", out_path, "output file, - for stdout (default)");
  app.add_flag("--realtime", realtime, "sample the simulator in real time instead of a virtual clock");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto config = flags.resolve();
  if (!config) {
    std::cerr << "gpulens record: " << config.status().message() << "\n";
    return kExitUsage;
  }
  auto dur = parse_duration_ms(duration);
  if (!dur || *dur <= 0) {
    std::cerr << "gpulens record: --duration: " << (dur ? "must be positive" : dur.status().message()) << "\n";
    return kExitUsage;
  }
  AgentOptions options{.listen = "", .interval_ms = config->interval_ms, .history_ms = config->interval_ms,
                       .dcgm_names = false, .scenario_label = ""};
  auto agent = make_agent(*config, options, true);
  if (!agent) {
    std::cerr << "gpulens record: " << agent.status().message() << "\n";
    return kExitFailure;
  }
  Agent& a = **agent;
  const bool virtual_clock = a.simulated() && !realtime;
  const int64_t steps = *dur / config->interval_ms + 1;
  if (virtual_clock && steps > 2'000'000) {
    std::cerr << "gpulens record: " << steps << " samples per series is too many; raise --interval\n";
    return kExitUsage;
  }

  std::vector<std::vector<Point>> points;
  const int64_t end = wall_ms() / 1000 * 1000;
  const int64_t start = virtual_clock ? end - (steps - 1) * config->interval_ms : wall_ms();
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = start + i * config->interval_ms;
    if (!virtual_clock) {
      const int64_t now = wall_ms();
      if (t > now) std::this_thread::sleep_for(std::chrono::milliseconds(t - now));
      t = wall_ms();
    }
    a.collect_once(t);
    std::scoped_lock lock(a.registry().mutex(), a.live().mutex());
    const auto& live = a.live();
    if (points.size() < live.size()) points.resize(live.size());
    for (uint32_t s = 0; s < live.size(); ++s) {
      if (live.present(s) && live.time_ms(s) == t) points[s].push_back({t, live.value(s)});
    }
  }

  std::ofstream file;
  std::ostream* out = &std::cout;
  if (out_path != "-") {
    file.open(out_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "gpulens record: cannot write " << out_path << "\n";
      return kExitFailure;
    }
    out = &file;
  }
  {
    std::lock_guard lock(a.registry().mutex());
    write_openmetrics(*out, a.registry(), points);
  }
  out->flush();
  if (!*out) {
    std::cerr << "gpulens record: write failed (" << out_path << ")\n";
    return kExitFailure;
  }
  if (out_path != "-") {
    std::cerr << "gpulens: recorded " << steps << " samples per series over " << format_duration(*dur) << " to "
              << out_path << (virtual_clock ? " (simulated, virtual clock)" : "") << "\n";
  }
  return kExitOk;
}

}  // namespace gpulens::cli
