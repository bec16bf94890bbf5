// Fuzz target: gzip'd traces through the same loader `gpulens trace` uses
// (analyze/trace/reader.h load_json_text: gzip detection, the ISIZE fast
// path, streaming inflation) with a 4 MiB limit, so a bomb must stop at the
// limit while inflating. The input is handed over as an in-memory file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include <simdjson.h>

#include "analyze/trace/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz-trace", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return 0;
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  gpulens::trace::ReadOptions opts;
  opts.max_bytes = 4u << 20;
  auto text = gpulens::trace::load_json_text(path, opts, simdjson::SIMDJSON_PADDING);
  if (text.ok() && text->size() > opts.max_bytes) std::abort();
  close(fd);
  return 0;
}
