// Reading and analysing trace files: what `gpulens trace` does between its
// arguments and its output, and what `gpulens profile` does with a trace the
// in-process client uploaded (one path for both).
//
//   Result<JobReport> job = analyse_files({"rank0.json.gz", "rank1.json.gz"}, {}, {});
//   if (!job) std::cerr << job.status().message();  // one line per failing file
//   std::cout << to_text(*job);
//
// Files are read in parallel (a thread per core, at most one per file); the
// result keeps argument order, ranks from distributedInfo.rank else the
// position. Any file that cannot be read fails the whole call (no partial
// numbers), as do two files claiming the same rank.
// Thread-safety: reentrant.
#pragma once

#include <string>
#include <vector>

#include "analyze/trace/analysis.h"
#include "analyze/trace/reader.h"
#include "util/status.h"

namespace gpulens::trace {

// `progress_on_tty`: progress lines on stderr for files over 32 MiB when
// stderr is a terminal.
Result<JobReport> analyse_files(const std::vector<std::string>& files, const Options& opts,
                                const ReadOptions& read, bool progress_on_tty);

}  // namespace gpulens::trace
