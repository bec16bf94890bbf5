// OpenMetrics text parser: line splitting, series lookup, label and number
// parsing. The series text is looked up before any label is parsed, so a
// series costs label parsing once, not once per sample.
#include "diagnose/openmetrics_parser.h"

#include <zlib.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace gpulens::diagnose {
namespace {

bool name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

// Parses a number as OpenMetrics writes it (also +Inf, -Inf, NaN).
bool parse_number(std::string_view s, double& out) {
  if (s.empty()) return false;
  if (s[0] == '+') s.remove_prefix(1);
  if (s == "Inf" || s == "inf") { out = std::numeric_limits<double>::infinity(); return true; }
  if (s == "-Inf" || s == "-inf") { out = -std::numeric_limits<double>::infinity(); return true; }
  if (s == "NaN" || s == "nan") { out = std::numeric_limits<double>::quiet_NaN(); return true; }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Finds the '}' closing a label set that starts after `p`, honouring quotes.
// Returns npos when there is none.
size_t find_label_end(std::string_view line, size_t p) {
  while (p < line.size()) {
    const char c = line[p];
    if (c == '}') return p;
    if (c == '"') {
      ++p;
      while (p < line.size() && line[p] != '"') p += line[p] == '\\' ? 2 : 1;
      if (p >= line.size()) return std::string_view::npos;
    }
    ++p;
  }
  return std::string_view::npos;
}

}  // namespace

bool timestamp_to_ms(double ts, int64_t& out_ms) {
  if (!std::isfinite(ts) || ts < 0) return false;
  const double ms = ts > 1e11 ? ts : ts * 1000.0;
  if (ms > static_cast<double>(kMaxTimestampMs)) return false;
  out_ms = ts > 1e11 ? static_cast<int64_t>(ms) : static_cast<int64_t>(std::llround(ms));
  return true;
}

Status OpenMetricsParser::error(std::string_view problem) const {
  return invalid_argument(filename_ + ":" + std::to_string(stats_.lines) + ": " + std::string(problem));
}

Status OpenMetricsParser::feed(std::string_view chunk) {
  stats_.bytes += chunk.size();
  if (stats_.bytes > limits_.max_bytes) {
    return invalid_argument(filename_ + ": input larger than " + std::to_string(limits_.max_bytes) +
                            " bytes (the limit on one input); stopped at line " + std::to_string(stats_.lines));
  }
  auto too_long = [this] {
    return invalid_argument(filename_ + ":" + std::to_string(stats_.lines + 1) + ": line longer than " +
                            std::to_string(limits_.max_line_bytes) + " bytes (not a recording?)");
  };
  if (!carry_.empty()) {
    const size_t nl = chunk.find('\n');
    if (nl == chunk.npos) {
      if (carry_.size() + chunk.size() > limits_.max_line_bytes) return too_long();
      carry_.append(chunk);
      return Status::ok();
    }
    if (carry_.size() + nl > limits_.max_line_bytes) return too_long();
    carry_.append(chunk.substr(0, nl));
    chunk.remove_prefix(nl + 1);
    std::string line = std::move(carry_);
    carry_.clear();
    ++stats_.lines;
    if (Status s = parse_line(line); !s) return s;
  }
  while (!chunk.empty()) {
    const void* nlp = std::memchr(chunk.data(), '\n', chunk.size());
    if (nlp == nullptr) {
      if (chunk.size() > limits_.max_line_bytes) return too_long();
      carry_.assign(chunk);
      break;
    }
    const size_t nl = static_cast<size_t>(static_cast<const char*>(nlp) - chunk.data());
    if (nl > limits_.max_line_bytes) return too_long();
    ++stats_.lines;
    if (Status s = parse_line(chunk.substr(0, nl)); !s) return s;
    chunk.remove_prefix(nl + 1);
  }
  return Status::ok();
}

Status OpenMetricsParser::finish() {
  if (!carry_.empty()) {
    ++stats_.lines;
    std::string line = std::move(carry_);
    carry_.clear();
    // A recording without "# EOF" whose last line has no newline was cut
    // while being written (a copy stopped, a disk filled): the line may
    // parse — a timestamp cut from 1764639600 to 17 is a valid number —
    // but is not what was recorded. Read up to the last complete line.
    const bool recording = scrape_time_ms_ < 0 && stats_.samples + stats_.ignored_samples > 0;
    if (recording && !stats_.saw_eof) {
      stats_.warnings.push_back(filename_ + ":" + std::to_string(stats_.lines) +
                                ": last line cut short (no newline, no \"# EOF\": file truncated?); ignored");
    } else if (Status s = parse_line(line); !s) {
      if (stats_.saw_eof) return s;
      stats_.warnings.push_back(filename_ + ":" + std::to_string(stats_.lines) +
                                ": last line cut short (file truncated?); ignored");
    }
  }
  if (!stats_.saw_eof && scrape_time_ms_ < 0) {
    stats_.warnings.push_back(filename_ + ": no \"# EOF\" at the end (file truncated?); using the " +
                              std::to_string(stats_.samples) + " samples read");
  }
  return Status::ok();
}

Status OpenMetricsParser::parse_timestamp(std::string_view ts_text, int64_t& t_ms) const {
  if (ts_text.empty()) return error("sample has no timestamp (recordings need one on every sample)");
  if (const size_t sp2 = ts_text.find(' '); sp2 != ts_text.npos) {
    if (ts_text.substr(sp2 + 1).starts_with('#')) {
      ts_text = ts_text.substr(0, sp2);  // exemplar: ignored
    } else {
      return error("unexpected text after the timestamp");
    }
  }
  if (ts_text.starts_with('#')) return error("sample has no timestamp (recordings need one on every sample)");
  double ts = 0;
  if (!parse_number(ts_text, ts)) return error("bad timestamp \"" + std::string(ts_text) + "\"");
  if (!timestamp_to_ms(ts, t_ms)) {
    return error("timestamp \"" + std::string(ts_text) +
                 "\" out of range (expected Unix seconds or milliseconds, 1970 .. 9999)");
  }
  return Status::ok();
}

void OpenMetricsParser::start_scrape(int64_t t_ms) {
  scrape_time_ms_ = t_ms;
  const uint64_t series = stats_.series, ignored = stats_.ignored_series;
  stats_ = ParseStats{};
  stats_.series = series;
  stats_.ignored_series = ignored;
  carry_.clear();
  after_eof_ = false;
}

Status OpenMetricsParser::parse_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return Status::ok();
  if (after_eof_) return error("content after \"# EOF\"");
  if (line[0] == '#') {
    if (line == "# EOF") {
      stats_.saw_eof = true;
      after_eof_ = true;
    }
    return Status::ok();
  }
  if (!name_start(line[0])) return error("expected a metric name");
  size_t p = 1;
  while (p < line.size() && name_char(line[p])) ++p;
  size_t key_end = p;
  if (p < line.size() && line[p] == '{') {
    const size_t close = find_label_end(line, p + 1);
    if (close == std::string_view::npos) return error("unterminated label set");
    key_end = close + 1;
  }
  if (key_end >= line.size() || line[key_end] != ' ') return error("expected a space before the value");
  const std::string_view key = line.substr(0, key_end);

