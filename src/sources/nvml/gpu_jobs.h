// Which training job holds a GPU, from what the node itself can see: the
// labels of one gpu_job_info{job_id, source, rank, local_rank, world_size,
// group_rank} 1 series per GPU and job (docs/jobs.md).
//
// In this order, per GPU:
//   1. the Slurm job mapping directory (hpc_job_map.h): source "slurm";
//   2. the GPU processes' SLURM_JOB_ID (job_env.h): source "slurm";
//   3. their TORCHELASTIC_RUN_ID, else MASTER_ADDR:MASTER_PORT: "environment";
//   4. the owner label of the GPU's pod (kubelet/pod_owners.h): "kubernetes",
//      only when none of the above names a job.
// Rank labels come from the environment of the GPU's process of that job
// (RANK, else SLURM_PROCID; LOCAL_RANK, else SLURM_LOCALID; WORLD_SIZE, else
// SLURM_NTASKS; GROUP_RANK, else SLURM_NODEID), lowest pid first; an empty
// value is left out. Two jobs claiming one GPU are both listed.
//
//   std::vector<GpuJob> jobs = attribute_gpu_jobs(&map.jobs[0], envs);
//   frame.set(FieldId::kGpuJobInfo, 0, job_labels(jobs[0]), 1);
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "model/labels.h"
#include "sources/nvml/job_env.h"

namespace gpulens {

struct GpuJob {
  std::string job_id, source, rank, local_rank, world_size, group_rank;
  bool operator==(const GpuJob&) const = default;
};

// `mapped`: the mapping directory's ids for the GPU (null or empty: none);
// `processes`: the environments of the GPU's processes, lowest pid first;
// `pod_jobs`: the jobs of the pods holding the GPU ("namespace/owner").
std::vector<GpuJob> attribute_gpu_jobs(const std::vector<std::string>* mapped, std::span<const JobEnv* const> processes,
                                       std::span<const std::string> pod_jobs = {});

// job_id="..",source="..",rank=".." ... (escaped; empty values left out).
Labels job_labels(const GpuJob& job);

}  // namespace gpulens
