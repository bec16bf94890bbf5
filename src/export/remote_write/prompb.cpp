// Protobuf wire format for the remote_write 1.0 messages (see prompb.h).
#include "export/remote_write/prompb.h"

#include <bit>
#include <cstring>

namespace gpulens::prompb {
namespace {

// Tag bytes: (field number << 3) | wire type.
constexpr uint8_t kTagLen1 = 0x0A;    // field 1, LEN: timeseries, labels, Label.name
constexpr uint8_t kTagLen2 = 0x12;    // field 2, LEN: samples, Label.value
constexpr uint8_t kTagFixed1 = 0x09;  // field 1, I64: Sample.value
constexpr uint8_t kTagVarint2 = 0x10; // field 2, VARINT: Sample.timestamp

void append_len(std::string& out, uint8_t tag, std::string_view bytes) {
  out.push_back(static_cast<char>(tag));
  append_varint(out, bytes.size());
  out.append(bytes);
}

size_t sample_size(const Sample& s) {
  return 1 + 8 + 1 + varint_size(static_cast<uint64_t>(s.timestamp_ms));
}

// A cursor over one message's bytes.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool done() const { return b_.empty(); }

  Result<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (b_.empty()) return invalid_argument("truncated varint");
      auto byte = static_cast<uint8_t>(b_.front());
      b_.remove_prefix(1);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    return invalid_argument("varint longer than 10 bytes");
  }
  Result<std::string_view> bytes() {
    Result<uint64_t> n = varint();
    if (!n) return n.status();
    if (*n > b_.size()) return invalid_argument("length " + std::to_string(*n) + " runs past the message");
    std::string_view r = b_.substr(0, *n);
    b_.remove_prefix(*n);
    return r;
  }
  Result<uint64_t> fixed64() {
    if (b_.size() < 8) return invalid_argument("truncated fixed64");
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b_[i]);
    b_.remove_prefix(8);
    return v;
  }
  // Skips a field of an unknown number.
  Status skip(uint64_t tag) {
    switch (tag & 7) {
      case 0: return varint().status();
      case 1: return fixed64().status();
      case 2: return bytes().status();
      case 5:
        if (b_.size() < 4) return invalid_argument("truncated fixed32");
        b_.remove_prefix(4);
        return Status::ok();
      default: return invalid_argument("unsupported wire type " + std::to_string(tag & 7));
    }
  }

 private:
  std::string_view b_;
};

#define PROMPB_TRY(var, expr)             \
  auto var = (expr);                      \
  if (!var) return var.status()

Result<std::pair<std::string, std::string>> decode_label(std::string_view m) {
  std::pair<std::string, std::string> l;
  Reader r(m);
  while (!r.done()) {
    PROMPB_TRY(tag, r.varint());
    if (*tag == kTagLen1 || *tag == kTagLen2) {
      PROMPB_TRY(s, r.bytes());
      (*tag == kTagLen1 ? l.first : l.second) = std::string(*s);
    } else if (Status st = r.skip(*tag); !st.is_ok()) {
      return st;
    }
  }
  return l;
}

Result<Sample> decode_sample(std::string_view m) {
  Sample s{0, 0};
  Reader r(m);
  while (!r.done()) {
    PROMPB_TRY(tag, r.varint());
    if (*tag == kTagFixed1) {
      PROMPB_TRY(bits, r.fixed64());
      s.value = std::bit_cast<double>(*bits);
    } else if (*tag == kTagVarint2) {
      PROMPB_TRY(ts, r.varint());
      s.timestamp_ms = static_cast<int64_t>(*ts);
    } else if (Status st = r.skip(*tag); !st.is_ok()) {
      return st;
    }
  }
  return s;
}

Result<TimeSeries> decode_timeseries(std::string_view m) {
  TimeSeries ts;
  Reader r(m);
  while (!r.done()) {
    PROMPB_TRY(tag, r.varint());
    if (*tag == kTagLen1) {
      PROMPB_TRY(b, r.bytes());
      PROMPB_TRY(l, decode_label(*b));
      ts.labels.push_back(std::move(*l));
    } else if (*tag == kTagLen2) {
      PROMPB_TRY(b, r.bytes());
      PROMPB_TRY(s, decode_sample(*b));
      ts.samples.push_back(*s);
    } else if (Status st = r.skip(*tag); !st.is_ok()) {
      return st;
    }
  }
  return ts;
}

}  // namespace

double stale_nan() { return std::bit_cast<double>(kStaleNaNBits); }
bool is_stale_nan(double v) { return std::bit_cast<uint64_t>(v) == kStaleNaNBits; }

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void append_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::string encode_labels(std::span<const std::pair<std::string, std::string>> labels) {
  std::string out;
  std::string label;
  for (const auto& [name, value] : labels) {
    label.clear();
    append_len(label, kTagLen1, name);
    append_len(label, kTagLen2, value);
    append_len(out, kTagLen1, label);
  }
  return out;
}

void append_timeseries(std::string& out, std::string_view encoded_labels, std::span<const Sample> samples) {
  size_t size = encoded_labels.size();
  for (const Sample& s : samples) {
    size_t n = sample_size(s);
    size += 1 + varint_size(n) + n;
  }
  out.push_back(static_cast<char>(kTagLen1));
  append_varint(out, size);
  out.append(encoded_labels);
  for (const Sample& s : samples) {
    out.push_back(static_cast<char>(kTagLen2));
    append_varint(out, sample_size(s));
    out.push_back(static_cast<char>(kTagFixed1));
    auto bits = std::bit_cast<uint64_t>(s.value);
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
    out.push_back(static_cast<char>(kTagVarint2));
    append_varint(out, static_cast<uint64_t>(s.timestamp_ms));
  }
}

Result<std::vector<TimeSeries>> decode_write_request(std::string_view bytes) {
  std::vector<TimeSeries> out;
  Reader r(bytes);
  while (!r.done()) {
    PROMPB_TRY(tag, r.varint());
    if (*tag == kTagLen1) {
      PROMPB_TRY(b, r.bytes());
      PROMPB_TRY(ts, decode_timeseries(*b));
      out.push_back(std::move(*ts));
    } else if (Status st = r.skip(*tag); !st.is_ok()) {
      return st;
    }
  }
  return out;
}

}  // namespace gpulens::prompb
