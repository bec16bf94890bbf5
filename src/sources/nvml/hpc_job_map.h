// Slurm's GPU -> job mapping directory, in the format dcgm-exporter reads
// with --hpc-job-mapping-dir: one file per GPU, named by the GPU's index
// ("0", "1", ...), holding the id of each job that holds the GPU, one per
// line. A Slurm prolog writes the file, the epilog removes it.
//
//   HpcJobMap map = read_hpc_job_map("/run/dcgm-job-map");
//   map.jobs[3] == {"81234"};
//   for (auto& p : map.problems) log(p);   // "…/2: line 1 is not a job id"
//
// Bounded: at most kMaxHpcJobFiles files and kMaxHpcJobFileBytes per file
// are read, at most kMaxJobsPerGpu ids per GPU kept. A file whose name is
// not an index is skipped; a line that is not a job id (empty after
// trimming spaces is fine; longer than 128 bytes, spaces or bytes outside
// printable ASCII inside) is skipped and named in `problems`, the other
// lines are kept. A directory that cannot be read is one problem and no jobs.
//
// Thread-safety: pure function (reads the filesystem).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace gpulens {

inline constexpr size_t kMaxHpcJobFiles = 1024;
inline constexpr size_t kMaxHpcJobFileBytes = 64 * 1024;
inline constexpr size_t kMaxJobsPerGpu = 16;

struct HpcJobMap {
  std::map<int, std::vector<std::string>> jobs;  // GPU index -> job ids, in file order, no duplicates
  std::vector<std::string> problems;             // one line each, naming the file
};

HpcJobMap read_hpc_job_map(const std::string& dir);

// The job ids of one mapping file's text; problems get "<name>: " prefixed.
std::vector<std::string> parse_hpc_job_file(const std::string& text, const std::string& name,
                                            std::vector<std::string>& problems);

}  // namespace gpulens
