// The one gzip inflater of the program, for gzip data held in memory: a
// pushed body (Content-Encoding: gzip) and a profiler trace file. One
// member or several one after the other (RFC 1952 2.2, `cat a.gz b.gz`);
// the output never grows past a limit, so a gzip bomb (deflate reaches
// ~1000:1) is stopped while it inflates.
//
// A single member whose ISIZE trailer is plausible and within the limit is
// inflated in one call by libdeflate into a buffer of that size; anything
// else (several members, ISIZE over 4 GiB or implausible, bad data) streams
// through zlib, which also tells corrupt data from data cut short.
//
//   std::string out;
//   Gunzip g = gunzip(body, 1 << 20, out);
//   if (g.error == GunzipError::kTooLarge) ...      // 413, say
//   else if (g.error != GunzipError::kNone) ...     // 400, with g.detail
//
// Thread-safety: pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gpulens {

enum class GunzipError {
  kNone,
  kCorrupt,    // not gzip, or bad deflate data
  kTruncated,  // the data ends before the end of a member
  kTooLarge,   // would inflate to more than the limit
  kInternal,   // zlib could not start (out of memory)
};

struct Gunzip {
  GunzipError error = GunzipError::kNone;
  uint64_t bytes = 0;  // inflated so far (with kTooLarge: more than the limit)
  std::string detail;  // zlib's word on corrupt data, "" when it gave none
};

// Inflates `in` into `out` (replacing its contents), at most `limit` bytes.
// On success out.size() is the inflated size and its capacity leaves at
// least `padding` spare bytes (for a parser that reads past the end); on
// error `out` holds no meaningful data.
Gunzip gunzip(std::string_view in, uint64_t limit, std::string& out, size_t padding = 0);

}  // namespace gpulens
