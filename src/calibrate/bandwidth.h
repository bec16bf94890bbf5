// Copy-engine bandwidth of one GPU, measured the way nvbandwidth does: a
// sample is N back-to-back asynchronous copies on one stream between two
// CUDA events, bandwidth = bytes x N / elapsed; the figure for a size is
// the median of several samples, and the peak of a direction is the best
// median over the size sweep. Host buffers are pinned (cuMemHostAlloc) and
// first touched by the calling thread, so a thread pinned to the GPU's
// CPUs beforehand gets them on the GPU's NUMA node.
//
//   CopyBench b(api, ordinal);
//   if (Status s = b.open(256 << 20); !s) ...        // buffers for the largest size
//   Result<double> h2d = b.measure(Direction::kHostToDevice, 64 << 20, opts);
//
// Directions: host->device ("rx" from the GPU's view), device->host ("tx"),
// and the same two while the opposite direction runs on a second stream
// (bidirectional; each stream's own bandwidth is reported).
//
// Thread-safety: a CopyBench is used by one thread; it makes its context
// current on that thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/cuda_loader.h"
#include "util/status.h"

namespace gpulens {

enum class Direction { kHostToDevice, kDeviceToHost, kBidirHostToDevice, kBidirDeviceToHost };
std::string_view direction_name(Direction d);  // "host->device", ...

struct SweepOptions {
  std::vector<size_t> sizes = {4u << 20, 16u << 20, 64u << 20, 256u << 20};  // bytes per copy
  int copies = 8;   // copies per timed sample
  int samples = 5;  // timed samples per size; the median is kept
};

// Median of `v` (mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v);

struct SizePoint {
  size_t bytes = 0;
  double bytes_per_second = 0;  // median of the samples
};

struct DirectionSweep {
  std::vector<SizePoint> points;
  double peak = 0;  // best median, bytes/s
  size_t peak_bytes = 0;
};

class CopyBench {
 public:
  CopyBench(const CudaApi& api, CUdevice device) : api_(api), device_(device) {}
  CopyBench(const CopyBench&) = delete;
  CopyBench& operator=(const CopyBench&) = delete;
  ~CopyBench();

  // Context, two streams, events, a device and a pinned host buffer per
  // stream of `max_bytes` each. Errors name the call and the CUDA error.
  Status open(size_t max_bytes);
  // Median bandwidth of `bytes`-sized copies in direction `d`, bytes/s.
  Result<double> measure(Direction d, size_t bytes, const SweepOptions& o);
  // Every size of `o` in direction `d`.
  Result<DirectionSweep> sweep(Direction d, const SweepOptions& o);
  // Median bandwidth of copies from this GPU's buffer to `peer`'s (peer
  // access enabled both ways first), on this GPU's stream.
  Result<double> measure_peer(CopyBench& peer, size_t bytes, const SweepOptions& o);

  CUcontext context() const { return ctx_; }

 private:
  Status check(CUresult rc, std::string_view what) const;
  // Enqueues event a, `copies` x copy(), event b on stream s.
  Status enqueue_timed(CUstream s, CUevent a, CUevent b, int copies, const std::function<CUresult()>& copy);

  const CudaApi& api_;
  CUdevice device_;
  CUcontext ctx_ = nullptr;
  CUstream stream_[2] = {nullptr, nullptr};
  CUevent start_[2] = {nullptr, nullptr}, stop_[2] = {nullptr, nullptr};
  CUdeviceptr dev_buf_[2] = {0, 0};
  void* host_buf_[2] = {nullptr, nullptr};
  size_t max_bytes_ = 0;
};

}  // namespace gpulens
