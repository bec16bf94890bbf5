// NvmlSource: open, the worker thread and the deadline; see nvml_source.h.
#include "sources/nvml/nvml_source.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "sources/nvml/gpu.h"
#include "sources/nvml/hpc_job_map.h"
#include "sources/nvml/loader.h"
#include "sources/nvml/process_cache.h"
#include "sources/nvml/xid.h"

namespace gpulens {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct NvmlSource::Core {
  std::unique_ptr<NvmlApi> api;
  std::deque<GpuState> gpus;
  std::unique_ptr<ProcessCache> cache;
  std::unique_ptr<XidWatcher> xids;
  std::unique_ptr<Frame> frame;  // the worker's own frame
  SeriesRegistry* registry = nullptr;
  int64_t slow_interval_ms = 0;
  std::string job_map_dir;  // "" off
  HpcJobMap job_map;
  uint64_t job_map_generation = 0;
  int64_t job_map_next_ms = 0;

  std::mutex mu;
  std::condition_variable wake, done;
  bool requested = false, busy = false, stop = false;
  uint64_t generation = 0;
  Status last;
  std::thread worker;
  std::vector<std::pair<const Series*, double>> copy_buf;

  mutable std::mutex notice_mu;
  std::vector<std::string> notices;
  std::set<std::string> seen;

  void notice(const std::string& msg) {
    std::lock_guard lock(notice_mu);
    if (!seen.insert(msg).second) return;
    notices.push_back(msg);
    std::fprintf(stderr, "gpulens: nvml: %s\n", msg.c_str());
  }

  ~Core() {
    if (xids) xids->stop();
    xids.reset();
    gpus.clear();  // frees GPM buffers through the library
    if (api) api->shutdown();
  }

  Status collect() {
    frame->clear(steady_ms());
    CollectContext ctx{*api, *frame, steady_ms(), [this](const std::string& m) { notice(m); }, slow_interval_ms};
    int lost = 0;
    refresh_job_map(ctx.now_ms);
    for (GpuState& g : gpus) {
      collect_gpu(ctx, g);
      if (g.lost) {
        ++lost;
        // A lost GPU keeps the jobs it had: they are whom it stalls.
        for (const Labels& extra : g.job_extras) frame->set(FieldId::kGpuJobInfo, g.index, extra, 1);
        continue;
      }
      if (g.slow_now) discover_mig(*api, g);
      collect_mig(ctx, g);
      collect_processes(ctx, g, *cache);
      auto mapped = job_map.jobs.find(g.index);
      collect_jobs(ctx, g, mapped == job_map.jobs.end() ? nullptr : &mapped->second, job_map_generation);
      for (const Labels& t : g.topology_extras) frame->set(FieldId::kGpuTopology, g.index, t, 1);
      if (g.numa_node >= 0) frame->set(FieldId::kGpuNumaNode, g.index, g.numa_node);
      if (!g.cpu_affinity_extra.empty()) frame->set(FieldId::kGpuCpuAffinity, g.index, g.cpu_affinity_extra, 1);
    }
    cache->sweep();
    if (slow_interval_ms > 0 && !gpus.empty()) {
      // Staleness of the slow tier, beside the agent's own {source="nvml"}.
      static const Labels kSlowTier{{"source", "nvml"}, {"tier", "slow"}};
      frame->set_node(FieldId::kAgentSourceAge, kSlowTier,
                      static_cast<double>(ctx.now_ms - gpus.front().slow_last_ms) / 1000.0);
    }
    if (xids) xids->fill(*frame);
    if (lost > 0 && lost == static_cast<int>(gpus.size())) {
      return unavailable("all " + std::to_string(lost) + " GPUs are lost (NVML_ERROR_GPU_IS_LOST)");
    }
    return Status::ok();
  }

  // The Slurm mapping directory, at most every 5 s; each problem said once.
  void refresh_job_map(int64_t now_ms) {
    if (job_map_dir.empty() || now_ms < job_map_next_ms) return;
    job_map_next_ms = now_ms + 5000;
    HpcJobMap fresh = read_hpc_job_map(job_map_dir);
    for (const std::string& p : fresh.problems) notice("job mapping: " + p);
    if (fresh.jobs != job_map.jobs) ++job_map_generation;
    job_map = std::move(fresh);
  }

