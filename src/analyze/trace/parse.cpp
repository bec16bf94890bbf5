// parse_trace(): one simdjson on-demand pass over Chrome-trace JSON.
//
// On-demand parsing reads fields in file order without building a DOM, so the
// pass costs little more than simdjson's structural scan; everything the
// analyses do not need (args other than stream/correlation/bytes, instant and
// flow events, metadata) is skipped without being materialised.
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <unordered_map>

#include "analyze/trace/reader.h"

// parse_avx2.cpp compiles this file a second time for AVX2 (simdjson then
// uses its "haswell" kernel instead of the portable one) under another
// namespace; parse_trace() picks one at run time.
#ifndef GPULENS_PARSE_VARIANT
#define GPULENS_PARSE_VARIANT generic
#define GPULENS_PARSE_DISPATCH 1
#endif

namespace gpulens::trace {
namespace GPULENS_PARSE_VARIANT {
namespace {

using simdjson::error_code;
using simdjson::ondemand::json_type;
using simdjson::ondemand::object;
using simdjson::ondemand::value;

EventKind kind_of_cat(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return EventKind::kKernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return EventKind::kMemcpy;
  if (cat == "gpu_memset" || cat == "Memset") return EventKind::kMemset;
  if (cat == "cuda_sync") return EventKind::kCudaSync;
  if (cat == "gpu_user_annotation") return EventKind::kGpuUserAnnotation;
  if (cat == "cuda_runtime" || cat == "Runtime" || cat == "cuda_driver") return EventKind::kRuntime;
  return EventKind::kCpuOp;
}

// A number written as a JSON number or as a numeric string. Each value is
// read once (on-demand values cannot be re-read).
struct Num {
  double d = 0;
  bool integral = false;
  int64_t i = 0;
};

std::optional<Num> as_num(value v) {
  json_type t;
  if (v.type().get(t)) return std::nullopt;
  Num n;
  if (t == json_type::number) {
    // Parse the token ourselves: simdjson 3.0's get_number() gives 0 for
    // doubles with more than 19 significant digits (ns timestamps have 19+).
    std::string_view tok = v.raw_json_token();
    while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t')) tok.remove_suffix(1);
    const char* end = tok.data() + tok.size();
    auto [pi, ei] = std::from_chars(tok.data(), end, n.i);
    if (ei == std::errc() && pi == end) {
      n.integral = true;
      n.d = static_cast<double>(n.i);
      return n;
    }
    auto [pd, ed] = std::from_chars(tok.data(), end, n.d);
    if (ed != std::errc() || pd != end) return std::nullopt;
  } else if (t == json_type::string) {
    std::string_view s;
    if (v.get_string().get(s)) return std::nullopt;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n.d);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (!n.integral && std::isfinite(n.d) && n.d == std::floor(n.d) && std::fabs(n.d) < 9e18) {
    n.integral = true;
    n.i = static_cast<int64_t>(n.d);
  }
  return n;
}

std::optional<double> as_double(value v) {
  auto n = as_num(v);
  if (!n) return std::nullopt;
  return n->d;
}

// A hash of a value's JSON text: pid and tid are numbers in Kineto traces,
// strings in the autograd profiler's ("CPU functions", a remote thread).
uint64_t token_hash(value v) {
  std::string_view tok = v.raw_json_token();
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t')) tok.remove_suffix(1);
  return std::hash<std::string_view>{}(tok);
}

std::optional<int64_t> as_int(value v) {
  auto n = as_num(v);
  if (!n || !n->integral) return std::nullopt;
  return n->i;
}

class Parser {
 public:
  Parser(std::string_view json, Trace& t) : json_(json), t_(t), names_(t.names), cats_(t.cats) {}

