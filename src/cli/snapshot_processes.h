// The parts of `gpulens snapshot` around the GPU table: the host line above
// it (host, driver, CUDA version, time of the sample) and the processes of
// every GPU below it (pid, user, command, device memory, SM share,
// namespace/pod/container, MIG instance), as nvidia-smi and nvitop list them.
//
// Both read the agent's current values (snapshot_values.h): the host line
// its host, driver, CUDA and time, the process table the gpu_process_* fields of each GPU
// (their labels pid, namespace, pod, container and, in MIG mode,
// gpu_instance_id/compute_instance_id). User and command are not in the
// agent's data: they are read from <proc_root>/<pid> (status: real uid,
// cmdline, else comm) when the processes are on this host; with an empty
// proc_root (another host, simulated data) they show "-".
//
//   print_snapshot_header(values, std::cout);
//   ...the GPU table...
//   print_snapshot_processes(values, "/proc", std::cout);
//
// Thread-safety: pure functions of their arguments (and of /proc).
#pragma once

#include <ostream>
#include <string>

#include "cli/snapshot_values.h"

namespace gpulens::cli {

struct ProcessInfo {
  std::string user = "-";     // login name, else the numeric uid
  std::string command = "-";  // cmdline with blanks for NULs, else [comm]
};
ProcessInfo read_process_info(const std::string& proc_root, unsigned pid);

// "host node-7   driver 550.54.15   CUDA 12.4   2026-12-01 13:20:05 UTC"
void print_snapshot_header(const SnapshotValues& values, std::ostream& out);
// The PROCESSES table.
void print_snapshot_processes(const SnapshotValues& values, const std::string& proc_root, std::ostream& out);

}  // namespace gpulens::cli
