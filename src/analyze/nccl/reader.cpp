// Line reader for NCCL logs (see reader.h).
#include "analyze/nccl/reader.h"

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>

namespace gpulens::nccl {
namespace {

// Bytes that never occur in a text log: C0 controls except tab, CR, form feed
// and ESC (colour codes), and DEL.
constexpr std::array<unsigned char, 256> kBinary = [] {
  std::array<unsigned char, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = 1;
  t['\t'] = t['\r'] = t['\f'] = t[0x1b] = 0;
  t[0x7f] = 1;
  return t;
}();

bool is_binary(std::string_view l) {
  unsigned char bad = 0;
  for (char c : l) bad |= kBinary[static_cast<unsigned char>(c)];
  return bad != 0;
}

// A quick test, eight bytes at a time, that is true whenever is_binary() is
// (any byte below 0x20 or equal to 0x7f); a line with a tab also passes here
// and is then checked byte by byte.
bool maybe_binary(std::string_view l) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
  auto flagged = [](std::uint64_t x) {
    const std::uint64_t y = x ^ (0x7f * kOnes);
    return (((x - 0x20 * kOnes) & ~x) | ((y - kOnes) & ~y)) & kHigh;
  };
  const char* p = l.data();
  size_t n = l.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t x;
    std::memcpy(&x, p, 8);
    if (flagged(x)) return true;
  }
  if (n > 0) {
    std::uint64_t x = 0x2020202020202020ull;  // padding: spaces are not binary
    std::memcpy(&x, p, n);
    if (flagged(x)) return true;
  }
  return false;
}

class LineSink {
 public:
  explicit LineSink(Analyzer& a) : a_(a) {}

  void line(std::string_view l) {
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (maybe_binary(l) && is_binary(l)) {
      ++a_.input().lines;
      ++a_.input().binary_lines;
      return;
    }
    a_.feed(l);
  }

  // A piece of a line that did not fit in one buffer.
  void partial(std::string_view piece) {
    if (carry_.size() + piece.size() > kMaxLine) {
      if (!overlong_) ++a_.input().overlong_lines;
      overlong_ = true;
      piece = piece.substr(0, kMaxLine - std::min(kMaxLine, carry_.size()));
    }
    carry_.append(piece);
  }

  // End of the line whose start was given to partial(); rest is its tail.
  void finish(std::string_view rest) {
    partial(rest);
    line(carry_);
    carry_.clear();
    overlong_ = false;
  }

  bool pending() const { return !carry_.empty() || overlong_; }

 private:
  Analyzer& a_;
  std::string carry_;
  bool overlong_ = false;
};

}  // namespace

Status read_stream(std::FILE* f, std::string_view name, Analyzer& a) {
  constexpr size_t kBuf = 1 << 20;
  auto buf = std::make_unique<char[]>(kBuf);
  LineSink sink(a);
  ++a.input().files;
  while (true) {
    size_t n = std::fread(buf.get(), 1, kBuf, f);
    if (n == 0) break;
    a.input().bytes += n;
    std::string_view chunk(buf.get(), n);
    while (!chunk.empty()) {
      const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
      if (nl == nullptr) {
        sink.partial(chunk);
        break;
      }
      size_t len = static_cast<const char*>(nl) - chunk.data();
      if (sink.pending()) {
        sink.finish(chunk.substr(0, len));
      } else if (len > kMaxLine) {
        ++a.input().overlong_lines;
        sink.line(chunk.substr(0, kMaxLine));
      } else {
        sink.line(chunk.substr(0, len));
      }
      chunk.remove_prefix(len + 1);
    }
  }
  if (std::ferror(f)) {
    return io_error("cannot read " + std::string(name) + ": " + std::strerror(errno));
  }
  if (sink.pending()) sink.finish({});  // last line without a newline
  return Status::ok();
}

namespace {

Result<Report> conclude(Analyzer& a, std::string_view what) {
  const InputStats& in = a.input();
  if (in.bytes == 0) return invalid_argument(std::string(what) + ": empty input, nothing to analyse");
  if (in.nccl_lines == 0) {
    std::string m = std::string(what) + ": no NCCL lines found in " + std::to_string(in.lines) +
                    " lines; is this NCCL_DEBUG=INFO output?";
    if (in.binary_lines) m += " (" + std::to_string(in.binary_lines) + " binary lines skipped)";
    return invalid_argument(m);
  }
  return a.finish();
}

}  // namespace

Result<Report> analyze_paths(const std::vector<std::string>& paths) {
  Analyzer a;
  std::vector<std::string> names = paths.empty() ? std::vector<std::string>{"-"} : paths;
  for (const auto& p : names) {
    if (p == "-") {
      if (Status s = read_stream(stdin, "<stdin>", a); !s) return s;
      continue;
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(p.c_str(), "rb"), &std::fclose);
    if (!f) return io_error("cannot open " + p + ": " + std::strerror(errno));
    if (Status s = read_stream(f.get(), p, a); !s) return s;
  }
  std::string what = names.size() == 1 ? (names[0] == "-" ? "<stdin>" : names[0])
                                       : std::to_string(names.size()) + " files";
  return conclude(a, what);
}

Result<Report> analyze_text(std::string_view text) {
  Analyzer a;
  ++a.input().files;
  a.input().bytes = text.size();
  LineSink sink(a);
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    if (l.size() > kMaxLine) {
      ++a.input().overlong_lines;
      l = l.substr(0, kMaxLine);
    }
    sink.line(l);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return conclude(a, "input");
}

}  // namespace gpulens::nccl
