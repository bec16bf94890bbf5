// Prometheus text format 0.0.4 bodies, as the Pushgateway reads them.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <unordered_map>

#include "push/push_body.h"

namespace gpulens::push {
namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool label_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool label_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool blank(char c) { return c == ' ' || c == '\t'; }

std::string_view skip_blanks(std::string_view s) {
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view take_token(std::string_view& s) {
  s = skip_blanks(s);
  size_t n = 0;
  while (n < s.size() && !blank(s[n])) ++n;
  std::string_view t = s.substr(0, n);
  s.remove_prefix(n);
  return t;
}

// Go's ParseFloat accepts NaN, +Inf, -Inf (and Inf) in any case.
bool parse_value(std::string_view t, double& v) {
  if (t.empty()) return false;
  std::string_view u = t.front() == '+' || t.front() == '-' ? t.substr(1) : t;
  auto ieq = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
    }
    return true;
  };
  if (ieq(u, "inf") || ieq(u, "infinity")) {
    v = t.front() == '-' ? -INFINITY : INFINITY;
    return true;
  }
  if (ieq(u, "nan")) {
    v = NAN;
    return true;
  }
  const char* b = t.data() + (t.front() == '+' ? 1 : 0);
  auto [p, ec] = std::from_chars(b, t.data() + t.size(), v);
  return ec == std::errc() && p == t.data() + t.size();
}

}  // namespace

