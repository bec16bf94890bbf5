// Copy-engine bandwidth measurement; see bandwidth.h.
#include "calibrate/bandwidth.h"

#include <algorithm>
#include <cstring>

namespace gpulens {

std::string_view direction_name(Direction d) {
  switch (d) {
    case Direction::kHostToDevice: return "host->device";
    case Direction::kDeviceToHost: return "device->host";
    case Direction::kBidirHostToDevice: return "host->device (bidirectional)";
    case Direction::kBidirDeviceToHost: return "device->host (bidirectional)";
  }
  return "?";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

CopyBench::~CopyBench() {
  if (ctx_ == nullptr) return;
  api_.ctx_set_current(ctx_);
  for (int i = 0; i < 2; ++i) {
    if (start_[i] != nullptr) api_.event_destroy(start_[i]);
    if (stop_[i] != nullptr) api_.event_destroy(stop_[i]);
    if (stream_[i] != nullptr) api_.stream_destroy(stream_[i]);
    if (dev_buf_[i] != 0) api_.mem_free(dev_buf_[i]);
    if (host_buf_[i] != nullptr) api_.mem_free_host(host_buf_[i]);
  }
  api_.primary_ctx_release(device_);
}

Status CopyBench::check(CUresult rc, std::string_view what) const {
  if (rc == cuda::kSuccess) return Status::ok();
  const Code code = rc == cuda::kErrorOutOfMemory ? Code::kUnavailable : Code::kInternal;
  return {code, std::string(what) + " failed: " + std::string(CudaApi::error_name(rc))};
}

Status CopyBench::open(size_t max_bytes) {
  max_bytes_ = max_bytes;
  if (Status s = check(api_.primary_ctx_retain(&ctx_, device_), "cuDevicePrimaryCtxRetain"); !s) {
    ctx_ = nullptr;
    return s;
  }
  if (Status s = check(api_.ctx_set_current(ctx_), "cuCtxSetCurrent"); !s) return s;
  for (int i = 0; i < 2; ++i) {
    if (Status s = check(api_.stream_create(&stream_[i], cuda::kStreamNonBlocking), "cuStreamCreate"); !s) return s;
    if (Status s = check(api_.event_create(&start_[i], cuda::kEventDefault), "cuEventCreate"); !s) return s;
    if (Status s = check(api_.event_create(&stop_[i], cuda::kEventDefault), "cuEventCreate"); !s) return s;
    const std::string mib = std::to_string(max_bytes >> 20) + " MiB";
    if (Status s = check(api_.mem_alloc(&dev_buf_[i], max_bytes), "cuMemAlloc of " + mib + " on the device"); !s)
      return s;
    if (Status s = check(api_.mem_host_alloc(&host_buf_[i], max_bytes, cuda::kMemHostAllocPortable),
                         "cuMemHostAlloc of " + mib + " pinned host memory");
        !s)
      return s;
    // First touch by this (pinned) thread places the pages on its NUMA node.
    std::memset(host_buf_[i], 0x5A + i, max_bytes);
  }
  return Status::ok();
}

Status CopyBench::enqueue_timed(CUstream s, CUevent a, CUevent b, int copies, const std::function<CUresult()>& copy) {
  if (Status st = check(api_.event_record(a, s), "cuEventRecord"); !st) return st;
  for (int i = 0; i < copies; ++i) {
    if (Status st = check(copy(), "cuMemcpyAsync"); !st) return st;
  }
  return check(api_.event_record(b, s), "cuEventRecord");
}

Result<double> CopyBench::measure(Direction d, size_t bytes, const SweepOptions& o) {
  if (bytes > max_bytes_ || bytes == 0) return invalid_argument("copy size beyond the buffers");
  if (Status s = check(api_.ctx_set_current(ctx_), "cuCtxSetCurrent"); !s) return s;
  const bool h2d = d == Direction::kHostToDevice || d == Direction::kBidirHostToDevice;
  const bool bidir = d == Direction::kBidirHostToDevice || d == Direction::kBidirDeviceToHost;
  auto copy_on = [&](int i, bool to_device) {
    return [this, i, to_device, bytes] {
      return to_device ? api_.memcpy_htod_async(dev_buf_[i], host_buf_[i], bytes, stream_[i])
                       : api_.memcpy_dtoh_async(host_buf_[i], dev_buf_[i], bytes, stream_[i]);
    };
  };
  // Warm-up: the first copies of a buffer pay for mappings and clocks.
  if (Status s = check(copy_on(0, h2d)(), "warm-up copy"); !s) return s;
  if (Status s = check(api_.stream_synchronize(stream_[0]), "cuStreamSynchronize"); !s) return s;
  std::vector<double> bw;
  for (int n = 0; n < o.samples; ++n) {
    if (Status s = enqueue_timed(stream_[0], start_[0], stop_[0], o.copies, copy_on(0, h2d)); !s) return s;
    if (bidir) {
      // The interfering stream runs the opposite direction over the same span.
      if (Status s = enqueue_timed(stream_[1], start_[1], stop_[1], o.copies, copy_on(1, !h2d)); !s) return s;
    }
    if (Status s = check(api_.event_synchronize(stop_[0]), "cuEventSynchronize"); !s) return s;
    if (bidir) {
      if (Status s = check(api_.event_synchronize(stop_[1]), "cuEventSynchronize"); !s) return s;
    }
    float ms = 0;
    if (Status s = check(api_.event_elapsed(&ms, start_[0], stop_[0]), "cuEventElapsedTime"); !s) return s;
    if (!(ms > 0)) return internal_error("cuEventElapsedTime gave " + std::to_string(ms) + " ms for a copy");
    bw.push_back(static_cast<double>(bytes) * o.copies / (ms * 1e-3));
  }
  return median(std::move(bw));
}

Result<DirectionSweep> CopyBench::sweep(Direction d, const SweepOptions& o) {
  DirectionSweep out;
  for (size_t bytes : o.sizes) {
    auto r = measure(d, bytes, o);
    if (!r) return r.status();
    out.points.push_back({bytes, *r});
    if (*r > out.peak) {
      out.peak = *r;
      out.peak_bytes = bytes;
    }
  }
  return out;
}

Result<double> CopyBench::measure_peer(CopyBench& peer, size_t bytes, const SweepOptions& o) {
  if (bytes > max_bytes_ || bytes > peer.max_bytes_) return invalid_argument("copy size beyond the buffers");
  // Access is per direction: enable it in both contexts; "already enabled" is fine.
  for (auto [from, to] : {std::pair{this, &peer}, std::pair{&peer, this}}) {
    if (Status s = check(api_.ctx_set_current(from->ctx_), "cuCtxSetCurrent"); !s) return s;
    CUresult rc = api_.ctx_enable_peer(to->ctx_, 0);
    if (rc != cuda::kErrorPeerAccessAlreadyEnabled) {
      if (Status s = check(rc, "cuCtxEnablePeerAccess"); !s) return s;
    }
  }
  if (Status s = check(api_.ctx_set_current(ctx_), "cuCtxSetCurrent"); !s) return s;
  auto copy = [&] { return api_.memcpy_peer_async(peer.dev_buf_[0], peer.ctx_, dev_buf_[0], ctx_, bytes, stream_[0]); };
  if (Status s = check(copy(), "warm-up peer copy"); !s) return s;
  if (Status s = check(api_.stream_synchronize(stream_[0]), "cuStreamSynchronize"); !s) return s;
  std::vector<double> bw;
  for (int n = 0; n < o.samples; ++n) {
    if (Status s = enqueue_timed(stream_[0], start_[0], stop_[0], o.copies, copy); !s) return s;
    if (Status s = check(api_.event_synchronize(stop_[0]), "cuEventSynchronize"); !s) return s;
    float ms = 0;
    if (Status s = check(api_.event_elapsed(&ms, start_[0], stop_[0]), "cuEventElapsedTime"); !s) return s;
    if (!(ms > 0)) return internal_error("cuEventElapsedTime gave " + std::to_string(ms) + " ms for a copy");
    bw.push_back(static_cast<double>(bytes) * o.copies / (ms * 1e-3));
  }
  return median(std::move(bw));
}

}  // namespace gpulens
