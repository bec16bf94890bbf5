// NCCL log line tokenizer (see line.h).
#include "analyze/nccl/line.h"

#include <cstring>

#include "analyze/nccl/text.h"

namespace gpulens::nccl {
namespace {

// True when line holds an "NCCL INFO|WARN|TRACE" marker at p (followed by a
// space or the end of the line); sets its level and length.
bool marker_at(std::string_view line, size_t p, Level& level, size_t& marker_len) {
  if (line.size() < p + 9 || std::memcmp(line.data() + p, "NCCL ", 5) != 0) return false;
  std::string_view rest = line.substr(p + 5);
  Level l = Level::kNone;
  size_t n = 0;
  if (rest.starts_with("INFO")) {
    l = Level::kInfo, n = 4;
  } else if (rest.starts_with("WARN")) {
    l = Level::kWarn, n = 4;
  } else if (rest.starts_with("TRACE")) {
    l = Level::kTrace, n = 5;
  }
  if (l == Level::kNone || (rest.size() != n && rest[n] != ' ')) return false;
  level = l;
  marker_len = 5 + n;
  return true;
}

// Position of the first "NCCL INFO|WARN|TRACE" marker, with its level.
size_t find_marker(std::string_view line, Level& level, size_t& marker_len) {
  size_t from = 0;
  while (true) {
    size_t p = find_in(line.substr(from), "NCCL ");
    if (p == std::string_view::npos) return p;
    p += from;
    if (marker_at(line, p, level, marker_len)) return p;
    from = p + 5;
  }
}

// The message after the marker that ends at `from`.
std::string_view message_of(std::string_view line, size_t from) {
  std::string_view msg = trim(line.substr(from));
  // CloudWatch tables repeat the whole line after " | "; keep the first copy.
  // The first " NCCL " is found by its 'N' (memchr on ' ' would stop at every word).
  size_t dup = std::string_view::npos;
  for (size_t at = 1; at < msg.size();) {
    size_t q = find_in(msg.substr(at), "NCCL ");
    if (q == std::string_view::npos) break;
    q += at;
    if (msg[q - 1] == ' ') {
      dup = q - 1;
      break;
    }
    at = q + 1;
  }
  if (dup != std::string_view::npos) {
    std::string_view rest = msg.substr(dup + 6);
    if (rest.starts_with("INFO ") || rest.starts_with("WARN ")) {
      size_t bar = msg.rfind(" | ", dup);
      if (bar != std::string_view::npos) msg = trim(msg.substr(0, bar));
    }
  }
  return msg;
}

// Parses the prefix before the marker, backwards: [file:line] [dev] host:pid:tid.
void parse_head(std::string_view head, LogLine& l) {
  head = trim(head);
  auto last_token = [&head]() {
    size_t sp = head.size();
    while (sp > 0 && head[sp - 1] != ' ' && head[sp - 1] != '\t') --sp;
    sp = sp == 0 ? std::string_view::npos : sp - 1;
    std::string_view tok = sp == std::string_view::npos ? head : head.substr(sp + 1);
    head = sp == std::string_view::npos ? std::string_view{} : trim(head.substr(0, sp));
    return tok;
  };
  std::string_view tok = last_token();
  if (!tok.empty() && tok.back() != ']') {
    size_t colon = tok.rfind(':');
    if (colon != std::string_view::npos && all_digits(tok.substr(colon + 1))) {
      l.where = tok;
      tok = last_token();
    }
  }
  if (tok.size() >= 3 && tok.front() == '[' && tok.back() == ']' &&
      all_digits(tok.substr(1, tok.size() - 2)) && tok.size() < 8) {
    std::string_view d = tok.substr(1, tok.size() - 2);
    l.dev = static_cast<int>(take_number(d).value_or(-1));
    tok = last_token();
    // tok is host:pid:tid (the host itself may contain ':' only via glued prefixes)
    size_t c2 = tok.rfind(':');
    size_t c1 = c2 == std::string_view::npos || c2 == 0 ? std::string_view::npos
                                                         : tok.rfind(':', c2 - 1);
    if (c1 != std::string_view::npos && all_digits(tok.substr(c2 + 1)) &&
        all_digits(tok.substr(c1 + 1, c2 - c1 - 1)) && c2 - c1 - 1 <= 10) {
      std::string_view pid = tok.substr(c1 + 1, c2 - c1 - 1);
      l.pid = take_number(pid, INT64_MAX / 16).value_or(-1);
      l.host = clean_host(tok.substr(0, c1));
      if (l.host.empty()) l.pid = -1;
    }
  }
}

// Skips a leading "YYYY-MM-DDTHH:MM:SS[.fff][Z|+hh:mm|-hh:mm]".
std::string_view skip_iso_timestamp(std::string_view s) {
  auto digits = [&](size_t at, size_t n) {
    if (at + n > s.size()) return false;
    for (size_t i = 0; i < n; ++i) {
      if (!is_digit(s[at + i])) return false;
    }
    return true;
  };
  if (!(digits(0, 4) && s.size() > 19 && s[4] == '-' && digits(5, 2) && s[7] == '-' &&
        digits(8, 2) && s[10] == 'T' && digits(11, 2) && s[13] == ':' && digits(14, 2) &&
        s[16] == ':' && digits(17, 2))) {
    return s;
  }
  size_t i = 19;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i + 6 <= s.size() && (s[i] == '+' || s[i] == '-') && digits(i + 1, 2) &&
             s[i + 3] == ':' && digits(i + 4, 2)) {
    i += 6;
  }
  return s.substr(i);
}

}  // namespace

