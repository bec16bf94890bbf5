// The subset of the CUDA driver API that `gpulens calibrate` uses, declared
// by the project itself so that CUDA is never a build dependency: the
// library is loaded at run time (cuda_loader.h). Types and values follow
// the public cuda.h of CUDA 12.x on LP64 Linux; the ABI-versioned symbol
// each entry point resolves to is listed in cuda_loader.h.
//
// Thread-safety: declarations only.
#pragma once

#include <cstddef>

extern "C" {

typedef int CUresult;  // enum cudaError_enum; 4 bytes
typedef int CUdevice;  // an ordinal, not a handle
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
typedef struct CUevent_st* CUevent;
struct CUuuid {
  char bytes[16];
};

}  // extern "C"

namespace gpulens::cuda {

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kErrorInvalidValue = 1;
inline constexpr CUresult kErrorOutOfMemory = 2;
inline constexpr CUresult kErrorNotInitialized = 3;
inline constexpr CUresult kErrorStubLibrary = 34;
inline constexpr CUresult kErrorDeviceUnavailable = 46;
inline constexpr CUresult kErrorNoDevice = 100;
inline constexpr CUresult kErrorInvalidDevice = 101;
inline constexpr CUresult kErrorInvalidContext = 201;
inline constexpr CUresult kErrorPeerAccessUnsupported = 217;
inline constexpr CUresult kErrorInvalidHandle = 400;
inline constexpr CUresult kErrorNotReady = 600;
inline constexpr CUresult kErrorIllegalAddress = 700;
inline constexpr CUresult kErrorPeerAccessAlreadyEnabled = 704;
inline constexpr CUresult kErrorLaunchFailed = 719;
inline constexpr CUresult kErrorUnknown = 999;

// CUdevice_attribute
inline constexpr int kAttrPciBusId = 33;
inline constexpr int kAttrPciDeviceId = 34;
inline constexpr int kAttrAsyncEngineCount = 40;
inline constexpr int kAttrPciDomainId = 50;

inline constexpr unsigned kMemHostAllocPortable = 0x01;
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDefault = 0x0;  // timing enabled

}  // namespace gpulens::cuda