  // value [timestamp] [# exemplar]
  std::string_view rest = line.substr(key_end + 1);
  const size_t sp = rest.find(' ');
  const std::string_view value_text = rest.substr(0, sp);
  double value = 0;
  if (!parse_number(value_text, value)) return error("bad value \"" + std::string(value_text) + "\"");
  int64_t t_ms = scrape_time_ms_;
  std::string_view ts_text = sp == rest.npos ? std::string_view() : rest.substr(sp + 1);
  if (scrape_time_ms_ >= 0) {
    // A scrape: an optional timestamp is not ours to keep (the agent samples
    // at its own time), an exemplar is skipped.
    if (!ts_text.empty() && !ts_text.starts_with('#')) {
      ++stats_.timestamped;
      const size_t sp2 = ts_text.find(' ');
      double ignored = 0;
      if (!parse_number(ts_text.substr(0, sp2), ignored)) {
        return error("bad timestamp \"" + std::string(ts_text.substr(0, sp2)) + "\"");
      }
      if (sp2 != ts_text.npos && !ts_text.substr(sp2 + 1).starts_with('#')) {
        return error("unexpected text after the timestamp");
      }
    }
  } else if (Status s = parse_timestamp(ts_text, t_ms); !s) {
    return s;
  }

  int64_t handle;
  if (auto it = series_.find(key); it != series_.end()) {
    handle = it->second;
  } else {
    // New series: parse its labels once.
    label_buf_.clear();
    const std::string_view name = line.substr(0, p);
    if (key_end > p) {
      size_t q = p + 1;
      const size_t close = key_end - 1;
      while (q < close) {
        if (line[q] == ',' || line[q] == ' ') { ++q; continue; }
        if (!name_start(line[q]) || line[q] == ':') return error("bad label name");
        const size_t n0 = q;
        while (q < close && name_char(line[q])) ++q;
        const std::string_view lname = line.substr(n0, q - n0);
        if (q + 1 >= close || line[q] != '=' || line[q + 1] != '"')
          return error("expected =\"...\" after label " + std::string(lname));
        q += 2;
        std::string lval;
        while (q < close && line[q] != '"') {
          if (line[q] == '\\' && q + 1 < close) {
            const char e = line[q + 1];
            lval.push_back(e == 'n' ? '\n' : e);
            q += 2;
          } else {
            lval.push_back(line[q++]);
          }
        }
        if (q >= close) return error("unterminated label value");
        ++q;
        label_buf_.emplace_back(std::string(lname), std::move(lval));
      }
    }
    label_views_.clear();
    for (const auto& [k, v] : label_buf_) label_views_.emplace_back(k, v);
    handle = sink_.on_series(name, label_views_);
    if (handle >= 0) {
      if (stats_.series >= limits_.max_series) {
        return error("more than " + std::to_string(limits_.max_series) +
                     " distinct series of the families diagnosis reads (raise --max-series, or split the input)");
      }
      ++stats_.series;
      series_.emplace(std::string(key), handle);
    } else {
      // Ignored series are remembered up to a bound; past it they cost a
      // label parse per line but no memory.
      if (stats_.ignored_series < limits_.max_ignored_series) {
        series_.emplace(std::string(key), handle);
        ++stats_.ignored_series;
      }
    }
  }
  if (handle < 0) {
    ++stats_.ignored_samples;
  } else {
    if (stats_.samples >= limits_.max_samples) {
      return error("more than " + std::to_string(limits_.max_samples) +
                   " samples of the families diagnosis reads (raise --max-samples, or use a shorter recording)");
    }
    ++stats_.samples;
    sink_.on_sample(handle, t_ms, value);
  }
  return Status::ok();
}

