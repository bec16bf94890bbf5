// Query-string splitting and percent-decoding.
#include "server/query.h"

namespace gpulens {
namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

Result<Query> parse_query(std::string_view query, std::initializer_list<std::string_view> allowed) {
  Query q;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == query.npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    std::string name = decode(part.substr(0, eq));
    std::string value = eq == part.npos ? "" : decode(part.substr(eq + 1));
    bool known = false;
    for (std::string_view a : allowed) known |= a == name;
    if (!known) {
      std::string takes;
      for (std::string_view a : allowed) takes += (takes.empty() ? "" : ", ") + std::string(a);
      if (name.size() > 64) name = name.substr(0, 64) + "...";
      return invalid_argument("unknown parameter \"" + name + "\"" +
                              (takes.empty() ? " (this route takes none)" : " (this route takes " + takes + ")"));
    }
    if (!q.values.emplace(name, std::move(value)).second) {
      return invalid_argument("parameter \"" + name + "\" given twice");
    }
  }
  return q;
}

}  // namespace gpulens
