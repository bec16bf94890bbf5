// The exposition line grammar: numbers, sample lines, label sets, comments.
#include "expfmt/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace gpulens::expfmt {
namespace {

bool equals_lower(std::string_view text, std::string_view lower) {
  if (text.size() != lower.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower[i]) return false;
  }
  return true;
}

size_t skip_blanks_at(std::string_view s, size_t p) {
  while (p < s.size() && blank(s[p])) ++p;
  return p;
}

// The '}' closing a label set whose text starts at `p`, honouring quotes and
// escapes; npos when there is none.
size_t label_set_end(std::string_view line, size_t p) {
  while (p < line.size()) {
    const char c = line[p];
    if (c == '}') return p;
    if (c == '"') {
      ++p;
      while (p < line.size() && line[p] != '"') p += line[p] == '\\' ? 2 : 1;
      if (p >= line.size()) return std::string_view::npos;
    }
    ++p;
  }
  return std::string_view::npos;
}

}  // namespace

bool parse_float(std::string_view text, double& out) {
  if (text.empty()) return false;
  const bool negative = text.front() == '-';
  std::string_view body = text.front() == '+' || negative ? text.substr(1) : text;
  if (body.empty() || body.front() == '+' || body.front() == '-') return false;
  const char c = body.front();
  if (c == 'i' || c == 'I' || c == 'n' || c == 'N') {
    if (equals_lower(body, "inf") || equals_lower(body, "infinity")) {
      out = negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      return true;
    }
    if (equals_lower(body, "nan")) {
      out = std::numeric_limits<double>::quiet_NaN();
      return true;
    }
    return false;
  }
  const char* first = text.data() + (text.front() == '+' ? 1 : 0);
  const char* last = text.data() + text.size();
  auto [p, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && p == last;
}

bool timestamp_to_ms(double ts, int64_t& out_ms) {
  if (!std::isfinite(ts) || ts < 0) return false;
  const double ms = ts > 1e11 ? ts : ts * 1000.0;
  if (ms > static_cast<double>(kMaxTimestampMs)) return false;
  out_ms = ts > 1e11 ? static_cast<int64_t>(ms) : static_cast<int64_t>(std::llround(ms));
  return true;
}

LineProblem split_sample(std::string_view line, SampleLine& out) {
  size_t p = skip_blanks_at(line, 0);
  const size_t start = p;
  if (p >= line.size() || !metric_name_start(line[p])) return LineProblem::kNoName;
  ++p;
  while (p < line.size() && metric_name_char(line[p])) ++p;
  out.name = line.substr(start, p - start);
  out.labels = {};
  out.timestamp_text = {};
  out.exemplar = {};
  size_t key_end = p;
  if (p < line.size() && line[p] == '{') {
    const size_t close = label_set_end(line, p + 1);
    if (close == std::string_view::npos) return LineProblem::kUnterminatedLabelSet;
    out.labels = line.substr(p + 1, close - p - 1);
    key_end = close + 1;
  }
  out.series = line.substr(start, key_end - start);
  p = skip_blanks_at(line, key_end);
  if (p >= line.size()) return LineProblem::kNoValue;
  if (p == key_end) return LineProblem::kNoSpace;
  size_t e = p;
  while (e < line.size() && !blank(line[e])) ++e;
  out.value_text = line.substr(p, e - p);
  if (!parse_float(out.value_text, out.value)) return LineProblem::kBadValue;
  p = skip_blanks_at(line, e);
  if (p < line.size() && line[p] != '#') {
    e = p;
    while (e < line.size() && !blank(line[e])) ++e;
    out.timestamp_text = line.substr(p, e - p);
    p = skip_blanks_at(line, e);
  }
  if (p < line.size()) {
    if (line[p] != '#') return LineProblem::kTrailingText;
    out.exemplar = line.substr(p + 1);
  }
  return LineProblem::kNone;
}

namespace {

// Up to this many labels a new name is compared with each one before it;
// past it, every name is checked once at the end, sorted, so that a
// hostile line of 100,000 labels costs n log n, not n².
constexpr size_t kLinearDuplicateCheck = 32;

// A name given twice among `labels`, or "".
std::string_view duplicate_name(const OwnedLabels& labels) {
  if (labels.size() <= kLinearDuplicateCheck) return {};  // checked as they came
  std::vector<std::string_view> names;
  names.reserve(labels.size());
  for (const auto& [n, v] : labels) names.push_back(n);
  std::sort(names.begin(), names.end());
  const auto it = std::adjacent_find(names.begin(), names.end());
  return it == names.end() ? std::string_view() : *it;
}

}  // namespace

LabelError parse_labels(std::string_view text, const LabelLimits& limits, OwnedLabels& out) {
  out.clear();
  auto done = [&]() -> LabelError {
    if (const std::string_view d = duplicate_name(out); !d.empty()) return {LabelProblem::kDuplicate, d};
    return {};
  };
  size_t p = 0;
  while (true) {
    p = skip_blanks_at(text, p);
    if (p >= text.size()) return done();
    if (!label_name_start(text[p])) return {LabelProblem::kBadName, {}, text[p]};
    const size_t n0 = p;
    while (p < text.size() && label_name_char(text[p])) ++p;
    const std::string_view name = text.substr(n0, p - n0);
    if (name.size() > limits.max_name_bytes) return {LabelProblem::kTooLong, name.substr(0, 64)};
    p = skip_blanks_at(text, p);
    if (p >= text.size() || text[p] != '=') return {LabelProblem::kNoEquals, name};
    p = skip_blanks_at(text, p + 1);
    if (p >= text.size() || text[p] != '"') return {LabelProblem::kNotQuoted, name};
    ++p;
    std::string value;
    bool closed = false;
    while (p < text.size()) {
      // The run up to the next quote or backslash in one piece.
      size_t q = p;
      while (q < text.size() && text[q] != '"' && text[q] != '\\') ++q;
      value.append(text.data() + p, q - p);
      p = q;
      if (value.size() > limits.max_value_bytes) return {LabelProblem::kTooLong, name.substr(0, 64)};
      if (p >= text.size()) break;
      if (text[p] == '"') {
        closed = true;
        ++p;
        break;
      }
      if (p + 1 >= text.size()) {
        ++p;
        break;
      }
      const char esc = text[p + 1];
      if (esc == 'n') value.push_back('\n');
      else if (esc == '\\' || esc == '"') value.push_back(esc);
      else return {LabelProblem::kBadEscape, name, esc};
      p += 2;
    }
    if (value.size() > limits.max_value_bytes) return {LabelProblem::kTooLong, name.substr(0, 64)};
    if (!closed) return {LabelProblem::kUnterminatedValue, name};
    if (out.size() < kLinearDuplicateCheck) {
      for (const auto& [n, v] : out) {
        if (n == name) return {LabelProblem::kDuplicate, name};
      }
    }
    if (out.size() >= limits.max_labels) return {LabelProblem::kTooMany, name};
    out.emplace_back(std::string(name), std::move(value));
    p = skip_blanks_at(text, p);
    if (p >= text.size()) return done();
    if (text[p] != ',') return {LabelProblem::kNoSeparator, name, text[p]};
    ++p;
  }
}

Comment parse_comment(std::string_view line) {
  Comment c;
  if (line == "# EOF") {
    c.kind = Comment::kEof;
    return c;
  }
  size_t p = skip_blanks_at(line, 1);
  size_t e = p;
  while (e < line.size() && !blank(line[e])) ++e;
  const std::string_view keyword = line.substr(p, e - p);
  if (keyword == "HELP") c.kind = Comment::kHelp;
  else if (keyword == "TYPE") c.kind = Comment::kType;
  else if (keyword == "UNIT") c.kind = Comment::kUnit;
  else return c;
  p = skip_blanks_at(line, e);
  e = p;
  while (e < line.size() && !blank(line[e])) ++e;
  c.name = line.substr(p, e - p);
  p = skip_blanks_at(line, e);
  c.text = line.substr(p);
  if (c.kind != Comment::kHelp) {
    while (!c.text.empty() && blank(c.text.back())) c.text.remove_suffix(1);
  }
  return c;
}

}  // namespace gpulens::expfmt
