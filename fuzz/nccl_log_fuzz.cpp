// Fuzz target: NCCL debug logs as `gpulens nccl` reads them
// (analyze/nccl/reader.h), then both renderings of the report.
#include <cstdint>
#include <string_view>

#include "analyze/nccl/reader.h"
#include "analyze/nccl/render.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto r = gpulens::nccl::analyze_text(std::string_view(reinterpret_cast<const char*>(data), size));
  if (r.ok()) {
    (void)gpulens::nccl::render_text(*r, false);
    (void)gpulens::nccl::render_json(*r);
  }
  return 0;
}
