// The script of a stand-in library (the scripted NVML and CUDA fakes the
// tests load), the parts both parsers share: the file named by an
// environment variable, its lines with "line N: why" errors, each line's
// tokens (split on blanks, "double quotes" keep blanks inside a token, '#'
// outside quotes starts a comment), the "key=value" split of a token, error
// codes by name and device numbers.
//
//   tokens(R"(device 0 name="NVIDIA H100" # x)")  -> {"device", "0", "name=NVIDIA H100"}
//   split_kv("mem=80", k, v)                      -> true, k = "mem", v = "80"
//   code_named(kCodes, "NVML_ERROR_", "NVML_ERROR_TIMEOUT") == code_named(kCodes, "NVML_ERROR_", "TIMEOUT")
//   device_number("1", 2) == 1;  device_number("2", 2) == -1;  device_number("1x", 2) == -1
//
//   Lines lines(text);
//   std::vector<std::string> t;
//   while (lines.next(t)) { if (t[0] != "gpu") return lines.fail(error, "unknown"); }
//
// Thread-safety: pure functions; a Lines is one parser's.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
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

// The code `name` stands for in `table`, written with or without `prefix`
// ("NVML_ERROR_TIMEOUT" or "TIMEOUT"); -1 when unknown.
inline int code_named(const std::map<std::string, int>& table, std::string_view prefix, const std::string& name) {
  const std::string n = name.starts_with(prefix) ? name.substr(prefix.size()) : name;
  const auto it = table.find(n);
  return it == table.end() ? -1 : it->second;
}

// The device number `sel` when it is one of 0..count-1 written in decimal;
// -1 otherwise (empty, a sign, trailing characters, out of range).
inline long device_number(const std::string& sel, size_t count) {
  if (sel.empty() || sel[0] < '0' || sel[0] > '9') return -1;
  char* end = nullptr;
  const long i = std::strtol(sel.c_str(), &end, 10);
  if (*end != '\0' || i < 0 || i >= static_cast<long>(count)) return -1;
  return i;
}

// The text of the file that environment variable `env` names, in `text`;
// false when the variable is unset or the file cannot be read. `path` is
// the file's name, for messages.
inline bool read_script_file(const char* env, std::string& text, std::string& path) {
  const char* p = std::getenv(env);
  if (p == nullptr) return false;
  path = p;
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  text = s.str();
  return true;
}

// The script's lines, blank and comment-only ones skipped, counted for
// errors.
class Lines {
 public:
  explicit Lines(const std::string& text) : in_(text) {}
  // The next line's tokens; false at the end.
  bool next(std::vector<std::string>& t) {
    while (std::getline(in_, line_)) {
      ++number_;
      t = tokens(line_);
      if (!t.empty()) return true;
    }
    return false;
  }
  const std::string& line() const { return line_; }
  // Sets `error` to "line N: why" and returns false (`return lines.fail(...)`).
  bool fail(std::string& error, const std::string& why) const {
    error = "line " + std::to_string(number_) + ": " + why;
    return false;
  }

 private:
  std::istringstream in_;
  std::string line_;
  int number_ = 0;
};

}  // namespace gpulens::script
