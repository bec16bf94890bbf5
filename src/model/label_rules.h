// The one rule every label and value that enters the agent from outside
// (a push, an OTLP export, a scraped page, the configuration) is checked
// against, so that what the agent exports is always something a Prometheus
// accepts, whatever a pusher or a target sent.
//
// A label is valid when its name follows the Prometheus grammar
// [a-zA-Z_][a-zA-Z0-9_]*, is not reserved (empty, starting with "__" such as
// __name__, "le" on a histogram, "quantile" on a summary), its value is
// valid UTF-8 (no overlong forms, no surrogates), and both fit their length
// limits; a label set is valid when every label is, no name appears twice
// and it has at most max_labels labels. A value is valid for its type when it
// is a number (not NaN, which the caller treats as "absent"), finite, and for
// a counter not negative.
//
//   LabelLimits lim;                       // 24 labels, 256-byte names and values
//   std::string why = check_label("pod", "trainer-0", lim);   // "" : valid
//   why = check_labels(labels, lim, LabelKind::kGauge);      // "label \"__name__\": reserved name"
//   why = check_value(-1, LabelKind::kCounter);              // "counter value -1 is negative"
//
// Every problem is one short English phrase that names the label (its name
// cut to 64 bytes and with bytes that are not printable ASCII written \xNN),
// ready for a 400 answer or a log line; reason() gives the short word for the
// gpulens_series_dropped_total{reason} counter.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpulens {

struct LabelLimits {
  size_t max_labels = 24;         // labels per series
  size_t max_name_bytes = 256;    // of one label name
  size_t max_value_bytes = 256;   // of one label value
};

// What a series is, for the names reserved by its type.
enum class LabelKind { kGauge, kCounter, kHistogram, kSummary, kUntyped };

// Why a label set or value was refused.
enum class LabelProblem { kNone, kName, kReserved, kUtf8, kLength, kCount, kDuplicate, kValue };

struct LabelCheck {
  LabelProblem problem = LabelProblem::kNone;
  std::string message;  // "" when valid
  explicit operator bool() const { return problem == LabelProblem::kNone; }
};

bool valid_utf8(std::string_view s);
// The Prometheus label name grammar, without the reserved names.
bool valid_label_name(std::string_view name);
// The Prometheus metric name grammar [a-zA-Z_:][a-zA-Z0-9_:]*.
bool valid_metric_name(std::string_view name);

LabelCheck check_label(std::string_view name, std::string_view value, const LabelLimits& limits,
                       LabelKind kind = LabelKind::kUntyped);
LabelCheck check_labels(const std::vector<std::pair<std::string, std::string>>& labels, const LabelLimits& limits,
                        LabelKind kind = LabelKind::kUntyped);
// The same for labels a parser points into (a scraped page).
LabelCheck check_labels(std::span<const std::pair<std::string_view, std::string_view>> labels,
                        const LabelLimits& limits, LabelKind kind = LabelKind::kUntyped);
LabelCheck check_value(double value, LabelKind kind);

// The counter reason of a problem: "label_name", "label_reserved",
// "label_utf8", "label_length", "label_count", "label_duplicate",
// "invalid_value"; "" for kNone.
std::string_view reason(LabelProblem p);

// `s` cut to `max` bytes with every byte outside printable ASCII (and '"',
// '\\') written \xNN: safe to quote in an error message or a log line.
std::string printable(std::string_view s, size_t max = 64);

}  // namespace gpulens