namespace {

// Feeds a gzip stream (one member or several, as `cat a.gz b.gz` makes)
// to the parser; `head` holds the bytes already read from `f`. A stream cut
// short gives what it holds, with a warning; corrupt data is an error.
Status parse_gzip(const std::string& path, FILE* f, std::string head, OpenMetricsParser& parser,
                  std::vector<std::string>& warnings) {
  z_stream z{};
  if (inflateInit2(&z, 15 + 16) != Z_OK) return internal_error("zlib: cannot start a gzip stream");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, &inflateEnd);
  constexpr size_t kIn = 1 << 20, kOut = 4 << 20;
  std::unique_ptr<char[]> in(new char[kIn]), out(new char[kOut]);
  std::memcpy(in.get(), head.data(), head.size());
  size_t have = head.size() + std::fread(in.get() + head.size(), 1, kIn - head.size(), f);
  bool ended = false;  // the last member ended cleanly
  while (have > 0) {
    z.next_in = reinterpret_cast<Bytef*>(in.get());
    z.avail_in = static_cast<uInt>(have);
    while (z.avail_in > 0) {
      z.next_out = reinterpret_cast<Bytef*>(out.get());
      z.avail_out = static_cast<uInt>(kOut);
      const uInt before = z.avail_in;
      const int rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
        return invalid_argument(path + ": corrupt gzip data after " + std::to_string(z.total_out) + " bytes" +
                                (z.msg != nullptr ? std::string(" (") + z.msg + ")" : ""));
      }
      const size_t produced = kOut - z.avail_out;
      if (produced > 0) {
        if (Status s = parser.feed({out.get(), produced}); !s) return s;
      }
      ended = rc == Z_STREAM_END;
      if (ended) {
        inflateReset(&z);  // another member may follow
      } else if (produced == 0 && z.avail_in == before) {
        return invalid_argument(path + ": corrupt gzip data after " + std::to_string(z.total_out) + " bytes");
      }
    }
    have = std::fread(in.get(), 1, kIn, f);
  }
  if (std::ferror(f)) return io_error("cannot read " + path + ": " + std::strerror(errno));
  if (!ended) warnings.push_back(path + ": gzip stream cut short (file truncated?); read up to where it stops");
  return Status::ok();
}

}  // namespace

Status parse_file(const std::string& path, OpenMetricsParser& parser) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return io_error("cannot open " + path + ": " + std::strerror(errno));
  // gzip by its magic bytes, whatever the name.
  std::string head(2, '\0');
  head.resize(std::fread(head.data(), 1, 2, f.get()));
  if (head.size() == 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b) {
    std::vector<std::string> warnings;
    if (Status s = parse_gzip(path, f.get(), head, parser, warnings); !s) return s;
    Status s = parser.finish();
    for (auto& w : warnings) parser.add_warning(std::move(w));
    return s;
  }
  if (!head.empty()) {
    if (Status s = parser.feed(head); !s) return s;
  }
  constexpr size_t kBlock = 4 << 20;
  std::unique_ptr<char[]> buf(new char[kBlock]);
  while (true) {
    const size_t n = std::fread(buf.get(), 1, kBlock, f.get());
    if (n > 0) {
      if (Status s = parser.feed({buf.get(), n}); !s) return s;
    }
    if (n < kBlock) {
      if (std::ferror(f.get())) return io_error("cannot read " + path + ": " + std::strerror(errno));
      break;
    }
  }
  return parser.finish();
}

}  // namespace gpulens::diagnose
