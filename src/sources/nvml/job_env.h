// The job keys of a GPU process's environment, /proc/PID/environ.
//
// Only the keys below are ever kept; every other variable (tokens, keys,
// passwords live there too) is skipped while parsing and never stored,
// logged or exported. The file is read once per new process (ProcessCache),
// at most kMaxEnvironBytes: a longer environment is cut there and only the
// variables wholly inside the cut are seen. Values longer than 128 bytes or
// with bytes outside printable ASCII are dropped; rank-like values must be
// decimal integers.
//
//   JobEnv env;
//   switch (read_job_environ("/proc/4242/environ", env)) { ... }
//   env.rank == "3"; env.job_id() == "81234";
//
// Reading another user's environ needs root or CAP_SYS_PTRACE (the kernel's
// ptrace access check); without it the read fails and the keys stay absent.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gpulens {

inline constexpr size_t kMaxEnvironBytes = 256 * 1024;

struct JobEnv {
  // Slurm (srun sets these in every task)
  std::string slurm_job_id, slurm_procid, slurm_localid, slurm_ntasks, slurm_nodeid;
  // torchrun / torch.distributed
  std::string rank, local_rank, world_size, group_rank, run_id, master_addr, master_port;

  bool empty() const;
  // The job this process belongs to and where that came from: SLURM_JOB_ID
  // ("slurm"); else TORCHELASTIC_RUN_ID unless torchrun's default "none"
  // ("environment"); else MASTER_ADDR:MASTER_PORT, the rendezvous every rank
  // of one job shares ("environment"); else empty.
  std::string job_id() const;
  std::string_view job_source() const;
};

// Parses NUL-separated KEY=VALUE entries; `truncated`: the data was cut,
// so its last, unterminated entry is ignored.
JobEnv parse_job_environ(std::string_view data, bool truncated = false);

enum class EnvironRead {
  kOk,          // read whole (env may still be empty: none of the keys)
  kTruncated,   // longer than kMaxEnvironBytes: the first kMaxEnvironBytes parsed
  kUnreadable,  // cannot be opened or read (permissions, the process is gone)
};

EnvironRead read_job_environ(const std::string& path, JobEnv& env, size_t max_bytes = kMaxEnvironBytes);

}  // namespace gpulens
