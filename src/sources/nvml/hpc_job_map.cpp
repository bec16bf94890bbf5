// Slurm job mapping directory; see hpc_job_map.h.
#include "sources/nvml/hpc_job_map.h"

#include <algorithm>
#include <filesystem>

#include "sources/nvml/process_cache.h"

namespace gpulens {
namespace {

bool index_name(const std::string& name, int& index) {
  if (name.empty() || name.size() > 4) return false;
  if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  index = std::stoi(name);
  return true;
}

bool job_id(std::string_view v) {
  return !v.empty() && v.size() <= 128 && std::all_of(v.begin(), v.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

}  // namespace

std::vector<std::string> parse_hpc_job_file(const std::string& text, const std::string& name,
                                            std::vector<std::string>& problems) {
  std::vector<std::string> ids;
  size_t pos = 0, line_no = 0, bad = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    if (line.empty()) continue;
    if (!job_id(line)) {
      if (bad++ == 0) problems.push_back(name + ": line " + std::to_string(line_no) + " is not a job id");
      continue;
    }
    if (std::find(ids.begin(), ids.end(), line) != ids.end()) continue;
    if (ids.size() == kMaxJobsPerGpu) {
      problems.push_back(name + ": more than " + std::to_string(kMaxJobsPerGpu) + " job ids, the rest ignored");
      break;
    }
    ids.emplace_back(line);
  }
  if (bad > 1) problems.back() += " (and " + std::to_string(bad - 1) + " more lines)";
  return ids;
}

HpcJobMap read_hpc_job_map(const std::string& dir) {
  namespace fs = std::filesystem;
  HpcJobMap map;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    map.problems.push_back("cannot read the job mapping directory " + dir + ": " + ec.message());
    return map;
  }
  std::string text;
  size_t files = 0;
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    int index = 0;
    const std::string name = it->path().filename().string();
    if (!index_name(name, index)) continue;
    if (++files > kMaxHpcJobFiles) {
      map.problems.push_back(dir + ": more than " + std::to_string(kMaxHpcJobFiles) + " files, the rest ignored");
      break;
    }
    const std::string path = (fs::path(dir) / name).string();
    if (!it->is_regular_file(ec) || !read_small_file(path, text)) {
      map.problems.push_back(path + ": not a readable file");
      continue;
    }
    if (text.size() > kMaxHpcJobFileBytes) {
      map.problems.push_back(path + ": larger than " + std::to_string(kMaxHpcJobFileBytes / 1024) +
                             " KiB, only its start read");
      text.resize(kMaxHpcJobFileBytes);
      if (auto nl = text.rfind('\n'); nl != std::string::npos) text.resize(nl + 1);
    }
    auto ids = parse_hpc_job_file(text, path, map.problems);
    if (!ids.empty()) map.jobs[index] = std::move(ids);
  }
  return map;
}

}  // namespace gpulens
