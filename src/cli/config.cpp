// Config file loading and validation.
#include "cli/config.h"

#include <fstream>
#include <sstream>

#include "sources/registry.h"
#include "util/duration.h"
#include "util/yaml_reader.h"

namespace gpulens::cli {

Result<AgentConfig> parse_config(const std::string& text, const std::string& origin) {
  AgentConfig c;
  c.path = origin;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) return c;  // an empty file is the defaults
    yaml::Reader r(origin);
    auto str = [&](std::string& dst, const std::string& what) {
      return [&r, &dst, what](const YAML::Node& v) { dst = r.text(v, what); };
    };
    r.map(root, "config",
          {{"listen", str(c.listen, "listen")},
           {"interval", [&](const YAML::Node& v) { c.interval_ms = r.duration(v, "interval"); }},
           {"history", [&](const YAML::Node& v) { c.history_ms = r.duration(v, "history"); }},
           {"sources", [&](const YAML::Node& v) { c.sources = r.strings(v, "sources"); }},
           {"dcgm_names", [&](const YAML::Node& v) { c.dcgm_names = r.boolean(v, "dcgm_names"); }},
           {"source",
            [&](const YAML::Node& v) {
              r.map(v, "source",
                    {{"sim",
                      [&](const YAML::Node& s) {
                        r.map(s, "source.sim",
                              {{"scenario", str(c.source.sim.scenario, "source.sim.scenario")},
                               {"scenario_dir", str(c.source.sim.scenario_dir, "source.sim.scenario_dir")},
                               {"seed", [&](const YAML::Node& x) {
                                  c.source.sim.seed = static_cast<uint64_t>(r.number(x, "source.sim.seed", 0, 1e15));
                                }},
                               {"speed", [&](const YAML::Node& x) { c.source.sim.speed = r.number(x, "source.sim.speed", 0.01, 1e4); }}});
                      }},
                     {"host",
                      [&](const YAML::Node& s) {
                        r.map(s, "source.host",
                              {{"proc_root", str(c.source.host.proc_root, "source.host.proc_root")},
                               {"sys_root", str(c.source.host.sys_root, "source.host.sys_root")}});
                      }},
                     {"nvml", [&](const YAML::Node& s) {
                        r.map(s, "source.nvml",
                              {{"library", str(c.source.nvml.library, "source.nvml.library")},
                               {"proc_root", str(c.source.nvml.proc_root, "source.nvml.proc_root")},
                               {"calibration", str(c.source.nvml.calibration_file, "source.nvml.calibration")}});
                      }}});
            }},
           {"remote_write",
            [&](const YAML::Node& v) {
              r.map(v, "remote_write",
                    {{"url", str(c.remote_write.url, "remote_write.url")},
                     {"interval", [&](const YAML::Node& x) { c.remote_write.interval_ms = r.duration(x, "remote_write.interval"); }}});
            }},
           // Owned by their commands; checked there (gpulens diagnose/rules --config).
           {"diagnose", [&](const YAML::Node& v) { if (!v.IsMap()) r.fail(v, "diagnose: expected a mapping"); }},
           {"rules", [&](const YAML::Node& v) { if (!v.IsMap()) r.fail(v, "rules: expected a mapping"); }}});
  } catch (const yaml::ParseError& e) {
    return invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return invalid_argument(origin + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": " + e.msg);
  }
  return c;
}

Result<AgentConfig> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read config file " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config(buf.str(), path);
}

std::vector<std::string> validate(const AgentConfig& c) {
  std::vector<std::string> problems;
  if (c.interval_ms < 10) problems.push_back("interval " + format_duration(c.interval_ms) + " is below the 10ms minimum");
  if (c.history_ms < c.interval_ms) problems.push_back("history is shorter than one interval");
  if (c.history_ms / std::max<int64_t>(c.interval_ms, 1) > 10'000'000) {
    problems.push_back("history/interval keeps more than 10 million records per series; shorten history");
  }
  for (const auto& s : c.sources) {
    if (!find_source(s)) {
      std::string known;
      for (const auto& e : source_entries()) known += (known.empty() ? "" : ", ") + std::string(e.name);
      problems.push_back("unknown source \"" + s + "\" (known: " + known + ")");
    }
  }
  return problems;
}

std::string to_yaml(const AgentConfig& c) {
  std::ostringstream o;
  o << "listen: " << c.listen << "\ninterval: " << format_duration(c.interval_ms)
    << "\nhistory: " << format_duration(c.history_ms) << "\nsources: [";
  for (size_t i = 0; i < c.sources.size(); ++i) o << (i ? ", " : "") << c.sources[i];
  o << "]\ndcgm_names: " << (c.dcgm_names ? "true" : "false") << "\nsource:\n  sim: {scenario: " << c.source.sim.scenario
    << ", seed: " << c.source.sim.seed << ", speed: " << c.source.sim.speed << "}\n  host: {proc_root: "
    << c.source.host.proc_root << ", sys_root: " << c.source.host.sys_root << "}\n  nvml: {library: "
    << c.source.nvml.library << "}\n";
  if (!c.remote_write.url.empty()) o << "remote_write: {url: " << c.remote_write.url << "}\n";
  return o.str();
}

}  // namespace gpulens::cli
