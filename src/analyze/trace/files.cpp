#include "analyze/trace/files.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

namespace gpulens::trace {

Result<JobReport> analyse_files(const std::vector<std::string>& files, const Options& opts,
                                const ReadOptions& read, bool progress_on_tty) {
  std::vector<Result<Trace>> results(files.size(), Result<Trace>(Status::ok()));
  std::atomic<size_t> next{0};
  bool tty = progress_on_tty && ::isatty(2) != 0;
  auto work = [&] {
    for (size_t i; (i = next++) < files.size();) {
      ReadOptions o = read;
      struct stat st {};
      o.progress = tty && ::stat(files[i].c_str(), &st) == 0 && st.st_size > (32 << 20);
      results[i] = read_trace_file(files[i], o);
    }
  };
  size_t n = std::min<size_t>(files.size(), std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (size_t k = 1; k < n; ++k) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  std::vector<Trace> traces;
  std::string errors;
  for (auto& r : results) {
    if (!r) {
      errors += (errors.empty() ? "" : "\n") + r.status().message();
      continue;
    }
    traces.push_back(std::move(r).value());
  }
  if (!errors.empty()) return invalid_argument(errors);
  std::map<int, std::string> seen;
  for (const Trace& t : traces) {
    if (!t.rank) continue;
    auto [it, fresh] = seen.emplace(*t.rank, t.path);
    if (!fresh) {
      return invalid_argument(it->second + " and " + t.path + " are both rank " + std::to_string(it->first) +
                              "; give each rank's trace once");
    }
  }
  if (tty && traces.size() > 1) std::fprintf(stderr, "analysing %zu ranks\n", traces.size());
  return analyse_job(traces, opts);
}

}  // namespace gpulens::trace