  // Parses the events array in slices of about kSlice bytes, so that
  // simdjson's structural index (4 bytes per token) stays small however big
  // the file; the rest of the document is parsed with the array emptied.
  // Falls back to one whole-document pass when the array cannot be located.
  Status run() {
    auto open = locate_events();
    if (!open) return run_whole(json_, 0);
    size_t n = json_.size(), pos = *open + 1, close = 0;
    for (;;) {
      pos = skip_ws(pos);
      if (pos >= n) return truncated(pos);
      if (json_[pos] == ']') {
        close = pos;
        break;
      }
      // Slices end at a likely event boundary (a '}' before ',' or ']'); a
      // slice that does not parse ended inside an event and grows. The last
      // slice is found from the end of the input instead.
      size_t cut = pos + kSlice < n ? next_cut(pos + kSlice) : n;
      Status st = internal_error("no slice parsed");
      if (cut < n) {
        for (;;) {
          st = parse_slice(pos, cut);
          if (st || cut >= n) break;
          cut = next_cut(cut);
        }
      }
      if (cut >= n) {
        cut = n;
        for (int tries = 0; tries < 64 && !st; ++tries) {
          cut = prev_cut(cut, pos);
          if (cut == std::string_view::npos) break;
          st = parse_slice(pos, cut);
        }
        if (!st) {
          // No event boundary parses: the events may not be objects, or the
          // input is cut or garbage. Let simdjson name the fault, but never
          // on more than a few slices of it.
          size_t bracket = json_.rfind(']');
          if (n - pos > 8 * kSlice || bracket == std::string_view::npos || bracket < pos) return truncated(pos);
          st = parse_slice(pos, bracket);
          if (!st) return st;
          cut = bracket;
        }
      }
      pos = skip_ws(cut);
      if (pos < n && json_[pos] == ',') {
        ++pos;
      } else if (pos < n && json_[pos] == ']') {
        close = pos;
        break;
      } else {
        return pos >= n ? truncated(pos) : invalid_argument(where_offset(pos) + "expected ',' or ']' between events");
      }
    }
    if (json_[skip_ws(0)] == '[') {  // a bare array: nothing else to read
      if (skip_ws(close + 1) < n) return invalid_argument(where_offset(close + 1) + "unexpected content after the JSON document");
      return Status::ok();
    }
    std::string rest;
    rest.reserve(*open + 1 + (n - close) + simdjson::SIMDJSON_PADDING);
    rest.append(json_.substr(0, *open + 1)).append(json_.substr(close));
    size_t len = rest.size();
    rest.append(simdjson::SIMDJSON_PADDING, ' ');
    return run_whole(std::string_view(rest.data(), len), 0);
  }

 private:
  static constexpr size_t kSlice = size_t{1} << 21;

  size_t skip_ws(size_t i) const {
    while (i < json_.size() && (json_[i] == ' ' || json_[i] == '\n' || json_[i] == '\r' || json_[i] == '\t')) ++i;
    return i;
  }

  // The end (exclusive) of the first '}' at or after `from` that is followed
  // by ',' or ']': a possible end of an event; json_.size() if none.
  size_t next_cut(size_t from) const {
    for (size_t i = from; i < json_.size(); ++i) {
      i = json_.find('}', i);
      if (i == std::string_view::npos) break;
      size_t j = skip_ws(i + 1);
      if (j < json_.size() && (json_[j] == ',' || json_[j] == ']')) return i + 1;
    }
    return json_.size();
  }

  // Like next_cut, searching backwards from `before` (exclusive) to `floor`.
  size_t prev_cut(size_t before, size_t floor) const {
    while (before > floor + 1) {
      size_t i = json_.rfind('}', before - 2);
      if (i == std::string_view::npos || i < floor) break;
      size_t j = skip_ws(i + 1);
      if (j < json_.size() && (json_[j] == ',' || json_[j] == ']')) return i + 1;
      before = i + 1;
    }
    return std::string_view::npos;
  }

  // Offset of the '[' that opens the events: the document itself, or the
  // value of a top-level-looking "traceEvents" key.
  std::optional<size_t> locate_events() const {
    size_t i = skip_ws(0);
    if (i >= json_.size()) return std::nullopt;
    if (json_[i] == '[') return i;
    if (json_[i] != '{') return std::nullopt;
    size_t k = json_.find("\"traceEvents\"");
    if (k == std::string_view::npos) return std::nullopt;
    size_t c = skip_ws(k + 13);
    if (c >= json_.size() || json_[c] != ':') return std::nullopt;
    size_t a = skip_ws(c + 1);
    if (a >= json_.size() || json_[a] != '[') return std::nullopt;
    return a;
  }

