// XorChunk: one series' floats over a run of records, XOR-compressed.
//
// Each value is compared with the one before it by the XOR of their 32 bits
// (Gorilla, Pelkonen et al. 2015, on float32): an equal value (a constant
// series, or absent = NaN after NaN) costs 1 bit; a change that fits the
// previous change's window of meaningful bits costs 2 bits plus that window;
// any other change 12 bits (leading zeros, length) plus its meaningful bits.
// The round trip is bit-exact for every float (NaN payloads, ±Inf,
// denormals, -0). Bits are packed most significant first into 64-bit words
// and decoded a word at a time; a run of equal values is one countl_zero.
//
//   XorChunk c;
//   c.append(1.5f); c.append(1.5f);
//   c.seal();                               // exact size once full
//   c.decode([](uint32_t i, float v) { ... });   // i = index in the chunk
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpulens {

class XorChunk {
 public:
  // Adds the next value. Amortised O(1); allocates when a word fills.
  void append(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint32_t x = bits ^ prev_;
    prev_ = bits;
    ++count_;
    if (x == 0) {
      put(0, 1);
      return;
    }
    const unsigned lead = static_cast<unsigned>(std::countl_zero(x));
    const unsigned trail = static_cast<unsigned>(std::countr_zero(x));
    if (lead_ != kNoWindow && lead >= lead_ && trail >= trail_) {
      const unsigned len = 32 - lead_ - trail_;
      put((uint64_t{0b10} << len) | (x >> trail_), 2 + len);
      return;
    }
    const unsigned len = 32 - lead - trail;  // 1..32
    const uint64_t head = (uint64_t{0b11} << 10) | (uint64_t{lead} << 5) | (len - 1);
    put((head << len) | (x >> trail), 12 + len);
    lead_ = static_cast<uint8_t>(lead);
    trail_ = static_cast<uint8_t>(trail);
  }

  // Frees the spare capacity of the word vector (call when no more appends come).
  void seal() { words_.shrink_to_fit(); }

  // Visits every value in append order: visit(index, value).
  template <typename Visit>
  void decode(Visit&& visit) const {
    uint32_t p = 0;
    unsigned lead = 0, trail = 0;
    uint64_t pos = 0;
    for (uint32_t i = 0; i < count_;) {
      const uint64_t win = peek(pos);
      if ((win >> 63) == 0) {  // a run of equal values: one bit each
        const uint32_t run = win == 0 ? 64u : static_cast<uint32_t>(std::countl_zero(win));
        const uint32_t n = run < count_ - i ? run : count_ - i;
        const float v = std::bit_cast<float>(p);
        for (uint32_t k = 0; k < n; ++k) visit(i + k, v);
        i += n;
        pos += n;
        continue;
      }
      unsigned len;
      uint64_t x;
      if (((win >> 62) & 1) == 0) {
        len = 32 - lead - trail;
        x = (win << 2) >> (64 - len);
        pos += 2 + len;
      } else {
        lead = static_cast<unsigned>((win >> 57) & 31);
        len = static_cast<unsigned>((win >> 52) & 31) + 1;
        trail = 32 - lead - len;
        x = (win << 12) >> (64 - len);
        pos += 12 + len;
      }
      p ^= static_cast<uint32_t>(x << trail);
      visit(i, std::bit_cast<float>(p));
      ++i;
    }
  }

  uint32_t size() const { return count_; }
  uint64_t bits() const { return bits_; }
  size_t memory_bytes() const { return words_.capacity() * sizeof(uint64_t); }

 private:
  static constexpr uint8_t kNoWindow = 0xff;

  void put(uint64_t v, unsigned n) {  // 1 <= n <= 64, v < 2^n
    const unsigned off = static_cast<unsigned>(bits_ & 63);
    if (off == 0) words_.push_back(0);
    const unsigned room = 64 - off;
    if (n <= room) {
      words_.back() |= v << (room - n);
    } else {
      words_.back() |= v >> (n - room);
      words_.push_back(v << (64 - (n - room)));
    }
    bits_ += n;
  }

  // The 64 bits from bit `pos` on; bits past the end read as 0.
  uint64_t peek(uint64_t pos) const {
    const size_t w = static_cast<size_t>(pos >> 6);
    const unsigned off = static_cast<unsigned>(pos & 63);
    if (w >= words_.size()) return 0;
    uint64_t v = words_[w] << off;
    if (off != 0 && w + 1 < words_.size()) v |= words_[w + 1] >> (64 - off);
    return v;
  }

  std::vector<uint64_t> words_;
  uint64_t bits_ = 0;
  uint32_t count_ = 0;
  uint32_t prev_ = 0;
  uint8_t lead_ = kNoWindow, trail_ = 0;
};

}  // namespace gpulens
