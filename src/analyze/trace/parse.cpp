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

#include "analyze/trace/reader.h"

namespace gpulens::trace {
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

std::optional<int64_t> as_int(value v) {
  auto n = as_num(v);
  if (!n || !n->integral) return std::nullopt;
  return n->i;
}

class Parser {
 public:
  Parser(std::string_view json, Trace& t) : json_(json), t_(t), names_(t.names), cats_(t.cats) {}

  Status run() {
    simdjson::ondemand::parser parser;
    simdjson::padded_string_view in(json_.data(), json_.size(), json_.size() + simdjson::SIMDJSON_PADDING);
    auto doc_r = parser.iterate(in);
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

 private:
  Status events(simdjson::ondemand::array& arr, simdjson::ondemand::document& doc) {
    bool first = true;
    for (auto el : arr) {
      size_t before = t_.events.size();
      if (first && before == 0) t_.first_is_event = true;  // cleared below if skipped
      value v;
      if (auto e = el.get(v)) return fail(e, &doc);
      object o;
      if (auto e = v.get_object().get(o)) {
        if (e != simdjson::INCORRECT_TYPE) return fail(e, &doc);
        ++t_.skipped.bad_values;
        if (first) t_.first_is_event = false;
        first = false;
        continue;
      }
      if (Status s = event(o, doc); !s) return s;
      if (first && t_.events.size() == before) t_.first_is_event = false;
      first = false;
    }
    return Status::ok();
  }

  Status event(object& o, simdjson::ondemand::document& doc) {
    Event ev;
    std::string_view cat, name;
    bool has_cat = false, has_name = false;
    std::optional<double> ts, dur;
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
    if (!ts || !has_name || !has_cat) {
      ++t_.skipped.missing_fields;
      return Status::ok();
    }
    if (cat == "Trace") {
      ++t_.skipped.trace_span;
      return Status::ok();
    }
    ev.ts = *ts;
    ev.dur = *dur;
    ev.name = names_.id(name);
    uint32_t c = cats_.id(cat);
    if (c >= kinds_.size()) kinds_.push_back(kind_of_cat(cat));
    if (c >= UINT16_MAX) return invalid_argument(t_.path + ": more than 65535 event categories");
    ev.cat = static_cast<uint16_t>(c);
    ev.kind = kinds_[c];
    t_.events.push_back(ev);
    return Status::ok();
  }

  std::string where(simdjson::ondemand::document* doc) {
    std::string w = t_.path + ":";
    const char* loc = nullptr;
    if (doc && !doc->current_location().get(loc) && loc >= json_.data() &&
        loc <= json_.data() + json_.size()) {
      auto line = 1 + std::count(json_.data(), loc, '\n');
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
  Trace& t_;
  Interner names_;
  Interner cats_;
  std::vector<EventKind> kinds_;
};

}  // namespace

Result<Trace> parse_trace(std::string_view json, std::string label) {
  Trace t;
  t.path = std::move(label);
  t.input_bytes = json.size();
  Parser p(json, t);
  if (Status s = p.run(); !s) return s;
  return t;
}

}  // namespace gpulens::trace