  // Parses json_[begin, end) as the elements of an array. On failure the
  // Trace is left as it was.
  Status parse_slice(size_t begin, size_t end) {
    slice_.assign(1, '[');
    slice_.append(json_.substr(begin, end - begin)).push_back(']');
    return parse_slice_text(begin, nullptr);
  }

  Status parse_slice_text(size_t begin, const char** trailing) {
    size_t len = slice_.size();
    slice_.append(simdjson::SIMDJSON_PADDING, ' ');
    size_t events = t_.events.size();
    SkipCounts skipped = t_.skipped;
    uint64_t uncategorised = t_.uncategorised;
    bool first_done = first_done_, first_is_event = t_.first_is_event;
    text_ = std::string_view(slice_.data(), len);
    text_offset_ = begin;
    Status st = slice_events(trailing);
    if (!st) {
      t_.events.resize(events);
      t_.skipped = skipped;
      t_.uncategorised = uncategorised;
      first_done_ = first_done;
      t_.first_is_event = first_is_event;
    }
    return st;
  }

  Status slice_events(const char** trailing) {
    simdjson::padded_string_view in(text_.data(), text_.size(), text_.size() + simdjson::SIMDJSON_PADDING);
    simdjson::ondemand::document doc;
    if (auto e = parser_.iterate(in).get(doc)) return fail(e, nullptr);
    simdjson::ondemand::array arr;
    if (auto e = doc.get_array().get(arr)) return fail(e, &doc);
    if (Status s = events(arr, doc); !s) return s;
    const char* rest = nullptr;
    bool more = !doc.current_location().get(rest);
    if (trailing) {
      *trailing = more ? rest : nullptr;
    } else if (more) {
      return invalid_argument(where(&doc) + "unexpected content");
    }
    return Status::ok();
  }

  Status truncated(size_t pos) {
    return invalid_argument(where_offset(pos) + "truncated JSON (the events array is not closed)");
  }

  std::string where_offset(size_t pos) const {
    pos = std::min(pos, json_.size());
    return t_.path + ":" + std::to_string(1 + std::count(json_.data(), json_.data() + pos, '\n')) + ": ";
  }

  Status run_whole(std::string_view text, size_t offset) {
    text_ = text;
    text_offset_ = offset;
    simdjson::padded_string_view in(text.data(), text.size(), text.size() + simdjson::SIMDJSON_PADDING);
    auto doc_r = parser_.iterate(in);
    simdjson::ondemand::document doc;
    if (auto e = std::move(doc_r).get(doc)) return fail(e, nullptr);
    json_type t;
    if (auto e = doc.type().get(t)) return fail(e, &doc);
    bool saw_events = false;
    if (t == json_type::array) {
      simdjson::ondemand::array arr;
      if (auto e = doc.get_array().get(arr)) return fail(e, &doc);
      if (Status s = events(arr, doc); !s) return s;
      saw_events = true;
    } else if (t == json_type::object) {
      object top;
      if (auto e = doc.get_object().get(top)) return fail(e, &doc);
      for (auto field_r : top) {
        simdjson::ondemand::field field;
        std::string_view key;
        if (auto e = std::move(field_r).get(field)) return fail(e, &doc);
        if (auto e = field.unescaped_key().get(key)) return fail(e, &doc);
        value v = field.value();
        if (key == "traceEvents") {
          simdjson::ondemand::array arr;
          if (auto e = v.get_array().get(arr)) {
            return e == simdjson::INCORRECT_TYPE ? invalid_argument(where(&doc) + "\"traceEvents\" is not an array")
                                                 : fail(e, &doc);
          }
          if (Status s = events(arr, doc); !s) return s;
          saw_events = true;
        } else if (key == "distributedInfo") {
          object di;
          if (v.get_object().get(di)) continue;
          for (auto f_r : di) {
            simdjson::ondemand::field f;
            std::string_view k;
            if (auto e = std::move(f_r).get(f)) return fail(e, &doc);
            if (auto e = f.unescaped_key().get(k)) return fail(e, &doc);
            if (k == "rank" || k == "world_size") {
              if (auto i = as_int(f.value()); i && *i >= 0 && *i < (1 << 30)) {
                (k == "rank" ? t_.rank : t_.world_size) = static_cast<int>(*i);
              }
            }
          }
        }  // other keys are skipped by the iterator
      }
      const char* rest = nullptr;
      if (!doc.current_location().get(rest)) return invalid_argument(where(&doc) + "unexpected content after the JSON document");
    } else {
      return invalid_argument(t_.path + ": not a trace: the JSON document is not an object or array");
    }
    if (!saw_events) {
      return invalid_argument(t_.path + ": not a trace: no \"traceEvents\" array (is this a Chrome/Kineto trace?)");
    }
    return Status::ok();
  }

