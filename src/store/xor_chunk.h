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
// A chunk never costs much more than the raw floats: the moment its bits
// exceed 32 a value by more than kRawSlackBits (noise, or a pusher sending
// random bit patterns, costs up to 44 bits a value XOR-coded), it is
// rewritten as raw 32-bit values and stays raw. So a stored value costs at
// most 4 bytes plus the chunk's share of 8 bytes of slack and its 24-byte
// header: the bound the series budgets count.
//
//   XorChunk c;
//   c.append(1.5f); c.append(1.5f);
//   c.seal();                               // exact size once full
//
// 24 bytes plus its words; moved, never copied.
//   c.decode([](uint32_t i, float v) { ... });   // i = index in the chunk
#pragma once

#include <bit>
#include <cstddef>
#include <cstdlib>
#include <new>
#include <cstdint>

namespace gpulens {

class XorChunk {
 public:
  static constexpr uint32_t kMaxValues = 65535;
  // How far the XOR stream may run above 32 bits a value before the chunk
  // turns raw: a first value alone costs 12 bits over, and a noisy stretch
  // may be won back later. The most a chunk of n values holds is therefore
  // 32 n + kRawSlackBits bits.
  static constexpr uint32_t kRawSlackBits = 64;

  XorChunk() = default;
  XorChunk(XorChunk&& o) noexcept { take(o); }
  XorChunk& operator=(XorChunk&& o) noexcept {
    if (this != &o) {
      std::free(words_);
      take(o);
    }
    return *this;
  }
  XorChunk(const XorChunk&) = delete;
  XorChunk& operator=(const XorChunk&) = delete;
  ~XorChunk() { std::free(words_); }

  // Adds the next value (at most kMaxValues). Amortised O(1); allocates
  // when the words fill (doubling).
  void append(float value) {
    const uint32_t bits = std::bit_cast<uint32_t>(value);
    const uint32_t x = bits ^ prev_;
    prev_ = bits;
    ++count_;
    if (lead_ == kRaw) {
      put(bits, 32);
      return;
    }
    if (x == 0) {
      put(0, 1);
      return;
    }
    const unsigned lead = static_cast<unsigned>(std::countl_zero(x));
    const unsigned trail = static_cast<unsigned>(std::countr_zero(x));
    if (lead_ != kNoWindow && lead >= lead_ && trail >= trail_) {
      const unsigned len = 32 - lead_ - trail_;
      put((uint64_t{0b10} << len) | (x >> trail_), 2 + len);
      if (bits_ > uint64_t{32} * count_ + kRawSlackBits) to_raw();
      return;
    }
    const unsigned len = 32 - lead - trail;  // 1..32
    const uint64_t head = (uint64_t{0b11} << 10) | (uint64_t{lead} << 5) | (len - 1);
    put((head << len) | (x >> trail), 12 + len);
    lead_ = static_cast<uint8_t>(lead);
    trail_ = static_cast<uint8_t>(trail);
    if (bits_ > uint64_t{32} * count_ + kRawSlackBits) to_raw();
  }

  // Frees the spare words (call when no more appends come).
  void seal() { resize(words()); }

  // Visits every value in append order: visit(index, value). Inlined: a
  // visit that stores into an array makes this a tight decode loop.
  template <typename Visit>
  void decode(Visit&& visit) const {
    if (lead_ == kRaw) {  // two values a word, the first in the high half
      for (uint32_t i = 0; i < count_; ++i) {
        visit(i, std::bit_cast<float>(static_cast<uint32_t>(words_[i >> 1] >> ((i & 1) ? 0 : 32))));
      }
      return;
    }
    uint32_t p = 0;
    unsigned lead = 0, trail = 0;
    uint64_t pos = 0;
    const uint32_t count = count_;
    for (uint32_t i = 0; i < count;) {
      const uint64_t win = peek(pos);
      if ((win >> 63) == 0) {  // a run of equal values: one bit each
        const uint32_t run = win == 0 ? 64u : static_cast<uint32_t>(std::countl_zero(win));
        const uint32_t n = run < count - i ? run : count - i;
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
  bool raw() const { return lead_ == kRaw; }
  size_t memory_bytes() const { return size_t{cap_} * sizeof(uint64_t); }

 private:
  static constexpr uint8_t kNoWindow = 0xff;
  static constexpr uint8_t kRaw = 0xfe;  // in lead_: the values are stored raw

  // Rewrites the values so far as raw 32-bit words, in place (raw takes
  // fewer bits than the XOR stream it replaces, so the words suffice).
  void to_raw() {
    uint32_t* values = static_cast<uint32_t*>(std::malloc(size_t{count_} * sizeof(uint32_t)));
    if (values == nullptr) throw std::bad_alloc();
    decode([&](uint32_t i, float v) { values[i] = std::bit_cast<uint32_t>(v); });
    for (uint32_t w = 0; w < cap_; ++w) words_[w] = 0;
    bits_ = 0;
    for (uint32_t i = 0; i < count_; ++i) put(values[i], 32);
    std::free(values);
    lead_ = kRaw;
  }

  uint32_t words() const { return (bits_ + 63) / 64; }

  void take(XorChunk& o) {
    words_ = o.words_;
    cap_ = o.cap_;
    bits_ = o.bits_;
    prev_ = o.prev_;
    count_ = o.count_;
    lead_ = o.lead_;
    trail_ = o.trail_;
    o.words_ = nullptr;
    o.cap_ = o.bits_ = o.prev_ = 0;
    o.count_ = 0;
    o.lead_ = kNoWindow;
    o.trail_ = 0;
  }

  void resize(uint32_t cap) {
    if (cap == cap_) return;
    if (cap == 0) {
      std::free(words_);
      words_ = nullptr;
    } else {
      void* p = std::realloc(words_, size_t{cap} * sizeof(uint64_t));
      if (p == nullptr) throw std::bad_alloc();
      words_ = static_cast<uint64_t*>(p);
      for (uint32_t w = cap_; w < cap; ++w) words_[w] = 0;
    }
    cap_ = cap;
  }

  // Word `w` exists (zeroed when new).
  void need(uint32_t w) {
    if (w >= cap_) resize(cap_ == 0 ? 2 : cap_ * 2);
  }

  void put(uint64_t v, unsigned n) {  // 1 <= n <= 64, v < 2^n
    const unsigned off = bits_ & 63;
    const uint32_t w = bits_ >> 6;
    if (off == 0) {
      need(w);
      words_[w] = 0;
    }
    const unsigned room = 64 - off;
    if (n <= room) {
      words_[w] |= v << (room - n);
    } else {
      words_[w] |= v >> (n - room);
      need(w + 1);
      words_[w + 1] = v << (64 - (n - room));
    }
    bits_ += n;
  }

  // The 64 bits from bit `pos` on; bits past the end read as 0.
  uint64_t peek(uint64_t pos) const {
    const uint64_t w = pos >> 6;
    const unsigned off = static_cast<unsigned>(pos & 63);
    const uint32_t n = words();
    if (w >= n) return 0;
    const uint64_t next = w + 1 < n ? words_[w + 1] : 0;
    return (words_[w] << off) | ((next >> 1) >> (63 - off));
  }

  // 24 bytes: a series keeps one per chunk of its window. Words past
  // bits_ are zero.
  uint64_t* words_ = nullptr;
  uint32_t cap_ = 0;   // words allocated
  uint32_t bits_ = 0;  // bits written
  uint32_t prev_ = 0;  // the last value's bits
  uint16_t count_ = 0;
  uint8_t lead_ = kNoWindow, trail_ = 0;  // the window of the last XOR
};

}  // namespace gpulens
