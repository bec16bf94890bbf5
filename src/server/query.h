// Query strings of the agent's API routes: split, percent-decoded, and
// checked against the parameters a route takes, so that a misspelt
// parameter is refused (400, naming it) instead of silently ignored.
//
//   auto q = parse_query("range=5m&gpu=3", {"range", "gpu"});
//   if (!q) { res.status = 400; res.body = q.status().message(); }   // "unknown parameter \"rnage\" ..."
//   std::string_view r = q->get("range");                           // "" when absent
//
// Thread-safety: plain values.
#pragma once

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>

#include "util/status.h"

namespace gpulens {

struct Query {
  std::map<std::string, std::string, std::less<>> values;
  bool has(std::string_view name) const { return values.count(name) > 0; }
  std::string_view get(std::string_view name) const {
    auto it = values.find(name);
    return it == values.end() ? std::string_view{} : std::string_view(it->second);
  }
};

// Parses `query` (the part after '?'). A parameter not in `allowed`, or one
// given twice, is an error naming it and the parameters the route takes.
Result<Query> parse_query(std::string_view query, std::initializer_list<std::string_view> allowed);

}  // namespace gpulens
