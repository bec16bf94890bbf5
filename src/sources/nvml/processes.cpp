// Per-process GPU memory and SM share, with pod identity, and the GPU's jobs; see gpu.h.
#include <algorithm>
#include <cstring>

#include "sources/nvml/gpu.h"
#include "sources/kubelet/pod_directory.h"
#include "sources/nvml/gpu_jobs.h"
#include "sources/nvml/process_cache.h"

namespace gpulens {

namespace {

// Sizing protocol: try the buffer we have, grow once on INSUFFICIENT_SIZE
// (with headroom: the list can grow between the two calls).
nvmlReturn_t list_processes(const NvmlApi& api, nvmlDevice_t dev, std::vector<unsigned char>& buf, size_t elem,
                            unsigned& count) {
  nvmlReturn_t rc = NVML_ERROR_INSUFFICIENT_SIZE;
  for (int attempt = 0; attempt < 2 && rc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
    count = static_cast<unsigned>(buf.size() / elem);
    rc = api.get_compute_processes(dev, &count, count == 0 ? nullptr : reinterpret_cast<nvmlProcessInfo_t*>(buf.data()));
    if (rc == NVML_ERROR_INSUFFICIENT_SIZE) buf.resize((count + 8) * elem);
  }
  if (rc != NVML_SUCCESS) count = 0;
  return rc;
}

}  // namespace

void collect_processes(CollectContext& ctx, GpuState& gpu, ProcessCache& cache) {
  const NvmlApi& api = ctx.api;
  gpu.job_processes.clear();
  if (gpu.lost || api.get_compute_processes == nullptr || gpu.off.test(static_cast<size_t>(Probe::kProcesses))) return;
  // In MIG mode each instance lists its own processes (the whole-GPU list
  // needs privilege there); their series carry the instance's MIG labels.
  struct Listed {
    const std::vector<unsigned char>* buf;
    unsigned count;
    const MigInstance* mig;  // null: the whole GPU
  };
  std::vector<Listed> lists;
  if (gpu.mig.enabled()) {
    for (const auto& inst : gpu.mig.instances) {
      unsigned n = 0;
      if (list_processes(api, inst->dev, inst->proc_buf, gpu.proc_elem, n) == NVML_SUCCESS) {
        lists.push_back({&inst->proc_buf, n, inst.get()});
      }
    }
  } else {
    unsigned n = 0;
    nvmlReturn_t rc = list_processes(api, gpu.dev, gpu.proc_buf, gpu.proc_elem, n);
    if (rc != NVML_SUCCESS) {
      if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND) gpu.off.set(static_cast<size_t>(Probe::kProcesses));
      return;
    }
    lists.push_back({&gpu.proc_buf, n, nullptr});
  }

  // SM share per process; an absent process had 0 % in the last period.
  unsigned samples = 0;
  bool have_util = false;
  if (!gpu.slow_now) {
    // Slow tier: the SM shares of the last read (~2.7 ms per call on an H200).
    have_util = gpu.util_have;
    samples = gpu.util_samples;
  } else if (api.get_process_utilization != nullptr && !gpu.off.test(static_cast<size_t>(Probe::kProcessUtil))) {
    nvmlReturn_t urc = NVML_ERROR_INSUFFICIENT_SIZE;
    for (int attempt = 0; attempt < 2 && urc == NVML_ERROR_INSUFFICIENT_SIZE; ++attempt) {
      samples = static_cast<unsigned>(gpu.util_buf.size());
      urc = api.get_process_utilization(gpu.dev, gpu.util_buf.empty() ? nullptr : gpu.util_buf.data(), &samples,
                                        gpu.util_last_seen);
      if (urc == NVML_ERROR_INSUFFICIENT_SIZE) gpu.util_buf.resize(samples + 8);
    }
    if (urc == NVML_SUCCESS) {
      have_util = true;
      for (unsigned i = 0; i < samples; ++i) gpu.util_last_seen = std::max(gpu.util_last_seen, gpu.util_buf[i].timeStamp);
    } else if (urc == NVML_ERROR_NOT_FOUND) {
      have_util = true;  // no samples newer than the last: every process at 0
      samples = 0;
    } else if (urc == NVML_ERROR_NOT_SUPPORTED || urc == NVML_ERROR_FUNCTION_NOT_FOUND) {
      gpu.off.set(static_cast<size_t>(Probe::kProcessUtil));
    }
  }

