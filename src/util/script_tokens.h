// Tokens of one line of a stand-in library's script (the scripted NVML and
// CUDA fakes the tests load): words split on blanks, "double quotes" keep
// blanks inside a token, '#' outside quotes starts a comment; and the
// "key=value" split of a token.
//
//   tokens(R"(device 0 name="NVIDIA H100" # x)")  -> {"device", "0", "name=NVIDIA H100"}
//   split_kv("mem=80", k, v)                      -> true, k = "mem", v = "80"
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

namespace gpulens::script {

inline std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      any = true;
    } else if (!quoted && c == '#') {
      break;
    } else if (!quoted && (c == ' ' || c == '\t')) {
      if (any) out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  if (any) out.push_back(cur);
  return out;
}

// Splits "k=v"; false when there is no '='.
inline bool split_kv(const std::string& t, std::string& k, std::string& v) {
  auto eq = t.find('=');
  if (eq == std::string::npos) return false;
  k = t.substr(0, eq);
  v = t.substr(eq + 1);
  return true;
}

}  // namespace gpulens::script
