// dlopen/dlsym of the NVML entry table; see loader.h.
#include "sources/nvml/loader.h"

#include <dlfcn.h>

#include "util/dl_resolve.h"

namespace gpulens {

NvmlApi::~NvmlApi() {
  if (handle != nullptr) dlclose(handle);
}

std::string_view NvmlApi::error_name(nvmlReturn_t rc) {
  switch (rc) {
    case 0: return "NVML_SUCCESS";
    case 1: return "NVML_ERROR_UNINITIALIZED";
    case 2: return "NVML_ERROR_INVALID_ARGUMENT";
    case 3: return "NVML_ERROR_NOT_SUPPORTED";
    case 4: return "NVML_ERROR_NO_PERMISSION";
    case 5: return "NVML_ERROR_ALREADY_INITIALIZED";
    case 6: return "NVML_ERROR_NOT_FOUND";
    case 7: return "NVML_ERROR_INSUFFICIENT_SIZE";
    case 8: return "NVML_ERROR_INSUFFICIENT_POWER";
    case 9: return "NVML_ERROR_DRIVER_NOT_LOADED";
    case 10: return "NVML_ERROR_TIMEOUT";
    case 11: return "NVML_ERROR_IRQ_ISSUE";
    case 12: return "NVML_ERROR_LIBRARY_NOT_FOUND";
    case 13: return "NVML_ERROR_FUNCTION_NOT_FOUND";
    case 14: return "NVML_ERROR_CORRUPTED_INFOROM";
    case 15: return "NVML_ERROR_GPU_IS_LOST";
    case 16: return "NVML_ERROR_RESET_REQUIRED";
    case 17: return "NVML_ERROR_OPERATING_SYSTEM";
    case 18: return "NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    case 19: return "NVML_ERROR_IN_USE";
    case 20: return "NVML_ERROR_MEMORY";
    case 21: return "NVML_ERROR_NO_DATA";
    case 25: return "NVML_ERROR_ARGUMENT_VERSION_MISMATCH";
    case 26: return "NVML_ERROR_DEPRECATED";
    case 27: return "NVML_ERROR_NOT_READY";
    case 28: return "NVML_ERROR_GPU_NOT_FOUND";
    case 29: return "NVML_ERROR_INVALID_STATE";
    case 999: return "NVML_ERROR_UNKNOWN";
    default: return "NVML_ERROR_OTHER";
  }
}

Result<std::unique_ptr<NvmlApi>> load_nvml(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string opened = path;
  if (handle == nullptr && path == "libnvidia-ml.so.1") {
    handle = dlopen("libnvidia-ml.so", RTLD_NOW | RTLD_LOCAL);
    opened = "libnvidia-ml.so";
  }
  if (handle == nullptr) {
    const char* why = dlerror();
    return not_applicable("no NVIDIA driver: cannot load " + path + (why ? std::string(": ") + why : ""));
  }
  auto api = std::make_unique<NvmlApi>();
  api->handle = handle;
  api->path = opened;
#define GPULENS_NVML_RESOLVE(member, sig, required, ...)                                       \
  api->member = reinterpret_cast<std::add_pointer_t<sig>>(resolve_symbol(handle, {__VA_ARGS__}));                         \
  if (api->member == nullptr) {                                                                 \
    if (required) {                                                                             \
      return not_applicable(opened + " is not a usable NVML: symbol " +                        \
                            std::string(*std::initializer_list<const char*>{__VA_ARGS__}.begin()) + \
                            " is missing (driver too old?)");                                   \
    }                                                                                           \
    api->missing.emplace_back(*std::initializer_list<const char*>{__VA_ARGS__}.begin());      \
  }
  GPULENS_NVML_ENTRIES(GPULENS_NVML_RESOLVE)
#undef GPULENS_NVML_RESOLVE
  return api;
}

}  // namespace gpulens
