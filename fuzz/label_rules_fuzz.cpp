// Fuzz target: the label rules every outside label goes through
// (model/label_rules.h). The input is split at NUL bytes into name, value,
// name, value...; each pair is checked alone and the whole set together, and
// the input itself as one UTF-8 string. Checks: a label called valid has a
// name of the grammar, not reserved, and a value that is UTF-8 within the
// limits; a refusal always has a message, printable ASCII only; a valid UTF-8
// string stays valid when cut at a character boundary; printable() never
// returns a byte outside printable ASCII.
// Bound: inputs are cut at 4 KiB; limits are small so both sides are reached.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/label_rules.h"

namespace {

using namespace gpulens;

void require(bool ok) {
  if (!ok) std::abort();
}

bool printable_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  LabelLimits lim;
  lim.max_labels = 6;
  lim.max_name_bytes = 32;
  lim.max_value_bytes = 48;

  const bool utf8 = valid_utf8(in);
  if (utf8) {
    // Cut before any byte that starts a character: still valid.
    for (size_t i = 0; i < in.size(); ++i) {
      if ((static_cast<unsigned char>(in[i]) & 0xc0) != 0x80) require(valid_utf8(in.substr(0, i)));
    }
  }
  require(printable_ascii(printable(in)));

  std::vector<std::pair<std::string, std::string>> labels;
  size_t start = 0;
  std::vector<std::string> parts;
  for (size_t i = 0; i <= in.size(); ++i) {
    if (i == in.size() || in[i] == '\0') {
      parts.emplace_back(in.substr(start, i - start));
      start = i + 1;
    }
  }
  for (size_t i = 0; i + 1 < parts.size(); i += 2) labels.emplace_back(parts[i], parts[i + 1]);

  for (LabelKind kind : {LabelKind::kGauge, LabelKind::kHistogram, LabelKind::kSummary}) {
    bool all_ok = true;
    for (const auto& [n, v] : labels) {
      const LabelCheck c = check_label(n, v, lim, kind);
      if (c) {
        require(valid_label_name(n) && !n.starts_with("__") && n.size() <= lim.max_name_bytes);
        require(valid_utf8(v) && v.size() <= lim.max_value_bytes);
        require(!(kind == LabelKind::kHistogram && n == "le"));
        require(!(kind == LabelKind::kSummary && n == "quantile"));
        require(c.message.empty());
      } else {
        all_ok = false;
        require(!c.message.empty() && printable_ascii(c.message));
        require(!reason(c.problem).empty());
      }
    }
    const LabelCheck set = check_labels(labels, lim, kind);
    if (set) require(all_ok && labels.size() <= lim.max_labels);
    if (!all_ok) require(!set);
    if (!set) require(!set.message.empty() && printable_ascii(set.message));
  }
  return 0;
}