  Status events(simdjson::ondemand::array& arr, simdjson::ondemand::document& doc) {
    for (auto el : arr) {
      bool first = !first_done_;
      first_done_ = true;
      size_t before = t_.events.size();
      if (first && before == 0) t_.first_is_event = true;  // cleared below if skipped
      value v;
      if (auto e = el.get(v)) return fail(e, &doc);
      object o;
      if (auto e = v.get_object().get(o)) {
        if (e != simdjson::INCORRECT_TYPE) return fail(e, &doc);
        ++t_.skipped.bad_values;
        if (first) t_.first_is_event = false;
        continue;
      }
      if (Status s = event(o, doc); !s) return s;
      if (first && t_.events.size() == before) t_.first_is_event = false;
    }
    return Status::ok();
  }

  Status event(object& o, simdjson::ondemand::document& doc) {
    Event ev;
    std::string_view cat, name;
    bool has_cat = false, has_name = false;
    std::optional<double> ts, dur;
    uint64_t pid = 0, tid = 0;
    bool bad = false;
    for (auto field_r : o) {
      simdjson::ondemand::field field;
      std::string_view key;
      if (auto e = std::move(field_r).get(field)) return fail(e, &doc);
      if (auto e = field.unescaped_key().get(key)) return fail(e, &doc);
      value v = field.value();
      if (key == "ts") {
        ts = as_double(v);
        bad |= !ts;
      } else if (key == "dur") {
        dur = as_double(v);
        bad |= !dur;
      } else if (key == "cat") {
        has_cat = !v.get_string().get(cat);
      } else if (key == "name") {
        has_name = !v.get_string().get(name);
      } else if (key == "pid") {
        pid = token_hash(v);
      } else if (key == "tid") {
        tid = token_hash(v);
      } else if (key == "args") {
        object args;
        if (v.get_object().get(args)) continue;
        for (auto a_r : args) {
          simdjson::ondemand::field a;
          std::string_view k;
          if (auto e = std::move(a_r).get(a)) return fail(e, &doc);
          if (auto e = a.unescaped_key().get(k)) return fail(e, &doc);
          if (k == "stream") {
            if (auto i = as_int(a.value()); i && *i >= 0) ev.stream = static_cast<int32_t>(std::min<int64_t>(*i, kAllStreams));
          } else if (k == "correlation") {
            if (auto i = as_int(a.value())) ev.correlation = *i;
          } else if (k == "bytes") {
            if (auto i = as_int(a.value())) ev.bytes = *i;
          }
        }
      }
    }
    if (!dur && !bad) {
      ++t_.skipped.non_complete;
      return Status::ok();
    }
    if (bad || !std::isfinite(*dur) || *dur < 0 || (ts && !std::isfinite(*ts))) {
      ++t_.skipped.bad_values;
      return Status::ok();
    }
    if (!ts || !has_name) {
      ++t_.skipped.missing_fields;
      return Status::ok();
    }
    if (!has_cat) {
      cat = {};  // the autograd profiler's export: a CPU operator
      ++t_.uncategorised;
    }
    if (cat == "Trace") {
      ++t_.skipped.trace_span;
      return Status::ok();
    }
    ev.ts = *ts;
    ev.dur = *dur;
    ev.thread = thread_id(pid ^ (tid + 0x9e3779b97f4a7c15ULL + (pid << 6) + (pid >> 2)));
    ev.name = names_.id(name);
    uint32_t c = cats_.id(cat);
    if (c >= kinds_.size()) kinds_.push_back(kind_of_cat(cat));
    if (c >= UINT16_MAX) return invalid_argument(t_.path + ": more than 65535 event categories");
    ev.cat = static_cast<uint16_t>(c);
    ev.kind = kinds_[c];
    t_.events.push_back(ev);
    return Status::ok();
  }

