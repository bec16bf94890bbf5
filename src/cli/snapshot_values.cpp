// The values of `gpulens snapshot`, from the local agent or from its JSON;
// see snapshot_values.h.
#include "cli/snapshot_values.h"

#include <simdjson.h>

#include <cmath>
#include <mutex>

#include "model/catalog.h"

namespace gpulens::cli {
SnapshotValues snapshot_values(Agent& agent) {
  SnapshotValues out;
  SeriesRegistry& registry = agent.registry();
  LiveStore& live = agent.live();
  out.host = registry.hostname();  // takes the registry lock itself
  out.simulated = agent.simulated();
  std::scoped_lock lock(registry.mutex(), live.mutex());
  const int gpus = registry.gpu_count();
  std::vector<SnapshotSeries> series_of(gpus + 1);
  for_each_current(registry, live, [&](const Series& series, const FieldDef& f, double v, int entity) {
    if (!std::isfinite(v)) return;  // null in the JSON
    if (v == 0) v = 0;              // no -0
    series_of[entity].push_back({.name = std::string(f.name), .labels = series.extra, .part = series.part, .value = v});
  });
  out.time = std::to_string(wall_ms() / 1000);
  HostVersions versions = host_versions(registry);
  out.driver = std::move(versions.driver);
  out.cuda = std::move(versions.cuda);
  for (const auto& s : live.sources()) {
    if (s.name != "gpulens") out.sources.push_back(s.name);
  }
  for (int g = 0; g < gpus; ++g) {
    const GpuIdentity* id = registry.gpu(g);
    out.gpus.push_back({.index = std::to_string(g), .uuid = id ? id->uuid : "", .name = id ? id->name : "",
                        .series = std::move(series_of[g])});
  }
  out.node = std::move(series_of[gpus]);
  return out;
}

Result<SnapshotValues> parse_snapshot_values(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc)) return invalid_argument("not JSON");
  SnapshotValues out;
  std::string_view sv;
  if (!doc["time"].get_string().get(sv)) out.time = sv;
  if (!doc["host"]["name"].get_string().get(sv)) out.host = sv;
  if (!doc["host"]["driver"].get_string().get(sv)) out.driver = sv;
  if (!doc["host"]["cuda"].get_string().get(sv)) out.cuda = sv;
  if (doc["simulated"].get_bool().get(out.simulated)) out.simulated = false;
  simdjson::dom::array srcs;
  if (!doc["sources"].get_array().get(srcs)) {
    for (auto src : srcs) {
      if (!src["name"].get_string().get(sv) && sv != "gpulens") out.sources.emplace_back(sv);
    }
  }
  simdjson::dom::array arr;
  if (doc["gpus"].get_array().get(arr)) {
    out.has_gpus = false;
  } else {
    for (auto g : arr) {
      SnapshotGpu gpu;
      if (!g["gpu"].get_string().get(sv)) gpu.index = sv;
      if (!g["uuid"].get_string().get(sv)) gpu.uuid = sv;
      if (!g["name"].get_string().get(sv)) gpu.name = sv;
      gpu.series = top::entity_series(g);
      out.gpus.push_back(std::move(gpu));
    }
  }
  simdjson::dom::element node;
  if (!doc["node"].get(node)) out.node = top::entity_series(node);
  return out;
}

}  // namespace gpulens::cli
