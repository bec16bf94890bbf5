// Reading NCCL logs from files or stdin into an Analyzer, in constant memory.
//
// Lines are read with a 1 MiB buffer; a line is handed over as a view into the
// buffer whenever it fits. Damage is skipped and counted, never fatal:
//   - lines holding NUL or other control bytes (binary garbage) are skipped;
//   - lines longer than kMaxLine are cut there, the rest is skipped;
//   - a last line without a newline (a truncated log) is still read.
// Reading fails (with the file's name) only when a file cannot be opened or
// read, or when nothing in the input is NCCL output.
//
//   Result<Report> r = analyze_paths({"node0.log", "node1.log"});   // "-" is stdin
//   if (!r) std::cerr << r.status().message();
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/nccl/analyzer.h"
#include "analyze/nccl/report.h"
#include "util/status.h"

namespace gpulens::nccl {

inline constexpr size_t kMaxLine = 64 * 1024;

// Feeds every line of f to a; name is used in error messages.
Status read_stream(std::FILE* f, std::string_view name, Analyzer& a);

// Analyses the given files together as one job ("-" reads stdin). Fails when a
// file cannot be read, when all input is empty, or when no line carries NCCL
// information.
Result<Report> analyze_paths(const std::vector<std::string>& paths);

// Same for text already in memory (tests).
Result<Report> analyze_text(std::string_view text);

}  // namespace gpulens::nccl
