// dlopen/dlsym of the CUDA entry table; see cuda_loader.h.
#include "calibrate/cuda_loader.h"

#include <dlfcn.h>

#include "util/dl_resolve.h"

namespace gpulens {

CudaApi::~CudaApi() {
  if (handle != nullptr) dlclose(handle);
}

std::string_view CudaApi::error_name(CUresult rc) {
  switch (rc) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return "CUDA_ERROR_DEINITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 214: return "CUDA_ERROR_ECC_UNCORRECTABLE";
    case 217: return "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED";
    case 304: return "CUDA_ERROR_OPERATING_SYSTEM";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 600: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 704: return "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED";
    case 711: return "CUDA_ERROR_TOO_MANY_PEERS";
    case 719: return "CUDA_ERROR_LAUNCH_FAILED";
    case 800: return "CUDA_ERROR_NOT_PERMITTED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    case 803: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 909: return "CUDA_ERROR_TIMEOUT";
    case 999: return "CUDA_ERROR_UNKNOWN";
    default: return "CUDA_ERROR_OTHER";
  }
}

Result<std::unique_ptr<CudaApi>> load_cuda(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string opened = path;
  if (handle == nullptr && path == "libcuda.so.1") {
    handle = dlopen("libcuda.so", RTLD_NOW | RTLD_LOCAL);
    opened = "libcuda.so";
  }
  if (handle == nullptr) {
    const char* why = dlerror();
    return not_applicable("no CUDA driver: cannot load " + path + (why ? std::string(": ") + why : ""));
  }
  auto api = std::make_unique<CudaApi>();
  api->handle = handle;
  api->path = opened;
#define GPULENS_CUDA_RESOLVE(member, sig, ...)                                                     \
  api->member = reinterpret_cast<std::add_pointer_t<sig>>(resolve_symbol(handle, {__VA_ARGS__}));         \
  if (api->member == nullptr) {                                                                    \
    return not_applicable(opened + " is not a usable CUDA driver: symbol " +                      \
                          std::string(*std::initializer_list<const char*>{__VA_ARGS__}.begin()) + \
                          " is missing (driver too old?)");                                        \
  }
  GPULENS_CUDA_ENTRIES(GPULENS_CUDA_RESOLVE)
#undef GPULENS_CUDA_RESOLVE
  return api;
}

}  // namespace gpulens