  if (gpu.slow_now) {
    gpu.util_have = have_util;
    gpu.util_samples = samples;
  }
  // The pod of the GPU's processes labels its DCGM series (dcgm-exporter's
  // container/namespace/pod); none when no process or more than one pod.
  GpuPod pod;
  bool one_pod = true;
  for (const Listed& list : lists) {
    for (unsigned i = 0; i < list.count; ++i) {
      // Elements are 24 bytes, or 32 on early R535 drivers; pid and memory
      // sit at the same offsets in both.
      const unsigned char* e = list.buf->data() + i * gpu.proc_elem;
      unsigned pid = 0;
      unsigned long long mem = 0;
      std::memcpy(&pid, e + offsetof(nvmlProcessInfo_t, pid), sizeof pid);
      std::memcpy(&mem, e + offsetof(nvmlProcessInfo_t, usedGpuMemory), sizeof mem);
      ProcessIdentity* id = cache.lookup(pid);
      if (id != nullptr) gpu.job_processes.push_back(id);
      if (id != nullptr) cache.name_from_kubelet(*id, list.mig != nullptr ? list.mig->id.uuid : gpu.uuid, pod_directory());
      Labels fallback;
      if (id == nullptr) {
        fallback = Labels{{"pid", std::to_string(pid)}, {"namespace", ""}, {"pod", ""}, {"container", ""}};
      }
      const Labels* base = id != nullptr ? &id->labels : &fallback;
      Labels with_mig;
      if (list.mig != nullptr) {
        with_mig = *base;
        with_mig.merge(list.mig->extra);
      }
      const Labels& labels = list.mig != nullptr ? with_mig : *base;
      if (id != nullptr && !id->pod.empty()) {
        if (pod.pod.empty()) {
          pod = {.container = id->container, .namespace_ = id->namespace_, .pod = id->pod};
        } else if (pod.pod != id->pod || pod.namespace_ != id->namespace_ || pod.container != id->container) {
          one_pod = false;
        }
      }
      if (mem != NVML_VALUE_NOT_AVAILABLE) ctx.frame.set(FieldId::kGpuProcessMemoryUsed, gpu.index, labels, static_cast<double>(mem));
      if (have_util) {
        double sm = 0;
        for (unsigned k = 0; k < samples; ++k) {
          // nvtop discards samples above 100 %: the driver sometimes reports junk.
          if (gpu.util_buf[k].pid == pid && gpu.util_buf[k].smUtil <= 100) sm = gpu.util_buf[k].smUtil / 100.0;
        }
        ctx.frame.set(FieldId::kGpuProcessSmUtil, gpu.index, labels, sm);
      }
      if (id != nullptr && !id->cpus.empty()) {
        ctx.frame.set_node(FieldId::kHostProcessCpuAffinity, id->affinity_for(gpu.index), 1);
      }
    }
  }
  // The kubelet's allocation wins (what dcgm-exporter reads); the pod of the
  // processes stands in where the kubelet is not read.
  if (auto owner = pod_directory().sole_owner(gpu.uuid)) {
    pod = {.container = owner->container, .namespace_ = owner->namespace_, .pod = owner->pod};
    one_pod = true;
  }
  ctx.frame.registry().set_gpu_pod(gpu.index, one_pod ? std::move(pod) : GpuPod{});
  // dcgm-exporter keys the pod of a MIG device by its GPU instance.
  for (const auto& inst : gpu.mig.instances) {
    GpuPod p;
    if (auto o = pod_directory().sole_owner(inst->id.uuid)) p = {.container = o->container, .namespace_ = o->namespace_, .pod = o->pod};
    ctx.frame.registry().set_mig_pod(gpu.index, inst->id.gpu_instance, std::move(p));
  }
}

}  // namespace gpulens

namespace gpulens {

namespace {

// The jobs of the pods that hold the GPU or one of its MIG instances, as the
// kubelet source last learnt them (PodDirectory::pod_job); GKE names a GPU
// "nvidia<index>".
std::vector<std::string> jobs_of_pods(const GpuState& gpu) {
  std::vector<std::string> devices{gpu.uuid, "nvidia" + std::to_string(gpu.index)};
  for (const auto& inst : gpu.mig.instances) devices.push_back(inst->id.uuid);
  std::vector<std::string> jobs;
  for (const std::string& d : devices) {
    if (d.empty()) continue;
    for (const DeviceOwner& o : pod_directory().owners_of(d)) {
      std::string job = pod_directory().pod_job(o.namespace_, o.pod);
      if (!job.empty() && std::find(jobs.begin(), jobs.end(), job) == jobs.end()) jobs.push_back(std::move(job));
    }
  }
  return jobs;
}

}  // namespace

void collect_jobs(CollectContext& ctx, GpuState& gpu, const std::vector<std::string>* mapped, uint64_t map_generation) {
  // Derive the labels again only when the processes or the mapping changed.
  std::sort(gpu.job_processes.begin(), gpu.job_processes.end(),
            [](const ProcessIdentity* a, const ProcessIdentity* b) { return a->pid < b->pid; });
  gpu.job_processes.erase(std::unique(gpu.job_processes.begin(), gpu.job_processes.end()), gpu.job_processes.end());
  gpu.job_inputs_next.clear();
  gpu.job_inputs_next.push_back(map_generation);
  gpu.job_inputs_next.push_back(pod_directory().generation());
  for (const ProcessIdentity* p : gpu.job_processes) {
    gpu.job_inputs_next.push_back(p->pid);
    gpu.job_inputs_next.push_back(p->start_time);
  }
  if (gpu.job_inputs_next != gpu.job_inputs || gpu.job_inputs.empty()) {
    gpu.job_inputs.swap(gpu.job_inputs_next);
    std::vector<const JobEnv*> envs;
    for (const ProcessIdentity* p : gpu.job_processes) envs.push_back(&p->job_env);
    const std::vector<std::string> pod_jobs = jobs_of_pods(gpu);
    const std::vector<GpuJob> jobs = attribute_gpu_jobs(mapped, envs, pod_jobs);
    gpu.job_extras.clear();
    std::string ids;
    for (const GpuJob& j : jobs) {
      gpu.job_extras.push_back(job_labels(j));
      ids += (ids.empty() ? "" : ", ") + j.job_id;
    }
    if (jobs.size() > 1 && ctx.warn) {
      ctx.warn("GPU " + std::to_string(gpu.index) + " is claimed by " + std::to_string(jobs.size()) + " jobs (" + ids +
               "): each gets its gpu_job_info series");
    }
  }
  for (const Labels& extra : gpu.job_extras) ctx.frame.set(FieldId::kGpuJobInfo, gpu.index, extra, 1);
}

}  // namespace gpulens
