// gpuload: a small CUDA load generator that moves one GPU signal at a time,
// so that tools/device-check.sh can check that gpulens sees it.
//
//   gpuload <mode> [seconds] [device]
//   modes: gemm    tensor-core FP16 matrix multiply (WMMA)  -> tensor activity high
//          memcpy  device-to-device streaming copy          -> DRAM bandwidth utilisation high
//          h2d     pinned host-to-device copies             -> PCIe RX high
//          d2h     pinned device-to-host copies             -> PCIe TX high
//          tiny    a flood of empty kernels                 -> GPU util high, SM active low
//          idle    holds 4 GiB of device memory, runs nothing -> util 0, memory used
//
// It prints one line with what it did (bytes moved, kernels launched) so the
// check can compare against the agent's counters.
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#define CHECK(x)                                                                    \
  do {                                                                              \
    cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                        \
      std::fprintf(stderr, "gpuload: %s: %s\n", #x, cudaGetErrorString(e_));        \
      std::exit(1);                                                                 \
    }                                                                               \
  } while (0)

namespace {

using clk = std::chrono::steady_clock;

// Each warp keeps its 16x16x16 WMMA fragments in registers and issues
// mma_sync back to back: the tensor pipes stay busy, memory barely moves.
__global__ void wmma_gemm(const half* a, const half* b, float* c, int reps) {
#if __CUDA_ARCH__ >= 700
  using namespace nvcuda;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, b, 16);
  for (int r = 0; r < reps; ++r) wmma::mma_sync(fc, fa, fb, fc);
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  wmma::store_matrix_sync(c + (warp % 1024) * 256, fc, 16, wmma::mem_row_major);
#endif
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) out[i] = in[i];
}

// One block that spins ~20 us: the GPU is never idle (util high) while
// one SM of many is used (SM active low) -- the "kernels too small" shape.
__global__ void tiny_kernel() {
  const long long start = clock64();
  while (clock64() - start < 30000) {
  }
}

bool running(clk::time_point end) { return clk::now() < end; }

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gpuload gemm|memcpy|h2d|d2h|tiny|idle [seconds] [device]\n");
    return 2;
  }
  const char* mode = argv[1];
  const double seconds = argc > 2 ? std::atof(argv[2]) : 20.0;
  const int device = argc > 3 ? std::atoi(argv[3]) : 0;
  CHECK(cudaSetDevice(device));
  const auto end = clk::now() + std::chrono::milliseconds(static_cast<long>(seconds * 1000));
  double bytes = 0, launches = 0;

  if (std::strcmp(mode, "gemm") == 0) {
    half *a, *b;
    float* c;
    CHECK(cudaMalloc(&a, sizeof(half) * 256));
    CHECK(cudaMalloc(&b, sizeof(half) * 256));
    CHECK(cudaMalloc(&c, sizeof(float) * 256 * 1024));
    CHECK(cudaMemset(a, 0, sizeof(half) * 256));
    CHECK(cudaMemset(b, 0, sizeof(half) * 256));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    while (running(end)) {
      wmma_gemm<<<sms * 8, 256>>>(a, b, c, 100000);
      CHECK(cudaDeviceSynchronize());
      launches += 1;
    }
  } else if (std::strcmp(mode, "memcpy") == 0) {
    const size_t n = size_t(1) << 28;  // 1 GiB each side (n/4 float4 elements)
    float4 *in, *out;
    CHECK(cudaMalloc(&in, n * sizeof(float4) / 4));
    CHECK(cudaMalloc(&out, n * sizeof(float4) / 4));
    int sms = 0;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    while (running(end)) {
      copy_kernel<<<sms * 8, 512>>>(in, out, n / 4);
      CHECK(cudaDeviceSynchronize());
      bytes += 2.0 * n * sizeof(float4) / 4;
    }
  } else if (std::strcmp(mode, "h2d") == 0 || std::strcmp(mode, "d2h") == 0) {
    const bool h2d = mode[0] == 'h';
    const size_t size = size_t(256) << 20;
    void *host, *dev;
    CHECK(cudaMallocHost(&host, size));
    CHECK(cudaMalloc(&dev, size));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    while (running(end)) {
      for (int i = 0; i < 8; ++i) {
        CHECK(h2d ? cudaMemcpyAsync(dev, host, size, cudaMemcpyHostToDevice, s)
                  : cudaMemcpyAsync(host, dev, size, cudaMemcpyDeviceToHost, s));
      }
      CHECK(cudaStreamSynchronize(s));
      bytes += 8.0 * size;
    }
  } else if (std::strcmp(mode, "tiny") == 0) {
    while (running(end)) {
      for (int i = 0; i < 1000; ++i) tiny_kernel<<<1, 32>>>();
      CHECK(cudaDeviceSynchronize());
      launches += 1000;
    }
  } else if (std::strcmp(mode, "idle") == 0) {
    void* p;
    CHECK(cudaMalloc(&p, size_t(4) << 30));
    CHECK(cudaMemset(p, 1, size_t(4) << 30));
    CHECK(cudaDeviceSynchronize());
    std::this_thread::sleep_until(end);
  } else {
    std::fprintf(stderr, "gpuload: unknown mode %s\n", mode);
    return 2;
  }
  std::printf("gpuload mode=%s seconds=%.1f bytes=%.0f launches=%.0f\n", mode, seconds, bytes, launches);
  return 0;
}
