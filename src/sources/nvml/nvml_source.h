// The NVML source: every NVIDIA GPU on the node, read through the driver's
// own library (loaded with dlopen, see loader.h).
//
// open() loads libnvidia-ml.so.1 (path in NvmlOptions::library), initialises
// NVML, and discovers the GPUs: identity, supported calls, NVLink links,
// topology, GPM buffers, and the XID event thread. Without a driver it
// returns kNotApplicable with a one-line reason and the agent falls back.
//
// sample() hands the collection to the source's own worker thread and waits
// at most NvmlOptions::call_deadline_ms. A collection that overruns (a
// driver call that hangs) returns kDeadline and the scrape goes on with the
// last complete sample; while that collection is still stuck, later calls
// return kDeadline at once instead of queueing behind it.
//
//   auto src = make_nvml_source(options);
//   if (Status s = src->open(registry); !s) ...     // kNotApplicable: no driver
//   src->sample(frame);
//
// Faults: GPU_IS_LOST on one GPU gives gpu_up 0 for it while the others
// report; NOT_SUPPORTED leaves a field absent and the call is not retried;
// NO_PERMISSION from GPM is reported once (notices()) with the fix.
//
// Thread-safety: as Source; notices() may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sources/options.h"
#include "sources/source.h"

namespace gpulens {

class NvmlSource : public Source {
 public:
  // `xids`: the agent's XID ledger, shared with the kmsg source; null: one of its own.
  explicit NvmlSource(NvmlOptions options, std::shared_ptr<XidLedger> xids = nullptr);
  ~NvmlSource() override;
  NvmlSource(const NvmlSource&) = delete;
  NvmlSource& operator=(const NvmlSource&) = delete;

  std::string_view name() const override { return "nvml"; }
  Status open(SeriesRegistry& registry) override;
  Status sample(Frame& frame) override;

  // One-line notices given so far (each distinct notice once).
  std::vector<std::string> notices() const;
  // Full PID -> pod resolutions so far (a cached process costs none).
  uint64_t process_resolutions() const;

  struct Core;  // state shared with the worker thread

 private:
  NvmlOptions options_;
  std::shared_ptr<XidLedger> ledger_;
  std::shared_ptr<Core> core_;
};

std::unique_ptr<Source> make_nvml_source(const SourceOptions& options);

}  // namespace gpulens
