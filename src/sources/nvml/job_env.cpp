// Job keys of a process environment; see job_env.h.
#include "sources/nvml/job_env.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace gpulens {
namespace {

constexpr size_t kMaxValue = 128;

bool printable_value(std::string_view v) {
  return !v.empty() && v.size() <= kMaxValue &&
         std::all_of(v.begin(), v.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

bool decimal(std::string_view v) {
  return !v.empty() && v.size() <= 10 && std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

bool JobEnv::empty() const { return job_id().empty() && rank.empty() && slurm_procid.empty(); }

std::string JobEnv::job_id() const {
  if (!slurm_job_id.empty()) return slurm_job_id;
  if (!run_id.empty() && run_id != "none") return run_id;
  if (!master_addr.empty() && !master_port.empty()) return master_addr + ":" + master_port;
  return {};
}

std::string_view JobEnv::job_source() const {
  if (!slurm_job_id.empty()) return "slurm";
  return job_id().empty() ? std::string_view() : std::string_view("environment");
}

JobEnv parse_job_environ(std::string_view data, bool truncated) {
  struct Key {
    std::string_view name;
    std::string JobEnv::*field;
    bool number;
  };
  static constexpr Key kKeys[] = {
      {"SLURM_JOB_ID", &JobEnv::slurm_job_id, true},    {"SLURM_PROCID", &JobEnv::slurm_procid, true},
      {"SLURM_LOCALID", &JobEnv::slurm_localid, true},  {"SLURM_NTASKS", &JobEnv::slurm_ntasks, true},
      {"SLURM_NODEID", &JobEnv::slurm_nodeid, true},    {"RANK", &JobEnv::rank, true},
      {"LOCAL_RANK", &JobEnv::local_rank, true},        {"WORLD_SIZE", &JobEnv::world_size, true},
      {"GROUP_RANK", &JobEnv::group_rank, true},        {"TORCHELASTIC_RUN_ID", &JobEnv::run_id, false},
      {"MASTER_ADDR", &JobEnv::master_addr, false},     {"MASTER_PORT", &JobEnv::master_port, true},
  };
  JobEnv env;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t end = data.find('\0', pos);
    if (end == std::string_view::npos && truncated) break;  // cut mid-entry
    const std::string_view entry = data.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? data.size() : end + 1;
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    for (const Key& k : kKeys) {
      if (name != k.name) continue;
      if (k.number ? decimal(value) : printable_value(value)) env.*k.field = std::string(value);
      break;
    }
  }
  return env;
}

EnvironRead read_job_environ(const std::string& path, JobEnv& env, size_t max_bytes) {
  env = JobEnv{};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return EnvironRead::kUnreadable;
  std::string data;
  data.resize(max_bytes + 1);  // one byte more tells a cut from an exact fit
  size_t got = 0;
  bool failed = false;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0) {
      failed = true;
      break;
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  // procfs answers EACCES/EPERM at read() when the ptrace check fails.
  if (failed) return EnvironRead::kUnreadable;
  const bool truncated = got > max_bytes;
  env = parse_job_environ(std::string_view(data.data(), std::min(got, max_bytes)), truncated);
  return truncated ? EnvironRead::kTruncated : EnvironRead::kOk;
}

}  // namespace gpulens
