// Wrapping text output to a width between words; see text_fit.h.
#include "util/text_fit.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

namespace gpulens {
namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The byte offset where column `at` starts (escapes take no column).
size_t byte_at_column(std::string_view s, int at) {
  int cols = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\033') {
      const size_t m = s.find('m', i);
      i = m == std::string_view::npos ? s.size() : m + 1;
      continue;
    }
    if (cols == at) return i;
    ++i;
    while (i < s.size() && continuation(s[i])) ++i;
    ++cols;
  }
  return s.size();
}

void fit_line(std::string_view line, int width, std::string& out) {
  if (display_width(line) <= width) {
    out.append(line);
    return;
  }
  size_t indent = line.find_first_not_of(' ');
  if (indent == std::string_view::npos) indent = 0;
  const std::string more(std::min<size_t>(indent + 2, static_cast<size_t>(width / 2)), ' ');
  std::string_view rest = line;
  bool first = true;
  while (true) {
    const std::string prefix = first ? "" : more;
    if (display_width(prefix) + display_width(rest) <= width) {
      out += prefix;
      out.append(rest);
      return;
    }
    const int room = width - display_width(prefix);
    const size_t limit = byte_at_column(rest, room);
    // The last space within the room (not the indentation) ends this line.
    size_t cut = rest.rfind(' ', limit);
    const size_t lead = first ? indent : 0;
    if (cut == std::string_view::npos || cut <= lead) {
      // One word wider than the room: it cannot fit whole, cut it there.
      cut = limit;
      out += prefix;
      out.append(rest.substr(0, cut));
      out += '\n';
      rest = rest.substr(cut);
    } else {
      size_t end = cut;
      while (end > lead && rest[end - 1] == ' ') --end;
      out += prefix;
      out.append(rest.substr(0, end));
      out += '\n';
      rest = rest.substr(cut + 1);
    }
    const size_t next = rest.find_first_not_of(' ');
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next);
    first = false;
    if (rest.empty()) {
      out.pop_back();  // the line ended with the cut
      return;
    }
  }
}

}  // namespace

int output_width(int fd) {
  if (const char* c = std::getenv("COLUMNS"); c && *c) {
    char* end = nullptr;
    const long v = std::strtol(c, &end, 10);
    if (*end == '\0' && v >= 20 && v <= 10'000) return static_cast<int>(v);
  }
  winsize ws{};
  if (isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 0;
}

int display_width(std::string_view s) {
  int cols = 0;
  for (size_t i = 0; i < s.size();) {
    if (s[i] == '\033') {
      const size_t m = s.find('m', i);
      i = m == std::string_view::npos ? s.size() : m + 1;
      continue;
    }
    ++i;
    while (i < s.size() && continuation(s[i])) ++i;
    ++cols;
  }
  return cols;
}

std::string fit_lines(std::string_view text, int width) {
  if (width <= 0) return std::string(text);
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    fit_line(text.substr(0, nl), width, out);
    if (nl == std::string_view::npos) break;
    out += '\n';
    text = text.substr(nl + 1);
  }
  return out;
}

}  // namespace gpulens
