// Label and value rules for everything that enters the agent from outside.
#include "model/label_rules.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <set>

namespace gpulens {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

LabelCheck bad(LabelProblem p, std::string message) { return {p, std::move(message)}; }

std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

bool valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      cp = c & 0x07;
    } else {
      return false;  // a continuation byte first, an overlong 2-byte lead (c0, c1), or beyond U+10FFFF
    }
    if (n - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3f);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff))) return false;  // overlong
    if (cp >= 0xd800 && cp <= 0xdfff) return false;                                                // surrogate
    i += len;
  }
  return true;
}

bool valid_label_name(std::string_view name) {
  if (name.empty() || !name_start(name[0])) return false;
  for (char c : name) {
    if (!name_char(c)) return false;
  }
  return true;
}

bool valid_metric_name(std::string_view name) {
  if (name.empty() || !(name_start(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!name_char(c) && c != ':') return false;
  }
  return true;
}

std::string printable(std::string_view s, size_t max) {
  std::string out;
  const size_t n = std::min(s.size(), max);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

LabelCheck check_label(std::string_view name, std::string_view value, const LabelLimits& limits, LabelKind kind) {
  const std::string shown = "label \"" + printable(name) + "\"";
  if (name.empty()) return bad(LabelProblem::kReserved, "a label has an empty name");
  if (name.size() > limits.max_name_bytes) {
    return bad(LabelProblem::kLength, shown + ": name longer than " + std::to_string(limits.max_name_bytes) + " bytes");
  }
  if (!valid_label_name(name)) {
    return bad(LabelProblem::kName, shown + ": not a label name ([a-zA-Z_][a-zA-Z0-9_]*)");
  }
  if (name.starts_with("__")) return bad(LabelProblem::kReserved, shown + ": names starting with __ are reserved");
  if ((name == "le" && kind == LabelKind::kHistogram) || (name == "quantile" && kind == LabelKind::kSummary)) {
    return bad(LabelProblem::kReserved, shown + ": reserved on a " +
                                            (kind == LabelKind::kHistogram ? "histogram" : "summary"));
  }
  if (value.size() > limits.max_value_bytes) {
    return bad(LabelProblem::kLength, shown + ": value of " + std::to_string(value.size()) + " bytes, longer than " +
                                          std::to_string(limits.max_value_bytes));
  }
  if (!valid_utf8(value)) return bad(LabelProblem::kUtf8, shown + ": value is not valid UTF-8");
  return {};
}

namespace {

template <class LabelSeq>
LabelCheck check_all(const LabelSeq& labels, const LabelLimits& limits, LabelKind kind) {
  if (labels.size() > limits.max_labels) {
    return bad(LabelProblem::kCount, std::to_string(labels.size()) + " labels, more than " +
                                         std::to_string(limits.max_labels));
  }
  for (const auto& [n, v] : labels) {
    if (LabelCheck c = check_label(n, v, limits, kind); !c) return c;
  }
  if (labels.size() > 1) {
    std::set<std::string_view> names;
    for (const auto& l : labels) {
      if (!names.insert(l.first).second) {
        return bad(LabelProblem::kDuplicate, "label \"" + printable(l.first) + "\" appears twice");
      }
    }
  }
  return {};
}

}  // namespace

LabelCheck check_labels(const std::vector<std::pair<std::string, std::string>>& labels, const LabelLimits& limits,
                        LabelKind kind) {
  return check_all(labels, limits, kind);
}

LabelCheck check_labels(std::span<const std::pair<std::string_view, std::string_view>> labels,
                        const LabelLimits& limits, LabelKind kind) {
  return check_all(labels, limits, kind);
}

LabelCheck check_value(double value, LabelKind kind) {
  if (std::isnan(value)) return {};  // absent, not invalid
  const bool counter = kind == LabelKind::kCounter;
  if (std::isinf(value)) {
    return bad(LabelProblem::kValue, std::string(counter ? "counter" : "gauge") + " value " + number(value) +
                                         " is not finite");
  }
  if (counter && value < 0) return bad(LabelProblem::kValue, "counter value " + number(value) + " is negative");
  return {};
}

std::string_view reason(LabelProblem p) {
  switch (p) {
    case LabelProblem::kNone: return "";
    case LabelProblem::kName: return "label_name";
    case LabelProblem::kReserved: return "label_reserved";
    case LabelProblem::kUtf8: return "label_utf8";
    case LabelProblem::kLength: return "label_length";
    case LabelProblem::kCount: return "label_count";
    case LabelProblem::kDuplicate: return "label_duplicate";
    case LabelProblem::kValue: return "invalid_value";
  }
  return "";
}

}  // namespace gpulens
