// Prometheus remote_write 1.0 protobuf, encoded and decoded by hand.
//
// Only the four messages of the 1.0 spec exist on the wire here:
//
//   WriteRequest { repeated TimeSeries timeseries = 1; }
//   TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//   Label        { string name = 1; string value = 2; }
//   Sample       { double value = 1; int64 timestamp = 2; }   // ms since epoch
//
// A WriteRequest is the concatenation of its encoded timeseries entries, so a
// sender encodes each series' labels once (encode_labels), keeps the bytes,
// and appends one entry per batch with append_timeseries:
//
//   std::string labels = encode_labels({{"__name__", "up"}, {"job", "x"}});
//   std::string body;
//   Sample s{1.0, 1700000000000};
//   append_timeseries(body, labels, {&s, 1});
//
// The decoder exists for tests and fake receivers; it accepts exactly what a
// 1.0 receiver must (unknown fields are skipped) and names what is malformed.
//
// Thread-safety: free functions over caller-owned buffers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace gpulens::prompb {

// The stale marker: a NaN with this exact bit pattern ends a series.
inline constexpr uint64_t kStaleNaNBits = 0x7ff0000000000002ull;
double stale_nan();
bool is_stale_nan(double v);

struct Sample {
  double value;
  int64_t timestamp_ms;
};

using LabelPairs = std::vector<std::pair<std::string, std::string>>;

struct TimeSeries {
  LabelPairs labels;
  std::vector<Sample> samples;
};

// Wire primitives.
size_t varint_size(uint64_t v);
void append_varint(std::string& out, uint64_t v);

// Encodes Label messages as TimeSeries field 1, in the order given (the
// caller sorts by name and leaves out empty values, as the spec requires).
std::string encode_labels(std::span<const std::pair<std::string, std::string>> labels);

// Appends one WriteRequest.timeseries entry: pre-encoded labels, then samples.
void append_timeseries(std::string& out, std::string_view encoded_labels, std::span<const Sample> samples);

Result<std::vector<TimeSeries>> decode_write_request(std::string_view bytes);

}  // namespace gpulens::prompb