std::string_view clean_host(std::string_view host) {
  // "[1,6]<stdout>:host": cut after the last ">:" that closes <stdout> or <stderr>.
  size_t gt = host.rfind('>');
  if (gt != std::string_view::npos && gt >= 7 && gt + 1 < host.size() && host[gt + 1] == ':') {
    std::string_view tag = host.substr(gt - 7, 8);
    if (tag == "<stdout>" || tag == "<stderr>") host.remove_prefix(gt + 2);
  }
  // Launchers' per-process tags glued to the host: torchrun --tee's
  // "[default0]:host", PyTorch's "[rank1]:host". No hostname has a '[', and
  // ranks on one host must not count as several hosts.
  while (host.size() > 3 && host[0] == '[') {
    const size_t end = host.find("]:");
    if (end == std::string_view::npos) break;
    host.remove_prefix(end + 2);
  }
  return skip_iso_timestamp(host);
}

bool tokenize(std::string_view line, LogLine& out) {
  Level level = Level::kNone;
  size_t marker_len = 0;
  size_t pos = find_marker(line, level, marker_len);
  if (pos == std::string_view::npos) return false;
  LogLine l;
  l.level = level;
  l.message = message_of(line, pos + marker_len);
  parse_head(line.substr(0, pos), l);
  out = l;
  return true;
}

// Why the shortcut gives tokenize()'s answer: the last line's first marker was
// at p = prefix_.size(), so no marker lies wholly inside the prefix; one that
// started inside it and reached past p would need the bytes at p.. to continue
// "NCCL INFO" or "NCCL WARN" from its 'N' (an "INFO" or "WARN" letter), and
// they read "NCCL " instead. So the first marker of this line is at p too, and
// the prefix, being the same bytes, parses to the same host, pid, device and
// place.
bool Tokenizer::next(std::string_view line, LogLine& out) {
  Level level = Level::kNone;
  size_t marker_len = 0;
  const size_t p = prefix_.size();
  if (p > 0 && line.size() > p && std::memcmp(line.data(), prefix_.data(), p) == 0 &&
      marker_at(line, p, level, marker_len)) {
    LogLine l;
    l.level = level;
    l.message = message_of(line, p + marker_len);
    if (host_len_ > 0) l.host = line.substr(host_at_, host_len_);
    if (where_len_ > 0) l.where = line.substr(where_at_, where_len_);
    l.pid = pid_;
    l.dev = dev_;
    out = l;
    return true;
  }
  size_t pos = find_marker(line, level, marker_len);
  if (pos == std::string_view::npos) return false;
  LogLine l;
  l.level = level;
  l.message = message_of(line, pos + marker_len);
  parse_head(line.substr(0, pos), l);
  out = l;
  if (pos == 0 || pos > kMaxPrefix) {
    prefix_.clear();
    return true;
  }
  prefix_.assign(line.data(), pos);
  auto offset = [&](std::string_view v) { return v.empty() ? 0 : static_cast<size_t>(v.data() - line.data()); };
  host_at_ = offset(l.host), host_len_ = l.host.size();
  where_at_ = offset(l.where), where_len_ = l.where.size();
  pid_ = l.pid;
  dev_ = l.dev;
  return true;
}

}  // namespace gpulens::nccl
