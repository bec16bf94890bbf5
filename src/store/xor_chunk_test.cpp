// XorChunk round trips every float bit-exactly: random series with gaps
// (NaN), NaN payloads, ±Inf, -0, denormals, extremes, constant runs, counter
// rates with resets, and the word boundaries of the bit stream.
#include "store/xor_chunk.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace gpulens {
namespace {

std::vector<uint32_t> round_trip(const std::vector<float>& in, bool seal) {
  XorChunk c;
  for (float v : in) c.append(v);
  if (seal) c.seal();
  EXPECT_EQ(c.size(), in.size());
  std::vector<uint32_t> out;
  uint32_t expect = 0;
  c.decode([&](uint32_t i, float v) {
    EXPECT_EQ(i, expect++);
    out.push_back(std::bit_cast<uint32_t>(v));
  });
  return out;
}

std::vector<uint32_t> bits_of(const std::vector<float>& in) {
  std::vector<uint32_t> out;
  for (float v : in) out.push_back(std::bit_cast<uint32_t>(v));
  return out;
}

// One random value of a kind a series holds.
float draw(std::mt19937& rng, float prev) {
  std::uniform_int_distribution<int> kind(0, 13);
  std::uniform_real_distribution<float> unit(0, 1);
  switch (kind(rng)) {
    case 0: return std::numeric_limits<float>::quiet_NaN();
    case 1: return std::bit_cast<float>(static_cast<uint32_t>(0x7fc00000u | (rng() & 0x3fffffu)));  // NaN with a payload
    case 2: return std::numeric_limits<float>::infinity();
    case 3: return -std::numeric_limits<float>::infinity();
    case 4: return std::numeric_limits<float>::denorm_min() * static_cast<float>(rng() % 1000);
    case 5: return (rng() & 1) ? std::numeric_limits<float>::max() : std::numeric_limits<float>::lowest();
    case 6: return -0.0f;
    case 7: return std::bit_cast<float>(static_cast<uint32_t>(rng()));  // any bit pattern
    case 8: return std::round(unit(rng) * 100);                        // an integer reading
    case 9: return std::round(unit(rng) * 1e4f) / 1e4f;                // a ratio
    default: return prev;                                              // a constant run
  }
}

TEST(XorChunk, RandomSeriesRoundTripBitExact) {
  std::mt19937 rng(29);
  for (int round = 0; round < 400; ++round) {
    const size_t n = rng() % 3000;
    std::vector<float> in;
    float prev = 0;
    for (size_t i = 0; i < n; ++i) in.push_back(prev = draw(rng, prev));
    ASSERT_EQ(round_trip(in, round % 2 == 0), bits_of(in)) << "round " << round;
  }
}

TEST(XorChunk, CounterRatesWithResetsRoundTrip) {
  // Rates as History stores them: NaN after a reset, then a noisy level.
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1);
  std::vector<float> in;
  for (int i = 0; i < 5000; ++i) {
    if (i % 700 == 0) {
      in.push_back(std::numeric_limits<float>::quiet_NaN());
      continue;
    }
    in.push_back(static_cast<float>(12.5e9 + 1e8 * noise(rng)));
  }
  EXPECT_EQ(round_trip(in, true), bits_of(in));
}

TEST(XorChunk, EveryWidthAcrossWordBoundaries) {
  // Changes of every width 1..32 bits at every offset of the stream, so that
  // values straddle each word boundary in both encodings (new window, reused).
  std::vector<float> in;
  uint32_t bits = 0;
  for (int rep = 0; rep < 3; ++rep) {
    for (unsigned width = 1; width <= 32; ++width) {
      for (unsigned shift = 0; shift + width <= 32; shift += 3) {
        const uint32_t mask = (width == 32 ? 0xffffffffu : ((1u << width) - 1)) << shift;
        bits ^= mask;
        in.push_back(std::bit_cast<float>(bits));
        in.push_back(std::bit_cast<float>(bits));  // and a repeat (1 bit)
      }
    }
  }
  EXPECT_EQ(round_trip(in, false), bits_of(in));
  EXPECT_EQ(round_trip(in, true), bits_of(in));
}

