// Loader of the CUDA driver library (libcuda.so.1) for `gpulens calibrate`.
//
// Every entry point is listed once in GPULENS_CUDA_ENTRIES with the symbols
// to try, newest ABI first: cuda.h maps API names onto versioned symbols
// (cuMemAlloc -> cuMemAlloc_v2) and the unversioned export is the old,
// 32-bit ABI, so the versioned name is the one that matters. All entries
// are required: calibration without any of them is impossible, and the
// error names the missing symbol.
//
//   Result<std::unique_ptr<CudaApi>> api = load_cuda("libcuda.so.1");
//   if (!api) return api.status();  // "no CUDA driver: cannot load libcuda.so.1: ..."
//   (*api)->init(0);
//
// Thread-safety: a CudaApi is immutable after load; the driver API itself
// is thread-safe. Destroying it dlcloses the library.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "calibrate/cuda_api.h"
#include "util/status.h"

namespace gpulens {

// X(member, signature, "symbol", "older symbol"...)
#define GPULENS_CUDA_ENTRIES(X)                                                                        \
  X(init, CUresult(unsigned), "cuInit")                                                                \
  X(driver_version, CUresult(int*), "cuDriverGetVersion")                                              \
  X(device_count, CUresult(int*), "cuDeviceGetCount")                                                  \
  X(device_get, CUresult(CUdevice*, int), "cuDeviceGet")                                               \
  X(device_name, CUresult(char*, int, CUdevice), "cuDeviceGetName")                                    \
  X(device_uuid, CUresult(CUuuid*, CUdevice), "cuDeviceGetUuid_v2", "cuDeviceGetUuid")                 \
  X(device_attribute, CUresult(int*, int, CUdevice), "cuDeviceGetAttribute")                           \
  X(can_access_peer, CUresult(int*, CUdevice, CUdevice), "cuDeviceCanAccessPeer")                      \
  X(primary_ctx_retain, CUresult(CUcontext*, CUdevice), "cuDevicePrimaryCtxRetain")                    \
  X(primary_ctx_release, CUresult(CUdevice), "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease") \
  X(ctx_set_current, CUresult(CUcontext), "cuCtxSetCurrent")                                           \
  X(ctx_enable_peer, CUresult(CUcontext, unsigned), "cuCtxEnablePeerAccess")                           \
  X(mem_alloc, CUresult(CUdeviceptr*, size_t), "cuMemAlloc_v2")                                        \
  X(mem_free, CUresult(CUdeviceptr), "cuMemFree_v2")                                                   \
  X(mem_host_alloc, CUresult(void**, size_t, unsigned), "cuMemHostAlloc")                              \
  X(mem_free_host, CUresult(void*), "cuMemFreeHost")                                                   \
  X(memcpy_htod_async, CUresult(CUdeviceptr, const void*, size_t, CUstream), "cuMemcpyHtoDAsync_v2")   \
  X(memcpy_dtoh_async, CUresult(void*, CUdeviceptr, size_t, CUstream), "cuMemcpyDtoHAsync_v2")         \
  X(memcpy_peer_async, CUresult(CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, size_t, CUstream),     \
    "cuMemcpyPeerAsync")                                                                               \
  X(stream_create, CUresult(CUstream*, unsigned), "cuStreamCreate")                                    \
  X(stream_destroy, CUresult(CUstream), "cuStreamDestroy_v2")                                          \
  X(stream_synchronize, CUresult(CUstream), "cuStreamSynchronize")                                     \
  X(event_create, CUresult(CUevent*, unsigned), "cuEventCreate")                                       \
  X(event_record, CUresult(CUevent, CUstream), "cuEventRecord")                                        \
  X(event_synchronize, CUresult(CUevent), "cuEventSynchronize")                                        \
  X(event_elapsed, CUresult(float*, CUevent, CUevent), "cuEventElapsedTime_v2", "cuEventElapsedTime")  \
  X(event_destroy, CUresult(CUevent), "cuEventDestroy_v2")

struct CudaApi {
#define GPULENS_CUDA_MEMBER(member, sig, ...) std::add_pointer_t<sig> member = nullptr;
  GPULENS_CUDA_ENTRIES(GPULENS_CUDA_MEMBER)
#undef GPULENS_CUDA_MEMBER

  CudaApi() = default;
  CudaApi(const CudaApi&) = delete;
  CudaApi& operator=(const CudaApi&) = delete;
  ~CudaApi();

  std::string path;
  void* handle = nullptr;

  // "CUDA_ERROR_OUT_OF_MEMORY" for 2: stable names, not the driver's text.
  static std::string_view error_name(CUresult rc);
};

// Opens `path` (default soname; the bare libcuda.so is tried when the
// soname fails) and resolves every entry.
Result<std::unique_ptr<CudaApi>> load_cuda(const std::string& path);

}  // namespace gpulens