  void run() {
    std::unique_lock lock(mu);
    for (;;) {
      wake.wait(lock, [&] { return stop || requested; });
      if (stop) return;
      requested = false;
      busy = true;
      lock.unlock();
      Status s = collect();
      lock.lock();
      last = std::move(s);
      busy = false;
      ++generation;
      done.notify_all();
    }
  }
};

NvmlSource::NvmlSource(NvmlOptions options, std::shared_ptr<XidLedger> xids)
    : options_(std::move(options)), ledger_(xids ? std::move(xids) : std::make_shared<XidLedger>()) {}

NvmlSource::~NvmlSource() {
  if (!core_) return;
  bool stuck = false;
  {
    std::lock_guard lock(core_->mu);
    core_->stop = true;
    stuck = core_->busy;
  }
  core_->wake.notify_all();
  if (core_->worker.joinable()) {
    // A worker stuck inside a hanging driver call cannot be joined; it keeps
    // the core (and the library) alive until the call returns.
    if (stuck) core_->worker.detach();
    else core_->worker.join();
  }
}

Status NvmlSource::open(SeriesRegistry& registry) {
  auto loaded = load_nvml(options_.library);
  if (!loaded) return loaded.status();
  auto core = std::make_shared<Core>();
  core->api = std::move(*loaded);
  NvmlApi& api = *core->api;
  if (nvmlReturn_t rc = api.init(); rc != NVML_SUCCESS) {
    core->api.reset();  // nothing to shut down
    std::string why = "nvmlInit_v2 failed: " + std::string(NvmlApi::error_name(rc));
    if (rc == NVML_ERROR_DRIVER_NOT_LOADED) return not_applicable("NVIDIA kernel driver not loaded (" + why + ")");
    if (rc == NVML_ERROR_NO_PERMISSION) return {Code::kPermission, why + ": no permission to open /dev/nvidia*"};
    return unavailable(why);
  }
  unsigned count = 0;
  if (nvmlReturn_t rc = api.get_count(&count); rc != NVML_SUCCESS) {
    return unavailable("nvmlDeviceGetCount_v2 failed: " + std::string(NvmlApi::error_name(rc)));
  }
  if (count == 0) return not_applicable("NVIDIA driver loaded but no GPU found");
  char driver[96] = {};
  if (api.get_driver_version == nullptr || api.get_driver_version(driver, sizeof driver) != NVML_SUCCESS) driver[0] = 0;
  // 1000 * major + 10 * minor, e.g. 12040 -> "12.4".
  std::string cuda;
  if (int v = 0; api.get_cuda_driver_version != nullptr && api.get_cuda_driver_version(&v) == NVML_SUCCESS && v > 0) {
    cuda = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  }

  std::unique_ptr<PcieCalibration> cal;
  if (!options_.calibration_file.empty()) {
    auto c = load_pcie_calibration(options_.calibration_file);
    if (!c) return c.status();
    cal = std::make_unique<PcieCalibration>(std::move(*c));
  }
  for (unsigned i = 0; i < count; ++i) {
    GpuState& g = core->gpus.emplace_back();
    std::string why;
    if (!open_gpu(api, i, driver, cal.get(), g, why)) {
      core->notice(why + "; it is left out");
      core->gpus.pop_back();
      continue;
    }
    if (g.gpm_open_rc == NVML_ERROR_NO_PERMISSION) {
      core->notice("GPM on GPU " + std::to_string(i) +
                   " returned NVML_ERROR_NO_PERMISSION: SM active/occupancy, tensor and DRAM activity are off; run "
                   "the agent privileged (securityContext.privileged: true, or as root) to enable them");
    }
    registry.set_gpu(g.index, {.uuid = g.uuid, .name = g.name, .pci_bus_id = g.pci_bus_id, .serial = g.serial,
                               .driver = driver, .minor = g.minor, .cuda = cuda});
  }
  if (core->gpus.empty()) return unavailable("no usable GPU: every GPU failed to open");
  open_topology(api, core->gpus, options_.sys_root);
  core->cache = std::make_unique<ProcessCache>(options_.proc_root, options_.kubelet_root);
  if (options_.job_environ) {
    core->cache->read_environ([c = core.get()](const std::string& m) { c->notice(m); });
  }
  core->job_map_dir = options_.hpc_job_mapping_dir;
  std::vector<std::pair<int, nvmlDevice_t>> devs;
  std::vector<std::string> buses;
  for (const GpuState& g : core->gpus) {
    devs.emplace_back(g.index, g.dev);
    buses.push_back(g.pci_bus_id);
  }
  core->xids = std::make_unique<XidWatcher>(api, std::move(devs), std::move(buses), ledger_, options_.xid_wait_ms);
  core->xids->start();  // without events, fill() still writes the kernel log's XIDs
  core->registry = &registry;
  core->slow_interval_ms = options_.slow_interval_ms;
  core->frame = std::make_unique<Frame>(registry);
  Core* raw = core.get();
  core->worker = std::thread([raw, keep = core] { raw->run(); });
  core_ = std::move(core);
  return Status::ok();
}

Status NvmlSource::sample(Frame& frame) {
  if (!core_) return unavailable("nvml source is not open");
  Core& c = *core_;
  std::unique_lock lock(c.mu);
  if (c.busy || c.requested) {
    return {Code::kDeadline, "the previous NVML collection is still running (a driver call hangs); skipped"};
  }
  const uint64_t gen = c.generation;
  c.requested = true;
  c.wake.notify_one();
  const auto deadline = std::chrono::milliseconds(options_.call_deadline_ms);
  if (!c.done.wait_for(lock, deadline, [&] { return c.generation != gen; })) {
    return {Code::kDeadline,
            "NVML collection exceeded " + std::to_string(options_.call_deadline_ms) + " ms (a driver call hangs)"};
  }
  // The worker is idle now: copy its frame. Series metadata is read under
  // the registry lock, the values set after releasing it (set() locks too).
  c.copy_buf.clear();
  {
    std::lock_guard reg(c.registry->mutex());
    for (const Frame::Value& v : c.frame->values()) c.copy_buf.emplace_back(&c.registry->series(v.slot), v.value);
  }
  for (const auto& [s, v] : c.copy_buf) frame.set(s->field, s->gpu, s->part, s->extra, v);
  return c.last;
}

std::vector<std::string> NvmlSource::notices() const {
  if (!core_) return {};
  std::lock_guard lock(core_->notice_mu);
  return core_->notices;
}

uint64_t NvmlSource::process_resolutions() const { return core_ && core_->cache ? core_->cache->resolutions() : 0; }

std::unique_ptr<Source> make_nvml_source(const SourceOptions& options) {
  return std::make_unique<NvmlSource>(options.nvml, options.xids);
}

}  // namespace gpulens
