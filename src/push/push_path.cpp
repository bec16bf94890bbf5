// The Pushgateway grouping key in the URL path (@base64 segments decoded by
// util/base64).
#include <cctype>

#include "push/push_body.h"
#include "util/base64.h"

namespace gpulens::push {
namespace {

bool valid_label_name(std::string_view n) {
  if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
  for (char c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Result<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0) {
      return invalid_argument("bad percent-encoding in \"" + std::string(s) + "\"");
    }
    out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
    i += 2;
  }
  return out;
}

}  // namespace

Result<LabelPairs> parse_group_path(std::string_view path, const PushLimits& limits) {
  constexpr std::string_view kPrefix = "/metrics/";
  if (!path.starts_with(kPrefix)) return invalid_argument("push path must start with /metrics/job/<job>");
  std::vector<std::string_view> parts;
  std::string_view rest = path.substr(kPrefix.size());
  while (true) {
    size_t slash = rest.find('/');
    parts.push_back(rest.substr(0, slash));
    if (slash == std::string_view::npos) break;
    rest = rest.substr(slash + 1);
  }
  if (!parts.empty() && parts.back().empty() && parts.size() % 2 == 1) parts.pop_back();  // trailing '/'
  if (parts.size() % 2 != 0) {
    return invalid_argument("push path " + std::string(path) + ": label " + std::string(parts.back()) +
                            " has no value (path is /metrics/job/<job>{/<label>/<value>})");
  }
  LabelPairs key;
  for (size_t i = 0; i < parts.size(); i += 2) {
    std::string name(parts[i]);
    bool b64 = false;
    if (name.ends_with("@base64")) {
      b64 = true;
      name.resize(name.size() - 7);
    }
    const std::string where = "push path segment " + std::to_string(i + 3);
    if (i == 0 && name != "job") return invalid_argument("push path must start with /metrics/job/<job>");
    if (!valid_label_name(name)) return invalid_argument(where + ": invalid label name \"" + name + "\"");
    if (name.starts_with("__")) return invalid_argument(where + ": label name \"" + name + "\" is reserved");
    Result<std::string> value = b64 ? base64url_decode(parts[i + 1]) : percent_decode(parts[i + 1]);
    if (!value) return invalid_argument(where + ": label " + name + ": " + value.status().message());
    if (name == "job" && value->empty()) return invalid_argument("push path: job name is empty");
    if (!b64 && value->empty()) {
      return invalid_argument(where + ": label " + name + " has an empty value (encode it as " + name + "@base64/=)");
    }
    if (name.size() > limits.max_label_length || value->size() > limits.max_label_length) {
      return invalid_argument(where + ": label " + name + " longer than " + std::to_string(limits.max_label_length) +
                              " bytes (push.max_label_length)");
    }
    for (const auto& [n, v] : key) {
      if (n == name) return invalid_argument(where + ": label " + name + " appears twice");
    }
    key.emplace_back(std::move(name), std::move(*value));
  }
  if (key.size() > limits.max_labels) {
    return invalid_argument("push path has " + std::to_string(key.size()) + " labels, more than " +
                            std::to_string(limits.max_labels) + " (push.max_labels)");
  }
  return key;
}

}  // namespace gpulens::push
