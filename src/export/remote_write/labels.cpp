// Label sets for remote_write (see labels.h).
#include "export/remote_write/labels.h"

#include <algorithm>

namespace gpulens {

Result<prompb::LabelPairs> remote_labels(const SeriesRegistry& registry, uint32_t slot,
                                         std::span<const std::pair<std::string, std::string>> external) {
  const Series& s = registry.series(slot);
  const FieldDef& def = field(s.field);
  prompb::LabelPairs labels;
  for (const Label& l : registry.all_labels(slot)) labels.emplace_back(l.name, l.value);
  std::string name(def.name);
  name += histogram_suffix(s.part);
  labels.emplace_back("__name__", std::move(name));
  for (const auto& [k, v] : external) {
    bool taken = std::any_of(labels.begin(), labels.end(), [&](const auto& l) { return l.first == k; });
    if (!taken) labels.emplace_back(k, v);
  }
  std::erase_if(labels, [](const auto& l) { return l.second.empty(); });
  std::sort(labels.begin(), labels.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  auto dup = std::adjacent_find(labels.begin(), labels.end(),
                                [](const auto& a, const auto& b) { return a.first == b.first; });
  if (dup != labels.end()) return invalid_argument("label " + dup->first + " repeated in series " + std::string(def.name));
  return labels;
}

}  // namespace gpulens
