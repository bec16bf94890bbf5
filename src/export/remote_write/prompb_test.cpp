// The encoder writes the bytes the protobuf spec prescribes, and decodes back.
#include "export/remote_write/prompb.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpulens::prompb {
namespace {

std::string hex(std::string_view b) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    if (!out.empty()) out += ' ';
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string varint(uint64_t v) {
  std::string s;
  append_varint(s, v);
  return s;
}

TEST(Prompb, Varints) {
  EXPECT_EQ(hex(varint(0)), "00");
  EXPECT_EQ(hex(varint(127)), "7f");
  EXPECT_EQ(hex(varint(128)), "80 01");
  EXPECT_EQ(hex(varint(300)), "ac 02");
  EXPECT_EQ(hex(varint(static_cast<uint64_t>(int64_t{-1}))), "ff ff ff ff ff ff ff ff ff 01");
  for (uint64_t v : {0ull, 127ull, 128ull, 300ull, 1700000000000ull, ~0ull}) {
    EXPECT_EQ(varint_size(v), varint(v).size()) << v;
  }
}

TEST(Prompb, LabelBytes) {
  // TimeSeries.labels (0x0a, len 6) { Label.name (0x0a) "a", Label.value (0x12) "b" }
  EXPECT_EQ(hex(encode_labels({{{"a", "b"}}})), "0a 06 0a 01 61 12 01 62");
}

TEST(Prompb, TimeSeriesBytes) {
  std::string body;
  Sample s{1.0, 1};
  append_timeseries(body, encode_labels({{{"a", "b"}}}), {&s, 1});
  // WriteRequest.timeseries (0x0a, 21 bytes): the label (8 bytes), then
  // TimeSeries.samples (0x12, 11 bytes) { value (0x09) 1.0 as little-endian
  // IEEE 754, timestamp (0x10) varint 1 }.
  EXPECT_EQ(hex(body),
            "0a 15 0a 06 0a 01 61 12 01 62 12 0b 09 00 00 00 00 00 00 f0 3f 10 01");
}

TEST(Prompb, RoundTrip) {
  std::string body;
  std::vector<Sample> a{{0.5, 1700000000000}, {-2.25, 1700000015000}};
  std::vector<Sample> b{{stale_nan(), 1700000030000}};
  append_timeseries(body, encode_labels({{{"__name__", "gpu_power_watts"}, {"gpu", "0"}}}), a);
  append_timeseries(body, encode_labels({{{"__name__", "up"}, {"job", std::string(200, 'j')}}}), b);
  Result<std::vector<TimeSeries>> ts = decode_write_request(body);
  ASSERT_TRUE(ts.ok()) << ts.status().message();
  ASSERT_EQ(ts->size(), 2u);
  EXPECT_EQ((*ts)[0].labels, (LabelPairs{{"__name__", "gpu_power_watts"}, {"gpu", "0"}}));
  ASSERT_EQ((*ts)[0].samples.size(), 2u);
  EXPECT_EQ((*ts)[0].samples[1].value, -2.25);
  EXPECT_EQ((*ts)[0].samples[1].timestamp_ms, 1700000015000);
  EXPECT_EQ((*ts)[1].labels[1].second.size(), 200u);  // length needs a 2-byte varint
  EXPECT_TRUE(is_stale_nan((*ts)[1].samples[0].value));
  EXPECT_FALSE(is_stale_nan(std::nan("")));
}

TEST(Prompb, DecoderSkipsUnknownFieldsAndRejectsTruncation) {
  std::string body;
  Sample s{3.0, 7};
  append_timeseries(body, encode_labels({{{"a", "b"}}}), {&s, 1});
  std::string with_metadata = body + "\x1a\x02\x08\x01";  // WriteRequest.metadata = 3: ignored
  Result<std::vector<TimeSeries>> ok = decode_write_request(with_metadata);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(ok->size(), 1u);

  Result<std::vector<TimeSeries>> bad = decode_write_request(body.substr(0, body.size() - 3));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("runs past the message"), std::string::npos) << bad.status().message();
}

}  // namespace
}  // namespace gpulens::prompb
