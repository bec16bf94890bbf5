// String helpers for the NCCL log analyser (see text.h).
#include "analyze/nccl/text.h"

namespace gpulens::nccl {

std::optional<std::int64_t> after_number(std::string_view s, std::string_view key,
                                         std::int64_t limit) {
  size_t p = s.find(key);
  if (p == std::string_view::npos) return std::nullopt;
  std::string_view rest = s.substr(p + key.size());
  return take_number(rest, limit);
}

std::string_view after_token(std::string_view s, std::string_view key) {
  size_t p = s.find(key);
  if (p == std::string_view::npos) return {};
  std::string_view rest = s.substr(p + key.size());
  size_t e = 0;
  while (e < rest.size() && !is_space(rest[e])) ++e;
  return rest.substr(0, e);
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_digit(c)) return false;
  }
  return true;
}

}  // namespace gpulens::nccl
