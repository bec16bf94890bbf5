// OTLP/HTTP metrics in JSON (ExportMetricsServiceRequest, proto3 JSON mapping
// with OTLP's rules: lowerCamelCase keys, 64-bit integers as strings or
// numbers, enums as integers, unknown fields ignored).
#include <simdjson.h>

#include <charconv>
#include <cmath>

#include "push/push_body.h"

namespace gpulens::push {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

std::string otlp_name(std::string_view n) {
  std::string out(n);
  for (char& c : out) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':')) c = '_';
  }
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
  return out;
}

// An int64 written as a JSON string or number.
bool int_of(element e, int64_t& v) {
  if (int64_t i; e.get_int64().get(i) == simdjson::SUCCESS) {
    v = i;
    return true;
  }
  // asInt is an sfixed64: a JSON number beyond INT64_MAX (2^64-1 from a
  // client that wrote an unsigned value) is out of range, never wrapped to -1.
  if (std::string_view s; e.get_string().get(s) == simdjson::SUCCESS) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size();
  }
  return false;
}

// A double as a JSON number, or the proto3 strings "NaN", "Infinity", "-Infinity".
bool double_of(element e, double& v) {
  if (e.get_double().get(v) == simdjson::SUCCESS) return true;
  if (std::string_view s; e.get_string().get(s) == simdjson::SUCCESS) {
    if (s == "NaN") v = NAN;
    else if (s == "Infinity") v = INFINITY;
    else if (s == "-Infinity") v = -INFINITY;
    else {
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      return ec == std::errc() && p == s.data() + s.size();
    }
    return true;
  }
  return false;
}

std::string number_text(double v) {
  char buf[32];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc() ? p : buf);
}

// attributes: [{key, value: AnyValue}] -> labels (scalar values only).
Status attributes_into(element attrs, LabelPairs& labels, const std::string& where, const PushLimits& limits) {
  array arr;
  if (attrs.get_array().get(arr) != simdjson::SUCCESS) return invalid_argument(where + ": attributes is not an array");
  size_t i = 0;
  for (element kv : arr) {
    const std::string at = where + ".attributes[" + std::to_string(i++) + "]";
    std::string_view key;
    if (kv["key"].get_string().get(key) != simdjson::SUCCESS) return invalid_argument(at + ": key is not a string");
    element value;
    if (kv["value"].get(value) != simdjson::SUCCESS) continue;  // an empty AnyValue: no label
    std::string text;
    std::string_view sv;
    int64_t iv;
    double dv;
    bool bv;
    if (value["stringValue"].get_string().get(sv) == simdjson::SUCCESS) text = std::string(sv);
    else if (element e; value["intValue"].get(e) == simdjson::SUCCESS && int_of(e, iv)) text = std::to_string(iv);
    else if (element d; value["doubleValue"].get(d) == simdjson::SUCCESS && double_of(d, dv)) text = number_text(dv);
    else if (value["boolValue"].get_bool().get(bv) == simdjson::SUCCESS) text = bv ? "true" : "false";
    else continue;  // arrays, kvlists, bytes: not label material
    std::string name = otlp_name(key);
    if (name.size() > limits.max_label_length || text.size() > limits.max_label_length) {
      return invalid_argument(at + ": attribute " + std::string(key).substr(0, 64) + " longer than " +
                              std::to_string(limits.max_label_length) + " bytes (push.max_label_length)");
    }
    bool replaced = false;
    for (auto& [n, v] : labels) {
      if (n == name) {
        v = text;  // a point attribute overrides a resource attribute of the same name
        replaced = true;
      }
    }
    if (!replaced) labels.emplace_back(std::move(name), std::move(text));
    if (labels.size() > limits.max_labels) {
      return invalid_argument(at + ": more than " + std::to_string(limits.max_labels) + " labels (push.max_labels)");
    }
  }
  return Status::ok();
}

}  // namespace

