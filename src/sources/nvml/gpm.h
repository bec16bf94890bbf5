// GpmSampler: Hopper+ GPU Performance Monitoring for one GPU.
//
// GPM metrics are computed between two counter snapshots. The sampler owns
// two snapshot buffers, allocated once when the GPU is opened, and swaps
// them: each collection takes a new snapshot into the older buffer and asks
// NVML for the metrics between the previous snapshot and this one, so every
// interval costs one nvmlGpmSampleGet and one nvmlGpmMetricsGet and no
// allocation. The first collection after open only primes the buffers.
//
//   GpmSampler gpm;
//   if (gpm.open(api, dev)) ...            // false: not Hopper+ or no GPM symbols
//   GpmValues v;
//   nvmlReturn_t rc = gpm.sample(api, dev, now_ms, v);   // v.valid[...] per metric
//
// Values are converted to catalog units: percentages to ratios in 0..1,
// MiB/s to bytes/s.
//
// Thread-safety: one sampler per GPU, used by the collecting thread only.
#pragma once

#include <array>
#include <cstdint>

#include "sources/nvml/loader.h"

namespace gpulens {

enum class GpmMetric : uint8_t {
  kGraphics, kSmActive, kSmOccupancy, kTensor, kDram, kFp64, kFp32, kFp16,
  kPcieTx, kPcieRx, kNvlinkRx, kNvlinkTx, kCount
};
inline constexpr size_t kGpmMetricCount = static_cast<size_t>(GpmMetric::kCount);

struct GpmValues {
  std::array<double, kGpmMetricCount> value{};
  std::array<bool, kGpmMetricCount> valid{};
  double get(GpmMetric m) const { return value[static_cast<size_t>(m)]; }
  bool has(GpmMetric m) const { return valid[static_cast<size_t>(m)]; }
};

class GpmSampler {
 public:
  GpmSampler() = default;
  GpmSampler(const GpmSampler&) = delete;
  GpmSampler& operator=(const GpmSampler&) = delete;
  ~GpmSampler();

  // Queries support and allocates the two buffers. Returns the NVML code of
  // the failing call, NVML_ERROR_NOT_SUPPORTED when the GPU has no GPM.
  nvmlReturn_t open(const NvmlApi& api, nvmlDevice_t dev);
  bool active() const { return api_ != nullptr; }
  // Takes a snapshot; fills `out` when a previous snapshot is at least
  // 100 ms old. Returns the NVML code of the snapshot or metrics call.
  nvmlReturn_t sample(nvmlDevice_t dev, int64_t now_ms, GpmValues& out);
  // Frees the buffers; the sampler is inactive afterwards.
  void close();

 private:
  const NvmlApi* api_ = nullptr;
  nvmlGpmSample_t buf_[2] = {nullptr, nullptr};
  int newest_ = -1;          // index of the newest valid snapshot, -1: none
  int64_t newest_ms_ = 0;
  nvmlGpmMetricsGet_t request_{};  // reused; metric ids set once
};

}  // namespace gpulens
