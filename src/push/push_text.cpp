// Prometheus text format 0.0.4 bodies, as the Pushgateway reads them: the
// grammar is expfmt/text.h's; what a push may not carry (timestamps, CR,
// reserved names, a second TYPE) and the messages are the push route's.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "expfmt/text.h"
#include "push/push_body.h"

namespace gpulens::push {
namespace {

std::string push_label_problem(const expfmt::LabelError& e, const PushLimits& limits) {
  const std::string label(e.label);
  switch (e.problem) {
    case expfmt::LabelProblem::kNone: break;
    case expfmt::LabelProblem::kBadName: return "invalid label name starting with '" + std::string(1, e.found) + "'";
    case expfmt::LabelProblem::kNoEquals: return "expected '=' after label " + label;
    case expfmt::LabelProblem::kNotQuoted: return "label " + label + ": value must be quoted";
    case expfmt::LabelProblem::kBadEscape: return "label " + label + ": invalid escape \\" + std::string(1, e.found);
    case expfmt::LabelProblem::kUnterminatedValue: return "label " + label + ": unterminated value";
    case expfmt::LabelProblem::kNoSeparator: return "expected ',' or '}' in the label set";
    case expfmt::LabelProblem::kTooLong:
      return "label " + label + " longer than " + std::to_string(limits.max_label_length) + " bytes (push.max_label_length)";
    case expfmt::LabelProblem::kTooMany:
      return "more than " + std::to_string(limits.max_labels) + " labels (push.max_labels)";
    case expfmt::LabelProblem::kDuplicate: return "label " + label + " appears twice";
  }
  return "unterminated label set";
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
  const expfmt::LabelLimits label_limits{limits.max_labels, limits.max_label_length, limits.max_label_length};
  expfmt::SampleLine line_parts;
  expfmt::OwnedLabels labels;
  while (!body.empty()) {
    ++line_no;
    const size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body.remove_prefix(nl + 1);
    auto fail = [&](const std::string& problem) -> Status {
      return invalid_argument("line " + std::to_string(line_no) + ": " + problem);
    };
    if (line.find('\r') != std::string_view::npos) return fail("carriage return in line (lines end with \\n only)");
    std::string_view s = line;
    while (!s.empty() && expfmt::blank(s.front())) s.remove_prefix(1);
    if (s.empty()) continue;
    if (s.front() == '#') {
      const expfmt::Comment c = expfmt::parse_comment(s);
      if (c.kind != expfmt::Comment::kHelp && c.kind != expfmt::Comment::kType) continue;  // a free comment
      const std::string kw = c.kind == expfmt::Comment::kHelp ? "HELP" : "TYPE";
      if (c.name.empty() || !expfmt::metric_name_start(c.name[0])) return fail("# " + kw + " without a valid metric name");
      for (char ch : c.name) {
        if (!expfmt::metric_name_char(ch)) return fail("invalid metric name \"" + std::string(c.name) + "\"");
      }
      std::string n(c.name);
      if (c.kind == expfmt::Comment::kType) {
        const std::string_view type = c.text.substr(0, std::min(c.text.find_first_of(" \t"), c.text.size()));
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
    // Sample: name [{labels}] value; its label set is judged before its value.
    const expfmt::LineProblem problem = expfmt::split_sample(s, line_parts);
    if (problem == expfmt::LineProblem::kNoName) {
      return fail("expected a metric name, found '" + std::string(1, s[0]) + "'");
    }
    if (problem == expfmt::LineProblem::kUnterminatedLabelSet) {
      // No closing brace: the labels up to the line's end say what is wrong.
      const expfmt::LabelError e = expfmt::parse_labels(s.substr(s.find('{') + 1), label_limits, labels);
      return fail(e ? push_label_problem(e, limits) : "unterminated label set");
    }
    if (const expfmt::LabelError e = expfmt::parse_labels(line_parts.labels, label_limits, labels); e) {
      return fail(push_label_problem(e, limits));
    }
    PushedSample sample;
    sample.where = "line " + std::to_string(line_no);
    sample.name = std::string(line_parts.name);
    switch (problem) {
      case expfmt::LineProblem::kNone: break;
      case expfmt::LineProblem::kNoValue: return fail("sample " + sample.name + " has no value");
      case expfmt::LineProblem::kNoSpace: return fail("sample " + sample.name + ": expected a space before the value");
      case expfmt::LineProblem::kBadValue:
        return fail("sample " + sample.name + ": invalid value \"" + std::string(line_parts.value_text) + "\"");
      case expfmt::LineProblem::kTrailingText:
      case expfmt::LineProblem::kNoName:
      case expfmt::LineProblem::kUnterminatedLabelSet:
        return fail("sample " + sample.name + " carries a timestamp; pushed samples must not (the agent stamps them)");
    }
    if (!line_parts.timestamp_text.empty() || !line_parts.exemplar.empty()) {
      return fail("sample " + sample.name + " carries a timestamp; pushed samples must not (the agent stamps them)");
    }
    sample.value = line_parts.value;
    for (const auto& [n, v] : labels) {
      if (n.starts_with("__")) return fail("label name " + n + " is reserved");
    }
    sample.labels = std::move(labels);
    labels.clear();
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
