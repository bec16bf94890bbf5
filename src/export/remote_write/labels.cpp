// Label sets for remote_write (see labels.h).
#include "export/remote_write/labels.h"

#include <algorithm>

namespace gpulens {

Status parse_label_text(std::string_view text, prompb::LabelPairs& out, std::string* bare) {
  size_t i = 0;
  while (i < text.size()) {
    size_t eq = text.find_first_of("=,", i);
    if (eq == std::string_view::npos || text[eq] == ',') {  // bare word
      size_t end = std::min(eq, text.size());
      if (bare) *bare = std::string(text.substr(i, end - i));
      i = end + 1;
      continue;
    }
    std::string name(text.substr(i, eq - i));
    if (name.empty()) return invalid_argument("empty label name in \"" + std::string(text) + "\"");
    if (eq + 1 >= text.size() || text[eq + 1] != '"') {
      return invalid_argument("label " + name + " has no quoted value in \"" + std::string(text) + "\"");
    }
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value.push_back(text[j] == 'n' ? '\n' : text[j]);
      } else {
        value.push_back(text[j]);
      }
    }
    if (j >= text.size()) return invalid_argument("unterminated value of label " + name);
    out.emplace_back(std::move(name), std::move(value));
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return Status::ok();
}

Result<prompb::LabelPairs> remote_labels(const Series& s,
                                         std::span<const std::pair<std::string, std::string>> external) {
  const FieldDef& def = field(s.field);
  prompb::LabelPairs labels;
  std::string bare;
  if (Status st = parse_label_text(s.labels, labels, &bare); !st.is_ok()) return st;

  std::string name(def.name);
  if (def.type == MetricType::kHistogram) {
    if (bare == "sum" || bare == "count") {
      name += "_" + bare;
    } else {
      name += "_bucket";
    }
  }
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
