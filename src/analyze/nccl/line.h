// Tokenizer for one line of NCCL_DEBUG output.
//
// NCCL prints `<host>:<pid>:<tid> [<cudaDev>] NCCL INFO <message>` and, for
// warnings, `<host>:<pid>:<tid> [<cudaDev>] <file>:<line> NCCL WARN <message>`.
// Real logs add damage in front (mpirun `[1,6]<stdout>:` tags, launcher rank
// tags, timestamps, CloudWatch table cells) or remove the prefix altogether.
// tokenize() finds the `NCCL INFO|WARN|TRACE` marker anywhere in the line and
// parses backwards from it, accepting a line whose prefix is missing.
//
//   LogLine l;
//   if (tokenize("gpu2:46654:46654 [0] NCCL INFO rank 0 nranks 8", l))
//     // l.host == "gpu2", l.pid == 46654, l.dev == 0, l.message == "rank 0 nranks 8"
//
// The views in LogLine point into the input line. No allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpulens::nccl {

enum class Level { kNone, kInfo, kWarn, kTrace };

struct LogLine {
  Level level = Level::kNone;
  std::string_view host;   // empty when the prefix is missing or damaged
  std::int64_t pid = -1;   // -1 when unknown
  int dev = -1;            // CUDA device index as the process sees it, -1 if unknown
  std::string_view where;  // "misc/socket.cc:483" on WARN lines, else empty
  std::string_view message;
};

// Fills out from a line holding an NCCL marker; false (out untouched) if the
// line has none.
bool tokenize(std::string_view line, LogLine& out);

// tokenize() for a stream of lines: consecutive lines of one process share
// their prefix byte for byte ("gpu2:46654:46655 [1] "), so the prefix parsed
// last is kept and a line that starts with it and has the marker right after
// it skips both the marker search and the prefix parse. The result is the
// same as tokenize()'s for every line (the first marker cannot start inside
// an unchanged prefix: see line.cpp).
//
// Thread-safety: one Tokenizer per thread. Memory: one prefix of at most
// kMaxPrefix bytes.
class Tokenizer {
 public:
  static constexpr size_t kMaxPrefix = 256;
  bool next(std::string_view line, LogLine& out);

 private:
  std::string prefix_;  // the bytes before the marker of the last line parsed
  // What the prefix parsed to, as offsets into the prefix.
  size_t host_at_ = 0, host_len_ = 0, where_at_ = 0, where_len_ = 0;
  std::int64_t pid_ = -1;
  int dev_ = -1;
};

// Removes what launchers and log collectors glue in front of a hostname: the
// mpirun `[1,6]<stdout>:` tag and an ISO-8601 timestamp such as
// `2025-05-16T16:39:51.208-07:00`.
std::string_view clean_host(std::string_view host);

}  // namespace gpulens::nccl
