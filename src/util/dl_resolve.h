// The first of several symbol names a dlopen'ed library exports: the NVML
// and CUDA loaders list the newest versioned name first ("cuMemcpyAsync_v2"
// before "cuMemcpyAsync") so a newer driver's entry point wins.
//
//   void* p = resolve_symbol(handle, {"nvmlInit_v2", "nvmlInit"});  // nullptr if none
//
// Thread-safety: as dlsym.
#pragma once

#include <dlfcn.h>

#include <initializer_list>

namespace gpulens {

inline void* resolve_symbol(void* handle, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (void* p = dlsym(handle, n)) return p;
  }
  return nullptr;
}

}  // namespace gpulens
