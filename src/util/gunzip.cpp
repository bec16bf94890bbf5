// Bounded gzip inflation: libdeflate for one member sized by its trailer,
// zlib streaming for the rest.
#include "util/gunzip.h"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace gpulens {
namespace {

// zlib counts in 32-bit units: feed and drain at most 1 GiB a call.
constexpr size_t kZlibStep = size_t{1} << 30;

Gunzip gunzip_zlib(std::string_view in, uint64_t limit, std::string& out, size_t padding) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) return {GunzipError::kInternal, 0, "zlib could not start"};
  std::unique_ptr<z_stream, decltype(&inflateEnd)> guard(&zs, inflateEnd);
  const auto* base = reinterpret_cast<const Bytef*>(in.data());
  zs.next_in = const_cast<Bytef*>(base);
  const uint64_t cap = limit < UINT64_MAX ? limit + 1 : limit;  // one byte past the limit tells "too large"
  uint64_t used = 0;
  out.resize(std::min<uint64_t>(std::max<uint64_t>(uint64_t{in.size()} * 4, 64 << 10), cap));
  for (;;) {
    zs.avail_in = static_cast<uInt>(std::min<size_t>(in.size() - (zs.next_in - base), kZlibStep));
    if (used == out.size()) out.resize(std::min<uint64_t>(uint64_t{out.size()} * 2, cap));
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    zs.avail_out = static_cast<uInt>(std::min<uint64_t>(out.size() - used, kZlibStep));
    const uInt before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    used += before - zs.avail_out;
    if (used > limit) return {GunzipError::kTooLarge, used, ""};
    if (rc == Z_STREAM_END) {
      if (static_cast<size_t>(zs.next_in - base) >= in.size()) break;
      inflateReset(&zs);  // another member follows
      continue;
    }
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) return {GunzipError::kTruncated, used, ""};
    if (rc != Z_OK && rc != Z_BUF_ERROR) return {GunzipError::kCorrupt, used, zs.msg != nullptr ? zs.msg : ""};
  }
  out.resize(used);
  out.reserve(used + padding);
  return {GunzipError::kNone, used, ""};
}

}  // namespace

Gunzip gunzip(std::string_view in, uint64_t limit, std::string& out, size_t padding) {
  if (in.size() >= 18) {
    uint32_t isize = 0;
    std::memcpy(&isize, in.data() + in.size() - 4, 4);  // little-endian on every target we build
    // ISIZE is the size mod 2^32 and describes only the last member; trust
    // it only when it is plausible for deflate (which expands at most
    // ~1032:1) and within the limit.
    const bool plausible = isize >= in.size() / 2 && isize / 1100 <= in.size() && isize <= limit;
    if (plausible) {
      out.resize(size_t{isize} + padding);
      std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)> d(
          libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
      size_t in_used = 0, out_used = 0;
      if (d != nullptr &&
          libdeflate_gzip_decompress_ex(d.get(), in.data(), in.size(), out.data(), isize, &in_used, &out_used) ==
              LIBDEFLATE_SUCCESS &&
          in_used == in.size() && out_used == isize) {
        out.resize(out_used);
        return {GunzipError::kNone, out_used, ""};
      }
      // Several members, or bad data: zlib reads it again and says which.
    }
  }
  return gunzip_zlib(in, limit, out, padding);
}

}  // namespace gpulens
