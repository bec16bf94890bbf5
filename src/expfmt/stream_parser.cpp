// The streaming reader: line splitting within the bounds, series lookup,
// sample and label parsing through expfmt/text.h. The series text is looked
// up before any label is parsed, so a series costs label parsing once, not
// once per sample.
#include "expfmt/stream_parser.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

namespace gpulens::expfmt {
namespace {

// " (advice)", or nothing.
std::string advice(std::string_view text) { return text.empty() ? std::string() : " (" + std::string(text) + ")"; }

}  // namespace

Status StreamParser::error(std::string_view problem) const {
  return invalid_argument(filename_ + ":" + std::to_string(stats_.lines) + ": " + std::string(problem));
}

Status StreamParser::feed(std::string_view chunk) {
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

Status StreamParser::finish() {
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

Status StreamParser::parse_timestamp(std::string_view ts_text, int64_t& t_ms) const {
  if (ts_text.empty()) return error("sample has no timestamp (recordings need one on every sample)");
  double ts = 0;
  if (!parse_float(ts_text, ts)) return error("bad timestamp \"" + std::string(ts_text) + "\"");
  if (!timestamp_to_ms(ts, t_ms)) {
    return error("timestamp \"" + std::string(ts_text) +
                 "\" out of range (expected Unix seconds or milliseconds, 1970 .. 9999)");
  }
  return Status::ok();
}

Status StreamParser::label_error(const LabelError& e) const {
  const std::string label(e.label);
  switch (e.problem) {
    case LabelProblem::kNone: break;
    case LabelProblem::kBadName: return error("bad label name");
    case LabelProblem::kNoEquals:
    case LabelProblem::kNotQuoted: return error("expected =\"...\" after label " + label);
    case LabelProblem::kBadEscape: return error("label " + label + ": bad escape \\" + std::string(1, e.found));
    case LabelProblem::kUnterminatedValue: return error("unterminated label value");
    case LabelProblem::kNoSeparator: return error("expected ',' or '}' after label " + label);
    case LabelProblem::kTooLong:
      return error("label " + label + " longer than " +
                   std::to_string(std::min(limits_.labels.max_name_bytes, limits_.labels.max_value_bytes)) + " bytes");
    case LabelProblem::kTooMany: return error("more than " + std::to_string(limits_.labels.max_labels) + " labels");
    case LabelProblem::kDuplicate: return error("label " + label + " appears twice");
  }
  return Status::ok();
}

void StreamParser::start_scrape(int64_t t_ms) {
  scrape_time_ms_ = t_ms;
  const uint64_t series = stats_.series, ignored = stats_.ignored_series;
  stats_ = StreamStats{};
  stats_.series = series;
  stats_.ignored_series = ignored;
  carry_.clear();
  after_eof_ = false;
}

Status StreamParser::parse_line(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.empty()) return Status::ok();
  if (after_eof_) return error("content after \"# EOF\"");
  if (line[0] == '#') {
    if (parse_comment(line).kind == Comment::kEof) {
      stats_.saw_eof = true;
      after_eof_ = true;
    }
    return Status::ok();
  }
  SampleLine& sample = sample_;
  switch (split_sample(line, sample)) {
    case LineProblem::kNone: break;
    case LineProblem::kNoName: return error("expected a metric name");
    case LineProblem::kUnterminatedLabelSet: return error("unterminated label set");
    case LineProblem::kNoSpace:
    case LineProblem::kNoValue: return error("expected a space before the value");
    case LineProblem::kBadValue: return error("bad value \"" + std::string(sample.value_text) + "\"");
    case LineProblem::kTrailingText: return error("unexpected text after the timestamp");
  }
  const std::string_view key = sample.series;
  const double value = sample.value;
  int64_t t_ms = scrape_time_ms_;
  if (scrape_time_ms_ >= 0) {
    // A scrape: an optional timestamp is not ours to keep (the agent samples
    // at its own time), an exemplar is skipped.
    if (!sample.timestamp_text.empty()) {
      ++stats_.timestamped;
      double ignored = 0;
      if (!parse_float(sample.timestamp_text, ignored)) {
        return error("bad timestamp \"" + std::string(sample.timestamp_text) + "\"");
      }
    }
  } else if (Status s = parse_timestamp(sample.timestamp_text, t_ms); !s) {
    return s;
  }

  int64_t handle;
  if (auto it = series_.find(key); it != series_.end()) {
    handle = it->second;
  } else {
    // New series: parse its labels once.
    if (const LabelError e = parse_labels(sample.labels, limits_.labels, label_buf_); e) return label_error(e);
    const std::string_view name = sample.name;
    label_views_.clear();
    for (const auto& [k, v] : label_buf_) label_views_.emplace_back(k, v);
    handle = sink_.on_series(name, label_views_);
    if (handle >= 0) {
      if (stats_.series >= limits_.max_series) {
        return error("more than " + std::to_string(limits_.max_series) + " distinct series of the families read" +
                     advice(limits_.series_advice));
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
      return error("more than " + std::to_string(limits_.max_samples) + " samples of the families read" +
                   advice(limits_.samples_advice));
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
Status feed_gzip_file(const std::string& path, FILE* f, std::string head, StreamParser& parser,
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

Status parse_file(const std::string& path, StreamParser& parser) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return io_error("cannot open " + path + ": " + std::strerror(errno));
  // gzip by its magic bytes, whatever the name.
  std::string head(2, '\0');
  head.resize(std::fread(head.data(), 1, 2, f.get()));
  if (head.size() == 2 && static_cast<uint8_t>(head[0]) == 0x1f && static_cast<uint8_t>(head[1]) == 0x8b) {
    std::vector<std::string> warnings;
    if (Status s = feed_gzip_file(path, f.get(), head, parser, warnings); !s) return s;
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

}  // namespace gpulens::expfmt