TEST(XorChunk, ConstantAndAbsentRunsCostOneBit) {
  XorChunk c;
  for (int i = 0; i < 1000; ++i) c.append(std::numeric_limits<float>::quiet_NaN());
  // The first value: 12 bits of header and its meaningful bits; then 1 bit each.
  EXPECT_LE(c.bits(), 12u + 32 + 999);
  std::vector<float> in(1000, 42.0f);
  EXPECT_EQ(round_trip(in, true), bits_of(in));
  XorChunk k;
  for (float v : in) k.append(v);
  EXPECT_LE(k.bits(), 12u + 32 + 999);
}

TEST(XorChunk, LongRunsOfEqualValuesBetweenChanges) {
  // Runs longer than a word (the decoder's countl_zero fast path) and of
  // every length around 64.
  std::vector<float> in;
  float v = 1;
  for (int run = 1; run < 200; run += 7) {
    for (int i = 0; i < run; ++i) in.push_back(v);
    v *= -1.5f;
  }
  EXPECT_EQ(round_trip(in, true), bits_of(in));
}

TEST(XorChunk, RandomBitPatternsNeverCostMoreThanRawFloats) {
  // A pusher sending random bit patterns: XOR-coded they would take up to 44
  // bits a value; the chunk turns raw, and after every append it holds at
  // most 32 bits a value plus the slack. The round trip stays exact, also
  // for the values appended after the switch.
  std::mt19937 rng(7);
  std::vector<float> in;
  XorChunk c;
  for (int i = 0; i < 3000; ++i) {
    in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
    c.append(in.back());
    ASSERT_LE(c.bits(), 32u * c.size() + XorChunk::kRawSlackBits) << "after value " << i;
  }
  EXPECT_TRUE(c.raw());
  EXPECT_EQ(c.bits(), 32u * 3000);
  EXPECT_EQ(round_trip(in, true), bits_of(in));
  EXPECT_EQ(round_trip(in, false), bits_of(in));
}

TEST(XorChunk, CompressibleChunksStayXorCoded) {
  // A first value with every bit meaningful costs 12 bits over raw: not a
  // reason to give up on the chunk. Ratios, integers and constant runs stay
  // XOR-coded and under 32 bits a value.
  for (const std::vector<float>& in : {std::vector<float>{0.5734f, 0.5734f, 0.5811f, 0.5734f},
                                       std::vector<float>(500, 0.1234567f)}) {
    XorChunk c;
    for (float v : in) c.append(v);
    EXPECT_FALSE(c.raw());
    EXPECT_EQ(round_trip(in, true), bits_of(in));
  }
  std::vector<float> counts;
  for (int i = 0; i < 600; ++i) counts.push_back(static_cast<float>(1000 + i / 7));
  XorChunk c;
  for (float v : counts) c.append(v);
  EXPECT_FALSE(c.raw());
  EXPECT_LT(c.bits(), 32u * counts.size() / 2);
}

TEST(XorChunk, TurnsRawMidChunkAndKeepsEveryValue) {
  // Constant, then random, then constant again: the switch happens in the
  // random stretch and the values before it are rewritten raw, bit-exact.
  std::mt19937 rng(11);
  std::vector<float> in(10, 3.0f);
  for (int i = 0; i < 200; ++i) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  for (int i = 0; i < 100; ++i) in.push_back(-0.0f);
  XorChunk c;
  bool switched_at_random = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool was_raw = c.raw();
    c.append(in[i]);
    if (!was_raw && c.raw()) switched_at_random = i >= 10 && i < 210;
  }
  EXPECT_TRUE(c.raw());
  EXPECT_TRUE(switched_at_random);
  EXPECT_EQ(round_trip(in, true), bits_of(in));
}

TEST(XorChunk, EmptyDecodesNothing) {
  XorChunk c;
  size_t n = 0;
  c.decode([&](uint32_t, float) { ++n; });
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(c.memory_bytes(), 0u);
}

}  // namespace
}  // namespace gpulens
