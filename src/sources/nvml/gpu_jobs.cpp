// GPU -> job attribution on the node; see gpu_jobs.h.
#include "sources/nvml/gpu_jobs.h"

#include "model/series.h"

namespace gpulens {
namespace {

void add_ranks(GpuJob& job, const JobEnv& env) {
  job.rank = !env.rank.empty() ? env.rank : env.slurm_procid;
  job.local_rank = !env.local_rank.empty() ? env.local_rank : env.slurm_localid;
  job.world_size = !env.world_size.empty() ? env.world_size : env.slurm_ntasks;
  job.group_rank = !env.group_rank.empty() ? env.group_rank : env.slurm_nodeid;
}

}  // namespace

std::vector<GpuJob> attribute_gpu_jobs(const std::vector<std::string>* mapped, std::span<const JobEnv* const> processes,
                                       std::span<const std::string> pod_jobs) {
  std::vector<GpuJob> jobs;
  if (mapped != nullptr && !mapped->empty()) {
    for (const std::string& id : *mapped) {
      GpuJob job{.job_id = id, .source = "slurm"};
      // Ranks from the process of this job; with one mapped job, also from a
      // process that names no Slurm job of its own (torchrun under sbatch).
      for (const JobEnv* env : processes) {
        if (env->slurm_job_id == id || (mapped->size() == 1 && env->slurm_job_id.empty())) {
          add_ranks(job, *env);
          break;
        }
      }
      jobs.push_back(std::move(job));
    }
    return jobs;
  }
  for (const JobEnv* env : processes) {
    std::string id = env->job_id();
    if (id.empty()) continue;
    bool known = false;
    for (const GpuJob& j : jobs) known = known || j.job_id == id;
    if (known) continue;
    GpuJob job{.job_id = std::move(id), .source = std::string(env->job_source())};
    add_ranks(job, *env);
    jobs.push_back(std::move(job));
  }
  if (!jobs.empty()) return jobs;
  for (const std::string& id : pod_jobs) {
    bool known = false;
    for (const GpuJob& j : jobs) known = known || j.job_id == id;
    if (known || id.empty()) continue;
    GpuJob job{.job_id = id, .source = "kubernetes"};
    // Ranks from the GPU's process when the GPU serves one pod's job.
    if (pod_jobs.size() == 1 && !processes.empty()) add_ranks(job, *processes.front());
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Labels job_labels(const GpuJob& job) {
  Labels out{{"job_id", job.job_id}, {"source", job.source}};
  const std::pair<const char*, const std::string*> optional[] = {
      {"rank", &job.rank}, {"local_rank", &job.local_rank}, {"world_size", &job.world_size}, {"group_rank", &job.group_rank}};
  for (const auto& [name, value] : optional) {
    if (!value->empty()) out.set(name, *value);
  }
  return out;
}

}  // namespace gpulens