Result<OtlpResult> parse_otlp_json(std::string_view body, const PushLimits& limits) {
  simdjson::dom::parser parser(std::max<size_t>(limits.max_body_bytes, 1024));
  const simdjson::padded_string padded(body);
  element root;
  if (auto err = parser.parse(padded).get(root); err != simdjson::SUCCESS) {
    return invalid_argument(std::string("OTLP JSON body is not valid JSON: ") + simdjson::error_message(err));
  }
  OtlpResult out;
  if (root.type() != simdjson::dom::element_type::OBJECT) return invalid_argument("OTLP JSON body is not an object");
  array rms;
  if (auto err = root["resourceMetrics"].get_array().get(rms); err != simdjson::SUCCESS) {
    if (err == simdjson::NO_SUCH_FIELD) return out;  // an empty request
    return invalid_argument("resourceMetrics is not an array");
  }
  size_t ri = 0, total = 0;
  for (element rm : rms) {
    const std::string rwhere = "resourceMetrics[" + std::to_string(ri++) + "]";
    OtlpResource& resource = out.resources.emplace_back();
    if (element attrs; rm["resource"]["attributes"].get(attrs) == simdjson::SUCCESS) {
      if (Status s = attributes_into(attrs, resource.attributes, rwhere + ".resource", limits); !s) return s;
    }
    array sms;
    if (rm["scopeMetrics"].get_array().get(sms) != simdjson::SUCCESS) continue;
    size_t si = 0;
    for (element sm : sms) {
      const std::string swhere = rwhere + ".scopeMetrics[" + std::to_string(si++) + "]";
      array metrics;
      if (sm["metrics"].get_array().get(metrics) != simdjson::SUCCESS) continue;
      size_t mi = 0;
      for (element m : metrics) {
        const std::string mwhere = swhere + ".metrics[" + std::to_string(mi++) + "]";
        std::string_view raw_name;
        if (m["name"].get_string().get(raw_name) != simdjson::SUCCESS || raw_name.empty()) {
          return invalid_argument(mwhere + ": metric has no name");
        }
        std::string name = otlp_name(raw_name);
        element data;
        std::string type = "gauge";
        if (m["gauge"].get(data) == simdjson::SUCCESS) {
        } else if (m["sum"].get(data) == simdjson::SUCCESS) {
          int64_t temporality = 0;
          if (element t; data["aggregationTemporality"].get(t) == simdjson::SUCCESS) int_of(t, temporality);
          bool monotonic = false;
          if (data["isMonotonic"].get_bool().get(monotonic) != simdjson::SUCCESS) monotonic = false;
          if (temporality == 1) {  // DELTA: no total to export
            array pts;
            if (data["dataPoints"].get_array().get(pts) == simdjson::SUCCESS) out.rejected_points += pts.size();
            out.rejected_message = mwhere + " (" + name + "): delta sums are not accepted, send cumulative";
            continue;
          }
          if (monotonic) {
            type = "counter";
            if (!name.ends_with("_total")) name += "_total";
          }
        } else {
          for (const char* kind : {"histogram", "exponentialHistogram", "summary"}) {
            element h;
            if (m[kind].get(h) != simdjson::SUCCESS) continue;
            array pts;
            if (h["dataPoints"].get_array().get(pts) == simdjson::SUCCESS) out.rejected_points += pts.size();
            out.rejected_message = mwhere + " (" + name + "): " + kind + " points are not accepted (gauges and sums only)";
          }
          continue;
        }
        array points;
        if (data["dataPoints"].get_array().get(points) != simdjson::SUCCESS) {
          return invalid_argument(mwhere + ": dataPoints is not an array");
        }
        size_t pi = 0;
        for (element p : points) {
          const std::string pwhere = mwhere + ".dataPoints[" + std::to_string(pi++) + "]";
          PushedSample s;
          s.name = name;
          s.type = type;
          s.where = pwhere;
          if (element attrs; p["attributes"].get(attrs) == simdjson::SUCCESS) {
            if (Status st = attributes_into(attrs, s.labels, pwhere, limits); !st) return st;
          }
          element v;
          int64_t iv;
          if (p["asDouble"].get(v) == simdjson::SUCCESS) {
            if (!double_of(v, s.value)) return invalid_argument(pwhere + ": asDouble is not a number");
          } else if (p["asInt"].get(v) == simdjson::SUCCESS) {
            if (!int_of(v, iv)) return invalid_argument(pwhere + ": asInt is not an integer in the int64 range");
            s.value = static_cast<double>(iv);
          } else {
            ++out.rejected_points;
            out.rejected_message = pwhere + " (" + name + "): point has neither asDouble nor asInt";
            continue;
          }
          resource.samples.push_back(std::move(s));
          if (++total > limits.max_series_per_push) {
            return invalid_argument("more than " + std::to_string(limits.max_series_per_push) +
                                    " points in one push (push.max_series_per_push)");
          }
        }
      }
    }
  }
  return out;
}

}  // namespace gpulens::push
