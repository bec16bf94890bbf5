// Labels: the extra labels of a series as data.
//
// A small vector of name/value pairs kept sorted by name (byte order, as
// Prometheus' client libraries and remote_write sort them), values stored
// unescaped. Everything in the agent reads a series' labels from here; the
// exposition text (`a="x",b="y"`, values escaped \\ \" \n) is written once,
// by render(), into the registry's per-series cache that /metrics copies.
//
//   Labels l{{"link", "3"}};                  // in-process: names are ours
//   l.set("mode", "user");                     // inserts in name order
//   l.get("link");                             // "3"; "" when absent
//   std::string text = l.render();             // link="3",mode="user"
//
// Names set here are not checked: labels that come from outside (a push
// body, a scraped page) pass check_labels() (model/label_rules.h: the name
// grammar [a-zA-Z_][a-zA-Z0-9_]*, UTF-8 values, lengths, no name twice) at
// the boundary, in push_store and the scrape source, before any of them is
// set here. set() on a name already present replaces its value: one name,
// one value, always.
//
// Thread-safety: a value type; const use from several threads is safe.
#pragma once

#include <compare>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulens {

struct Label {
  std::string name;
  std::string value;  // unescaped
  friend bool operator==(const Label&, const Label&) = default;
  friend std::strong_ordering operator<=>(const Label&, const Label&) = default;
};

// Appends `value` escaped for a label value (\\, \", \n): also a PromQL
// string's and a YAML double-quoted scalar's escaping, used for both.
void append_escaped(std::string& out, std::string_view value);

class Labels {
 public:
  Labels() = default;
  // In-process label sets; a later pair with the same name replaces an earlier one.
  Labels(std::initializer_list<std::pair<std::string_view, std::string_view>> pairs);

  // Sets `name` to `value`, inserting it in name order or replacing its value.
  void set(std::string_view name, std::string_view value);
  // Removes `name`; false when it was absent.
  bool erase(std::string_view name);
  // Sets every label of `more` (its values win).
  void merge(const Labels& more);

  // The label named `name`, or nullptr.
  const Label* find(std::string_view name) const;
  // The value of `name`; "" when absent (a Prometheus label with an empty
  // value is the same as no label).
  std::string_view get(std::string_view name) const;
  bool has(std::string_view name) const { return find(name) != nullptr; }

  bool empty() const { return labels_.empty(); }
  size_t size() const { return labels_.size(); }
  std::vector<Label>::const_iterator begin() const { return labels_.begin(); }
  std::vector<Label>::const_iterator end() const { return labels_.end(); }
  const Label& operator[](size_t i) const { return labels_[i]; }

  friend bool operator==(const Labels&, const Labels&) = default;
  friend std::strong_ordering operator<=>(const Labels& a, const Labels& b) { return a.labels_ <=> b.labels_; }
  // A hash of the names and values, for the registry's index.
  size_t hash() const;

  // Appends `a="x",b="y"` (no braces; values escaped \\ \" \n); nothing when empty.
  void render(std::string& out) const;
  std::string render() const;

 private:
  std::vector<Label> labels_;  // sorted by name, names unique
};

}  // namespace gpulens