Result<std::vector<PushedSample>> parse_text_body(std::string_view body, const PushLimits& limits) {
  std::vector<PushedSample> out;
  if (body.empty()) return out;
  if (body.back() != '\n') {
    size_t lines = 1;
    for (char c : body) lines += c == '\n';
    return invalid_argument("line " + std::to_string(lines) + ": the last line does not end with \\n");
  }
  std::unordered_map<std::string, std::string> types;  // name -> TYPE
  std::set<std::string> seen_help, sampled;
  std::set<std::string> series_keys;
  size_t line_no = 0;
  std::string key;
  while (!body.empty()) {
    ++line_no;
    const size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body.remove_prefix(nl + 1);
    auto fail = [&](const std::string& problem) -> Status {
      return invalid_argument("line " + std::to_string(line_no) + ": " + problem);
    };
    if (line.find('\r') != std::string_view::npos) return fail("carriage return in line (lines end with \\n only)");
    std::string_view s = skip_blanks(line);
    if (s.empty()) continue;
    if (s.front() == '#') {
      s.remove_prefix(1);
      std::string_view kw = take_token(s);
      if (kw != "HELP" && kw != "TYPE") continue;  // a free comment
      std::string_view name = take_token(s);
      if (name.empty() || !name_start(name[0])) return fail("# " + std::string(kw) + " without a valid metric name");
      for (char c : name) {
        if (!name_char(c)) return fail("invalid metric name \"" + std::string(name) + "\"");
      }
      std::string n(name);
      if (kw == "TYPE") {
        std::string_view type = take_token(s);
        if (type != "counter" && type != "gauge" && type != "histogram" && type != "summary" && type != "untyped") {
          return fail("unknown metric type \"" + std::string(type) + "\" for " + n);
        }
        if (types.count(n)) return fail("second # TYPE line for " + n);
        if (sampled.count(n)) return fail("# TYPE for " + n + " after its first sample");
        types[n] = std::string(type);
      } else if (!seen_help.insert(n).second) {
        return fail("second # HELP line for " + n);
      }
      continue;
    }
    // Sample: name [{labels}] value [timestamp]
    size_t i = 0;
    if (!name_start(s[0])) return fail("expected a metric name, found '" + std::string(1, s[0]) + "'");
    while (i < s.size() && name_char(s[i])) ++i;
    PushedSample sample;
    sample.where = "line " + std::to_string(line_no);
    sample.name = std::string(s.substr(0, i));
    s.remove_prefix(i);
    s = skip_blanks(s);
    if (!s.empty() && s.front() == '{') {
      s.remove_prefix(1);
      for (;;) {
        s = skip_blanks(s);
        if (s.empty()) return fail("unterminated label set");
        if (s.front() == '}') {
          s.remove_prefix(1);
          break;
        }
        size_t j = 0;
        if (!label_start(s[0])) return fail("invalid label name starting with '" + std::string(1, s[0]) + "'");
        while (j < s.size() && label_char(s[j])) ++j;
        std::string lname(s.substr(0, j));
        s = skip_blanks(s.substr(j));
        if (s.empty() || s.front() != '=') return fail("expected '=' after label " + lname);
        s = skip_blanks(s.substr(1));
        if (s.empty() || s.front() != '"') return fail("label " + lname + ": value must be quoted");
        s.remove_prefix(1);
        std::string value;
        bool closed = false;
        while (!s.empty()) {
          char c = s.front();
          s.remove_prefix(1);
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\') {
            if (s.empty()) break;
            char e = s.front();
            s.remove_prefix(1);
            if (e == 'n') value += '\n';
            else if (e == '\\' || e == '"') value += e;
            else return fail("label " + lname + ": invalid escape \\" + std::string(1, e));
          } else {
            value += c;
          }
          if (value.size() > limits.max_label_length) break;
        }
        if (value.size() > limits.max_label_length || lname.size() > limits.max_label_length) {
          return fail("label " + lname.substr(0, 64) + " longer than " + std::to_string(limits.max_label_length) +
                      " bytes (push.max_label_length)");
        }
        if (!closed) return fail("label " + lname + ": unterminated value");
        if (lname.starts_with("__")) return fail("label name " + lname + " is reserved");
        for (const auto& [n, v] : sample.labels) {
          if (n == lname) return fail("label " + lname + " appears twice");
        }
        sample.labels.emplace_back(std::move(lname), std::move(value));
        if (sample.labels.size() > limits.max_labels) {
          return fail("more than " + std::to_string(limits.max_labels) + " labels (push.max_labels)");
        }
        s = skip_blanks(s);
        if (!s.empty() && s.front() == ',') s.remove_prefix(1);
        else if (s.empty() || s.front() != '}') return fail("expected ',' or '}' in the label set");
      }
    }
    std::string_view vt = take_token(s);
    if (vt.empty()) return fail("sample " + sample.name + " has no value");
    if (!parse_value(vt, sample.value)) return fail("sample " + sample.name + ": invalid value \"" + std::string(vt) + "\"");
    if (!take_token(s).empty()) {
      return fail("sample " + sample.name + " carries a timestamp; pushed samples must not (the agent stamps them)");
    }
    if (!skip_blanks(s).empty()) return fail("unexpected text after the value");
    // The family a sample belongs to, for its TYPE.
    auto family_type = [&](const std::string& n) -> std::string {
      if (auto it = types.find(n); it != types.end()) return it->second;
      for (std::string_view suffix : {"_bucket", "_sum", "_count"}) {
        if (n.size() > suffix.size() && n.ends_with(suffix)) {
          auto it = types.find(n.substr(0, n.size() - suffix.size()));
          if (it != types.end()) return it->second;
        }
      }
      return "untyped";
    };
    sample.type = family_type(sample.name);
    sampled.insert(sample.name);
    key = sample.name;
    auto sorted = sample.labels;
    std::sort(sorted.begin(), sorted.end());
    for (const auto& [n, v] : sorted) key += "\x1f" + n + "\x1e" + v;
    if (!series_keys.insert(key).second) return fail("duplicate series " + sample.name);
    out.push_back(std::move(sample));
    if (out.size() > limits.max_series_per_push) {
      return fail("more than " + std::to_string(limits.max_series_per_push) + " series in one push (push.max_series_per_push)");
    }
  }
  return out;
}

}  // namespace gpulens::push
