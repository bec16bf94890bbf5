// Strict YAML reading for config and scenario files: unknown keys are
// errors, values are range-checked, and every error names file:line:column.
//
//   yaml::Reader r("gpulens.yaml");
//   r.map(root, "config", {{"interval", [&](const YAML::Node& v) { ms = r.duration(v, "interval"); }}});
//
// Errors are thrown as yaml::ParseError inside a loader and must be caught at
// its boundary (see parse_scenario) and turned into a Status.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "util/duration.h"

namespace gpulens::yaml {

// Thrown only inside loaders, turned into a Status at their boundary.
struct ParseError {
  std::string message;
};

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    const auto m = n.Mark();
    throw ParseError{origin_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " +
                     what};
  }

  // Calls on(key, value) for each entry; unknown keys are errors.
  void map(const YAML::Node& n, const std::string& path,
           const std::map<std::string, std::function<void(const YAML::Node&)>>& on) const {
    if (!n.IsMap()) fail(n, path + ": expected a mapping");
    for (const auto& kv : n) {
      const std::string key = kv.first.as<std::string>();
      auto it = on.find(key);
      if (it == on.end()) {
        std::string known;
        for (const auto& [k, _] : on) known += (known.empty() ? "" : ", ") + k;
        fail(kv.first, path + ": unknown key \"" + key + "\" (known: " + known + ")");
      }
      it->second(kv.second);
    }
  }

  double ratio(const YAML::Node& n, const std::string& what) const { return number(n, what, 0, 1); }

  // A finite number in lo..hi. .nan compares false with both bounds and
  // .inf passes a range open at that end, so neither is a number here,
  // whatever the range.
  double number(const YAML::Node& n, const std::string& what, double lo, double hi) const {
    double v = 0;
    if (!n.IsScalar() || !YAML::convert<double>::decode(n, v)) fail(n, what + ": expected a number");
    if (!std::isfinite(v)) fail(n, what + ": \"" + n.Scalar() + "\" is not a finite number");
    if (!(v >= lo && v <= hi)) {
      std::ostringstream o;
      o << what << ": " << v << " is out of range [" << lo << ", " << hi << "]";
      fail(n, o.str());
    }
    return v;
  }

  int integer(const YAML::Node& n, const std::string& what, int lo, int hi) const {
    const double v = number(n, what, lo, hi);
    if (v != static_cast<int>(v)) fail(n, what + ": expected a whole number");
    return static_cast<int>(v);
  }

  std::string text(const YAML::Node& n, const std::string& what) const {
    if (!n.IsScalar()) fail(n, what + ": expected text");
    return n.Scalar();
  }

  std::string choice(const YAML::Node& n, const std::string& what, std::initializer_list<const char*> options) const {
    std::string v = text(n, what);
    std::string all;
    for (const char* o : options) {
      if (v == o) return v;
      all += (all.empty() ? "" : ", ") + std::string(o);
    }
    fail(n, what + ": \"" + v + "\" is not one of " + all);
  }

  int64_t duration(const YAML::Node& n, const std::string& what) const {
    auto d = parse_duration_ms(text(n, what));
    if (!d) fail(n, what + ": " + d.status().message());
    return *d;
  }

  std::vector<std::string> strings(const YAML::Node& n, const std::string& what) const {
    std::vector<std::string> out;
    if (n.IsScalar()) {  // "a,b" or "a"
      std::stringstream ss(n.Scalar());
      for (std::string item; std::getline(ss, item, ',');) {
        if (!item.empty()) out.push_back(item);
      }
      return out;
    }
    if (!n.IsSequence()) fail(n, what + ": expected a list");
    for (const auto& item : n) out.push_back(text(item, what + "[]"));
    return out;
  }

  // `true` or `false`, as the agent's configuration reads them (cli/config.cpp,
  // docs/config.md): yaml-cpp's YAML 1.1 spellings (yes, no, on, off, y, n,
  // True) are errors, so one file never means two things to two readers.
  bool boolean(const YAML::Node& n, const std::string& what) const {
    if (n.IsScalar() && n.Scalar() == "true") return true;
    if (n.IsScalar() && n.Scalar() == "false") return false;
    fail(n, what + ": " + (n.IsScalar() ? "\"" + n.Scalar() + "\": " : std::string()) + "expected true or false");
  }

 private:
  std::string origin_;
};

}  // namespace gpulens::yaml
