// The text exposition formats, one line at a time: Prometheus text 0.0.4 and
// OpenMetrics 1.0 text. The grammar every reader of exposition text shares —
// the scrape source, the push route, `diagnose --replay` and `record --url` —
// so that a name, a label set, a value and a timestamp mean one thing here.
//
// A line is split without copying (split_sample: views into the line); the
// label set is parsed apart (parse_labels), so a reader that has seen the
// series before can skip it. Comments are classified by parse_comment.
// Problems are values (an enum, plus the label they concern); each reader
// words them for its own users, with its own line numbers.
//
// Grammar (both formats):
//   sample  = [blanks] name [ "{" labels "}" ] blanks value [blanks timestamp] [blanks "#" exemplar] [blanks]
//   labels  = [ label { "," label } [","] ]   label = lname [blanks] "=" [blanks] '"' escaped '"'
//   name    = [a-zA-Z_:][a-zA-Z0-9_:]*        lname = [a-zA-Z_][a-zA-Z0-9_]*
//   escaped: \\ \" \n only; blanks are spaces and tabs
//   value, timestamp: a decimal or exponent number, or [+-]Inf[inity] / NaN in any case
//
//   SampleLine s;
//   if (split_sample("up{job=\"a\"} 1 1700000000", s) == LineProblem::kNone) {
//     LabelError e = parse_labels(s.labels, {}, buffer);   // {job, a}
//   }
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulens::expfmt {

// A label as the readers hand it on: name and unescaped value.
using Label = std::pair<std::string_view, std::string_view>;
using LabelSpan = std::span<const Label>;
// Labels that own their text (parse_labels' output, reused between lines).
using OwnedLabels = std::vector<std::pair<std::string, std::string>>;

inline bool metric_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
inline bool metric_name_char(char c) { return metric_name_start(c) || (c >= '0' && c <= '9'); }
inline bool label_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool label_name_char(char c) { return label_name_start(c) || (c >= '0' && c <= '9'); }
inline bool blank(char c) { return c == ' ' || c == '\t'; }

// A value or timestamp as the formats write it (Go's ParseFloat's set:
// decimal, exponent, [+-]Inf, [+-]Infinity, NaN, in any case). False on
// anything else, an empty text included.
bool parse_float(std::string_view text, double& out);

// Latest timestamp a recording may hold: 9999-12-31T23:59:59.999Z.
inline constexpr int64_t kMaxTimestampMs = 253'402'300'799'999;

// A sample timestamp as written (seconds, OpenMetrics; or milliseconds, text
// 0.0.4, when above 1e11) in milliseconds; false when it is not finite or
// lies outside 0 .. kMaxTimestampMs.
bool timestamp_to_ms(double ts, int64_t& out_ms);

// One sample line, as views into it.
struct SampleLine {
  std::string_view name;            // up
  std::string_view series;          // up{job="a"}: name and label set as written
  std::string_view labels;          // job="a": between the braces (empty when none)
  std::string_view value_text;      // 1
  double value = 0;
  std::string_view timestamp_text;  // 1700000000, empty when none
  std::string_view exemplar;        // after "#", empty when none
};

enum class LineProblem : uint8_t {
  kNone,
  kNoName,                // the line does not start with a metric name
  kUnterminatedLabelSet,  // "{" without its "}" (parse_labels on the rest says why)
  kNoSpace,               // name or label set not followed by a blank
  kNoValue,               // nothing after the name
  kBadValue,              // value_text is no number
  kTrailingText,          // text after the timestamp that is no exemplar (timestamp_text is set)
};

// Splits a sample line (no '\n'; a '\r' is the caller's to refuse or strip).
LineProblem split_sample(std::string_view line, SampleLine& out);

// Bounds on one label set; a line that breaks one is refused, not cut.
struct LabelLimits {
  size_t max_labels = std::numeric_limits<size_t>::max();
  size_t max_name_bytes = std::numeric_limits<size_t>::max();
  size_t max_value_bytes = std::numeric_limits<size_t>::max();
};

enum class LabelProblem : uint8_t {
  kNone,
  kBadName,            // a label name does not start with [a-zA-Z_] (`found` is the byte)
  kNoEquals,           // no "=" after the name
  kNotQuoted,          // the value does not start with '"'
  kBadEscape,          // "\" followed by other than \ " n (`found` is the byte)
  kUnterminatedValue,  // no closing '"'
  kNoSeparator,        // after a value, neither "," nor the end of the set
  kTooLong,            // a name or value over LabelLimits
  kTooMany,            // more labels than LabelLimits::max_labels
  kDuplicate,          // a name twice
};

struct LabelError {
  LabelProblem problem = LabelProblem::kNone;
  std::string_view label;  // the label concerned (empty for kBadName), cut to 64 bytes for kTooLong
  char found = 0;
  explicit operator bool() const { return problem != LabelProblem::kNone; }
};

// Parses the text of a label set (between the braces; also the rest of a
// line whose set has no "}", to learn why) into `out`, which is cleared
// first, values unescaped, in the order written.
LabelError parse_labels(std::string_view text, const LabelLimits& limits, OwnedLabels& out);

// A comment line (starts with '#').
struct Comment {
  enum Kind : uint8_t { kOther, kHelp, kType, kUnit, kEof } kind = kOther;
  std::string_view name;  // HELP / TYPE / UNIT: the metric family (may be empty or invalid: the caller checks)
  std::string_view text;  // HELP: the help text; TYPE: the type; UNIT: the unit
};
Comment parse_comment(std::string_view line);

}  // namespace gpulens::expfmt
