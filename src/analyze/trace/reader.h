// Reading profiler trace files: plain or gzip JSON into a Trace.
//
//   ReadOptions opts;                    // opts.max_bytes caps the JSON size
//   Result<Trace> t = read_trace_file("worker0.pt.trace.json.gz", opts);
//   if (!t) std::cerr << t.status().message();   // names file, line, problem
//
// gzip is recognised by its magic bytes, not the file name, and inflated
// by util/gunzip (libdeflate for one member sized by its ISIZE trailer,
// zlib streaming when ISIZE cannot be trusted: over 4 GiB, several members).
// parse_trace() is the pure part: JSON text in, Trace out; tests call it
// directly. Malformed input gives an error naming the line, never a partial
// Trace. Events that are well-formed JSON but unusable (a complete event
// without ts, say) are skipped and counted in Trace::skipped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analyze/trace/trace.h"
#include "util/status.h"

namespace gpulens::trace {

struct ReadOptions {
  // Largest uncompressed JSON accepted; simdjson itself stops at 4 GiB.
  uint64_t max_bytes = uint64_t{3} << 30;
  // A gzip file may inflate to at most max_ratio times its own size (real
  // traces inflate 13-30 times), or ratio_floor_bytes when that is more: a
  // gzip bomb (deflate reaches ~1000:1) is stopped while it inflates, its
  // memory bounded by this, not by max_bytes.
  uint64_t max_ratio = 100;
  uint64_t ratio_floor_bytes = uint64_t{64} << 20;
  // Print progress to stderr (the CLI sets this for large inputs on a tty).
  bool progress = false;
};

Result<Trace> read_trace_file(const std::string& path, const ReadOptions& opts = {});

// Loads the file and inflates it if it is gzip. The result has at least
// `padding` spare bytes of capacity after size() for the JSON parser.
Result<std::string> load_json_text(const std::string& path, const ReadOptions& opts,
                                   size_t padding);

// Parses Chrome-trace JSON text (a {"traceEvents": [...]} object or a bare
// array of events). `json` must have simdjson::SIMDJSON_PADDING readable
// bytes after its end; `label` names the input in messages.
Result<Trace> parse_trace(std::string_view json, std::string label);

}  // namespace gpulens::trace
