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

TEST(XorChunk, EmptyDecodesNothing) {
  XorChunk c;
  size_t n = 0;
  c.decode([&](uint32_t, float) { ++n; });
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(c.memory_bytes(), 0u);
}

}  // namespace
}  // namespace gpulens
