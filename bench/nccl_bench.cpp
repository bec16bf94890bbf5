// Benchmarks for the NCCL log analyser, and the generator of the large
// synthetic logs they (and bench/nccl-throughput.sh) run on.
//
//   nccl_bench                                  run the Google Benchmark cases
//   nccl_bench --generate FILE [--bytes N]      write an N-byte log (default 1 GiB)
//
// The generated log is a 2-node x 8-GPU job over InfiniBand with GPUDirect
// RDMA as NCCL 2.19 prints it under mpirun: every rank's init, its channel
// connections, trees and summary lines, repeated (new communicators), with
// interleaved training output and blank lines, as real multi-GB logs look.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "analyze/nccl/analyzer.h"
#include "analyze/nccl/line.h"

namespace {

// One block of log text: every rank of a 16-rank communicator initialising.
std::string make_block(int round) {
  std::string out;
  char buf[512];
  auto add = [&](int rank, const char* fmt, auto... args) {
    const char* host = rank < 8 ? "gpu-node-a" : "gpu-node-b";
    int pid = (rank < 8 ? 41000 : 7000) + rank;
    int n = std::snprintf(buf, sizeof buf, "[1,%d]<stdout>:%s:%d:%d [%d] NCCL INFO ", rank, host, pid,
                          pid + 60, rank % 8);
    out.append(buf, n);
    n = std::snprintf(buf, sizeof buf, fmt, args...);
    out.append(buf, n);
    out += '\n';
  };
  for (int r = 0; r < 16; ++r) {
    add(r, "Bootstrap : Using ib0:10.0.%d.%d<0>", r / 8, 10 + r % 8);
    add(r, "NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or directory No plugin found (libnccl-net.so), using internal implementation");
    add(r, "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [2]mlx5_2:1/IB [3]mlx5_3:1/IB [RO]; OOB ib0:10.0.%d.%d<0>", r / 8, 10 + r % 8);
    add(r, "Using network IB");
    add(r, "ncclCommInitRank comm 0x55d9%08x rank %d nranks 16 cudaDev %d nvmlDev %d busId %x000 commId 0x%x - Init START",
        round * 16 + r, r, r % 8, r % 8, 0x18 + r % 8 * 0x10, round);
    add(r, "Trees [0] %d/-1/-1->%d->%d [1] %d/-1/-1->%d->%d [2] %d/-1/-1->%d->%d [3] %d/-1/-1->%d->%d", (r + 1) % 16, r,
        (r + 15) % 16, (r + 1) % 16, r, (r + 15) % 16, (r + 1) % 16, r, (r + 15) % 16, (r + 1) % 16, r, (r + 15) % 16);
    add(r, "P2P Chunksize set to 131072");
    for (int c = 0; c < 16; ++c) {
      int next = (r + 1) % 16;
      if (r % 8 == 7) {
        add(r, "Channel %02d/0 : %d[%d] -> %d[%d] [send] via NET/IB/%d/GDRDMA", c, r, r % 8, next, next % 8, c % 4);
      } else {
        add(r, "Channel %02d/0 : %d[%d] -> %d[%d] via P2P/CUMEM/read", c, r, r % 8, next, next % 8);
      }
    }
    add(r, "Connected all rings");
    add(r, "Connected all trees");
    add(r, "threadThresholds 8/8/64 | 128/8/64 | 512 | 512");
    add(r, "16 coll channels, 0 collnet channels, 0 nvls channels, 16 p2p channels, 2 p2p channels per peer");
    add(r, "comm 0x55d9%08x rank %d nranks 16 cudaDev %d nvmlDev %d busId %x000 commId 0x%x - Init COMPLETE",
        round * 16 + r, r, r % 8, r % 8, 0x18 + r % 8 * 0x10, round);
    out += "[1,0]<stdout>:epoch 3 step 1200 loss 1.2345 lr 0.0003 tokens/s 123456\n\n";
  }
  return out;
}

std::string make_log(size_t bytes) {
  std::string out;
  for (int round = 0; out.size() < bytes; ++round) out += make_block(round);
  out.resize(bytes);
  out.resize(out.rfind('\n') + 1);
  return out;
}

void BM_Analyze(benchmark::State& state) {
  const std::string log = make_log(32 << 20);
  for (auto _ : state) {
    gpulens::nccl::Analyzer a;
    std::string_view rest = log;
    while (!rest.empty()) {
      size_t nl = rest.find('\n');
      a.feed(rest.substr(0, nl));
      rest.remove_prefix(nl + 1);
    }
    benchmark::DoNotOptimize(a.finish());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_Analyze)->Unit(benchmark::kMillisecond);

void BM_Tokenize(benchmark::State& state) {
  const std::string_view line =
      "[1,7]<stdout>:gpu-node-a:41007:41067 [7] NCCL INFO Channel 03/0 : 7[7] -> 8[0] [send] via NET/IB/3/GDRDMA";
  gpulens::nccl::LogLine l;
  for (auto _ : state) benchmark::DoNotOptimize(gpulens::nccl::tokenize(line, l));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * line.size()));
}
BENCHMARK(BM_Tokenize);

int generate(const char* path, size_t bytes) {
  std::FILE* f = std::fopen(path, "wb");
  if (!f) {
    std::perror(path);
    return 1;
  }
  const std::string block = make_log(64 << 20);
  for (size_t written = 0; written < bytes; written += block.size()) {
    size_t n = std::min(block.size(), bytes - written);
    std::string_view piece(block.data(), n);
    piece = piece.substr(0, piece.rfind('\n') + 1);
    std::fwrite(piece.data(), 1, piece.size(), f);
  }
  return std::fclose(f) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "--generate") == 0) {
    size_t bytes = size_t{1} << 30;
    if (argc >= 5 && std::strcmp(argv[3], "--bytes") == 0) bytes = std::strtoull(argv[4], nullptr, 10);
    return generate(argv[2], bytes);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