  // Dense ids for (pid, tid) keys; traces have a few threads, and runs of
  // events on one thread, so the last key is checked first.
  uint32_t thread_id(uint64_t key) {
    if (key == last_thread_key_ && !threads_.empty()) return last_thread_id_;
    auto it = threads_.emplace(key, static_cast<uint32_t>(threads_.size())).first;
    last_thread_key_ = key;
    last_thread_id_ = it->second;
    return it->second;
  }

  std::string where(simdjson::ondemand::document* doc) {
    std::string w = t_.path + ":";
    const char* loc = nullptr;
    if (doc && !doc->current_location().get(loc) && loc >= text_.data() && loc <= text_.data() + text_.size()) {
      auto line = 1 + std::count(text_.data(), loc, '\n') +
                  std::count(json_.data(), json_.data() + std::min(text_offset_, json_.size()), '\n');
      w += std::to_string(line) + ":";
    } else if (doc) {
      w += " at end of input:";
    }
    return w + " ";
  }

  Status fail(error_code e, simdjson::ondemand::document* doc) {
    std::string what;
    switch (e) {
      case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      case simdjson::TAPE_ERROR:
        what = "truncated or malformed JSON (an array or object is not closed)";
        break;
      case simdjson::UNCLOSED_STRING:
        what = "truncated or malformed JSON (a string is not closed)";
        break;
      case simdjson::EMPTY:
        what = "no JSON document (empty or only whitespace)";
        break;
      case simdjson::UTF8_ERROR:
        what = "not valid UTF-8 text (binary data?)";
        break;
      case simdjson::CAPACITY:
        what = "too large for the JSON parser (4 GiB limit)";
        break;
      default:
        what = std::string("invalid JSON: ") + simdjson::error_message(e);
    }
    return invalid_argument(where(doc) + what);
  }

  std::string_view json_;
  std::string_view text_;      // what parser_ reads now: json_ or a slice copy
  size_t text_offset_ = 0;     // where text_ starts in json_ (for line numbers)
  std::string slice_;
  simdjson::ondemand::parser parser_;
  bool first_done_ = false;
  Trace& t_;
  Interner names_;
  Interner cats_;
  std::vector<EventKind> kinds_;
  std::unordered_map<uint64_t, uint32_t> threads_;
  uint64_t last_thread_key_ = 0;
  uint32_t last_thread_id_ = 0;
};

}  // namespace

Result<Trace> parse(std::string_view json, std::string label) {
  Trace t;
  t.path = std::move(label);
  t.input_bytes = json.size();
  Parser p(json, t);
  if (Status s = p.run(); !s) return s;
  return t;
}

}  // namespace GPULENS_PARSE_VARIANT

#ifdef GPULENS_PARSE_DISPATCH
#ifdef GPULENS_HAVE_AVX2_PARSER
namespace avx2 {
Result<Trace> parse(std::string_view json, std::string label);
}
#endif

Result<Trace> parse_trace(std::string_view json, std::string label) {
#ifdef GPULENS_HAVE_AVX2_PARSER
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
                           __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("pclmul") &&
                           __builtin_cpu_supports("popcnt");
  if (avx2) return avx2::parse(json, std::move(label));
#endif
  return generic::parse(json, std::move(label));
}
#endif

}  // namespace gpulens::trace
