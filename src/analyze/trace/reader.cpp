// Reading trace files: gzip detection and inflation (util/gunzip), then a
// single simdjson on-demand pass that keeps only what the analyses use.
#include "analyze/trace/reader.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include <sys/stat.h>

#include "util/gunzip.h"

namespace gpulens::trace {

uint32_t Interner::id(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  const std::string& key = keys_.emplace_back(s);
  auto id = static_cast<uint32_t>(table_.size());
  table_.push_back(key);
  index_.emplace(key, id);
  return id;
}

namespace {

using simdjson::ondemand::value;

std::string human_bytes(uint64_t n) {
  char buf[32];
  if (n >= (uint64_t{1} << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", n / 1073741824.0);
  else if (n >= (uint64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", n / 1048576.0);
  else std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  return buf;
}

// The limit a gzip file inflates against, and how to explain hitting it.
struct Bound {
  uint64_t limit;
  std::string ratio_note;  // "" when --max-bytes is the binding limit
};

Status too_big(const std::string& path, uint64_t n, uint64_t limit) {
  return invalid_argument(path + ": " + human_bytes(n) + " of JSON is more than the limit of " +
                          human_bytes(limit) + " (raise it with --max-bytes)");
}

Status too_big(const std::string& path, uint64_t n, const Bound& b) {
  if (b.ratio_note.empty()) return too_big(path, n, b.limit);
  return invalid_argument(path + ": inflates to more than " + human_bytes(b.limit) + " (" + b.ratio_note +
                          "; real traces inflate 13-30 times): a gzip bomb, or not a trace; stopped while inflating");
}

Status inflate_gzip(const std::string& path, std::string_view in, const Bound& bound, size_t padding,
                    std::string& out) {
  const Gunzip g = gunzip(in, bound.limit, out, padding);
  switch (g.error) {
    case GunzipError::kNone: return Status::ok();
    case GunzipError::kTooLarge: return too_big(path, g.bytes, bound);
    case GunzipError::kTruncated:
      return invalid_argument(path + ": gzip data is truncated (ends before the end of the stream)");
    case GunzipError::kCorrupt:
      return invalid_argument(path + ": corrupt gzip data (" + (g.detail.empty() ? "inflate error" : g.detail) + ")");
    case GunzipError::kInternal: break;
  }
  return internal_error(path + ": " + g.detail);
}

}  // namespace

Result<std::string> load_json_text(const std::string& path, const ReadOptions& opts,
                                   size_t padding) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return io_error(path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return invalid_argument(path + ": is a directory, not a trace file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return io_error(path + ": cannot open: " + std::strerror(errno));
  char head[64] = {};
  f.read(head, sizeof head);
  auto got = static_cast<size_t>(f.gcount());
  if (got == 0) return invalid_argument(path + ": file is empty");
  bool gz = got >= 2 && static_cast<unsigned char>(head[0]) == 0x1f &&
            static_cast<unsigned char>(head[1]) == 0x8b;
  if (!gz) {
    // Refuse binary garbage before reading gigabytes of it.
    std::string_view h(head, got);
    size_t first = h.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && h[first] != '{' && h[first] != '[') {
      char b[8];
      std::snprintf(b, sizeof b, "0x%02x", static_cast<unsigned char>(h[first]));
      return invalid_argument(path + ": not JSON and not gzip (byte " + std::to_string(first) +
                              " is " + b + ")");
    }
  }
  auto size = static_cast<uint64_t>(st.st_size);
  if (size > opts.max_bytes) return too_big(path, size, opts.max_bytes);

  std::string raw;
  raw.reserve(size + (gz ? 0 : padding));
  raw.resize(size);
  std::memcpy(raw.data(), head, got);
  f.read(raw.data() + got, static_cast<std::streamsize>(size - got));
  if (static_cast<uint64_t>(f.gcount()) + got != size) return io_error(path + ": short read");
  if (!gz) return raw;
  if (opts.progress) std::fprintf(stderr, "%s: inflating %s of gzip\n", path.c_str(), human_bytes(size).c_str());
  Bound bound{opts.max_bytes, ""};
  const uint64_t by_ratio = std::max(opts.ratio_floor_bytes, size * opts.max_ratio);
  if (by_ratio < bound.limit) {
    bound = {by_ratio, std::to_string(opts.max_ratio) + " times its " + human_bytes(size) + " of gzip"};
  }
  std::string out;
  if (Status s = inflate_gzip(path, raw, bound, padding, out); !s) return s;
  return out;
}

Result<Trace> read_trace_file(const std::string& path, const ReadOptions& opts) {
  auto text = load_json_text(path, opts, simdjson::SIMDJSON_PADDING);
  if (!text) return text.status();
  if (opts.progress) std::fprintf(stderr, "%s: parsing %s of JSON\n", path.c_str(), human_bytes(text->size()).c_str());
  // load_json_text reserved the padding; make it readable memory that is set.
  std::string& s = *text;
  size_t n = s.size();
  s.resize(n + simdjson::SIMDJSON_PADDING, ' ');
  auto t = parse_trace(std::string_view(s.data(), n), path);
  return t;
}

}  // namespace gpulens::trace
