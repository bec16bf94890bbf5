// Labels: sorted name/value pairs, rendered to exposition text on demand.
#include "model/labels.h"

#include <algorithm>
#include <functional>

namespace gpulens {
namespace {

// First label whose name is not less than `name`.
std::vector<Label>::const_iterator labels_lower_bound(const std::vector<Label>& v, std::string_view name) {
  return std::lower_bound(v.begin(), v.end(), name,
                          [](const Label& l, std::string_view n) { return std::string_view(l.name) < n; });
}

}  // namespace

void append_escaped(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

Labels::Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
  labels_.reserve(pairs.size());
  for (const auto& [name, value] : pairs) set(name, value);
}

void Labels::set(std::string_view name, std::string_view value) {
  auto it = labels_lower_bound(labels_, name);
  const auto i = static_cast<size_t>(it - labels_.begin());
  if (it != labels_.end() && it->name == name) {
    labels_[i].value.assign(value);
    return;
  }
  labels_.insert(labels_.begin() + static_cast<std::ptrdiff_t>(i), Label{std::string(name), std::string(value)});
}

bool Labels::erase(std::string_view name) {
  auto it = labels_lower_bound(labels_, name);
  if (it == labels_.end() || it->name != name) return false;
  labels_.erase(it);
  return true;
}

void Labels::merge(const Labels& more) {
  for (const Label& l : more) set(l.name, l.value);
}

const Label* Labels::find(std::string_view name) const {
  auto it = labels_lower_bound(labels_, name);
  return it != labels_.end() && it->name == name ? &*it : nullptr;
}

std::string_view Labels::get(std::string_view name) const {
  const Label* l = find(name);
  return l != nullptr ? std::string_view(l->value) : std::string_view();
}

size_t Labels::hash() const {
  size_t h = labels_.size();
  const std::hash<std::string_view> hs;
  for (const Label& l : labels_) {
    // boost::hash_combine's mixing; names and values hashed apart so that
    // {a="bc"} and {ab="c"} differ.
    h ^= hs(l.name) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= hs(l.value) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  }
  return h;
}

void Labels::render(std::string& out) const {
  bool first = true;
  for (const Label& l : labels_) {
    if (!first) out += ',';
    first = false;
    out += l.name;
    out += "=\"";
    append_escaped(out, l.value);
    out += '"';
  }
}

std::string Labels::render() const {
  std::string out;
  render(out);
  return out;
}

}  // namespace gpulens
