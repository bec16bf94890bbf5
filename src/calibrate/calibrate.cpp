// The calibration run; see calibrate.h.
#include "calibrate/calibrate.h"

#include <sched.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <algorithm>
#include <memory>

#include "sources/nvml/loader.h"

namespace gpulens {
namespace {

struct NvmlGpu {
  int index = 0;
  nvmlDevice_t dev = nullptr;
  std::string uuid, name, pci;
  unsigned domain = 0, bus = 0, device = 0;
  bool have_pci = false;
  unsigned gen = 0, width = 0, gen_max = 0, width_max = 0;
  std::vector<unsigned long> cpus;  // affinity mask words
  std::vector<unsigned> pids;       // other processes
};

// NVML is initialised for the run and shut down with it.
struct NvmlSession {
  std::unique_ptr<NvmlApi> api;
  ~NvmlSession() {
    if (api) api->shutdown();
  }
};

bool parse_pci(const std::string& s, unsigned& domain, unsigned& bus, unsigned& device) {
  unsigned fn = 0;
  return std::sscanf(s.c_str(), "%x:%x:%x.%x", &domain, &bus, &device, &fn) == 4;
}

std::string format_uuid(const CUuuid& u) {
  std::string out = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(u.bytes[i]));
    out += hex;
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<unsigned> other_processes(const NvmlApi& api, nvmlDevice_t dev) {
  std::vector<unsigned> pids;
  if (api.get_compute_processes == nullptr) return pids;
  // Elements are 24 bytes, or 32 on early R535 drivers: size the buffer for
  // the larger and read pid at its common offset.
  std::vector<unsigned char> buf;
  unsigned count = 0;
  nvmlReturn_t rc = api.get_compute_processes(dev, &count, nullptr);
  if (rc == NVML_ERROR_INSUFFICIENT_SIZE) {
    count += 8;
    buf.resize(count * sizeof(nvmlProcessDetail_v1_t));
    rc = api.get_compute_processes(dev, &count, reinterpret_cast<nvmlProcessInfo_t*>(buf.data()));
  }
  if (rc != NVML_SUCCESS) return pids;
  // Same rule as the NVML source (collect.cpp): early R535 drivers have the
  // confidential-computing call but not the process detail list.
  const size_t elem = api.probe_conf_compute_mem != nullptr && api.probe_process_detail_list == nullptr
                          ? sizeof(nvmlProcessDetail_v1_t)
                          : sizeof(nvmlProcessInfo_t);
  const unsigned self = static_cast<unsigned>(::getpid());
  for (unsigned i = 0; i < count; ++i) {
    unsigned pid = 0;
    std::memcpy(&pid, buf.data() + i * elem + offsetof(nvmlProcessInfo_t, pid), sizeof pid);
    if (pid != self) pids.push_back(pid);
  }
  return pids;
}

Result<std::vector<NvmlGpu>> list_nvml(const NvmlApi& api) {
  unsigned count = 0;
  if (nvmlReturn_t rc = api.get_count(&count); rc != NVML_SUCCESS) {
    return unavailable("nvmlDeviceGetCount_v2 failed: " + std::string(NvmlApi::error_name(rc)));
  }
  std::vector<NvmlGpu> out;
  for (unsigned i = 0; i < count; ++i) {
    NvmlGpu g;
    g.index = static_cast<int>(i);
    if (api.get_handle_by_index(i, &g.dev) != NVML_SUCCESS) continue;
    char buf[96] = {};
    if (api.get_uuid(g.dev, buf, sizeof buf) == NVML_SUCCESS) g.uuid = buf;
    if (api.get_name(g.dev, buf, sizeof buf) == NVML_SUCCESS) g.name = buf;
    nvmlPciInfo_t pci{};
    if (api.get_pci_info != nullptr && api.get_pci_info(g.dev, &pci) == NVML_SUCCESS) {
      g.pci = pci.busId;
      g.have_pci = parse_pci(g.pci, g.domain, g.bus, g.device);
    }
    auto read = [&](auto fn, unsigned& v) {
      if (fn == nullptr || fn(g.dev, &v) != NVML_SUCCESS) v = 0;
    };
    read(api.get_pcie_gen, g.gen);
    read(api.get_pcie_width, g.width);
    read(api.get_pcie_gen_max, g.gen_max);
    read(api.get_pcie_width_max, g.width_max);
    g.cpus.assign(16, 0);
    if (api.get_cpu_affinity == nullptr || api.get_cpu_affinity(g.dev, 16, g.cpus.data()) != NVML_SUCCESS) g.cpus.clear();
    g.pids = other_processes(api, g.dev);
    out.push_back(std::move(g));
  }
  return out;
}

bool selected(const NvmlGpu& g, const std::string& sel) {
  if (sel == std::to_string(g.index)) return true;
  if (!g.uuid.empty() && lower(sel) == lower(g.uuid)) return true;
  unsigned d = 0, b = 0, dev = 0;
  return g.have_pci && parse_pci(sel, d, b, dev) && d == g.domain && b == g.bus && dev == g.device;
}

std::string now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Pins the calling thread to `mask` (intersected with what exists) and
// restores the previous affinity on destruction.
class AffinityGuard {
 public:
  AffinityGuard() { have_ = sched_getaffinity(0, sizeof saved_, &saved_) == 0; }
  ~AffinityGuard() {
    if (have_) sched_setaffinity(0, sizeof saved_, &saved_);
  }
  bool pin(const std::vector<unsigned long>& mask) {
    if (!have_ || mask.empty()) return false;
    cpu_set_t set;
    CPU_ZERO(&set);
    const size_t bits = sizeof(unsigned long) * 8;
    for (size_t cpu = 0; cpu < mask.size() * bits && cpu < CPU_SETSIZE; ++cpu) {
      if (((mask[cpu / bits] >> (cpu % bits)) & 1UL) && CPU_ISSET(cpu, &saved_)) CPU_SET(cpu, &set);
    }
    if (CPU_COUNT(&set) == 0) return false;
    return sched_setaffinity(0, sizeof set, &set) == 0;
  }

 private:
  cpu_set_t saved_{};
  bool have_ = false;
};

std::string gib(double bps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", bps / 1e9);
  return buf;
}

}  // namespace

bool CalibrationRun::any_failed() const {
  for (const auto& g : gpus) {
    if (!g.status) return true;
  }
  return false;
}

std::string cpu_list(const std::vector<unsigned long>& mask) {
  std::string out;
  const int bits = static_cast<int>(sizeof(unsigned long) * 8);
  const int n = static_cast<int>(mask.size()) * bits;
  auto on = [&](int c) { return c < n && ((mask[c / bits] >> (c % bits)) & 1UL); };
  for (int c = 0; c < n; ++c) {
    if (!on(c)) continue;
    int e = c;
    while (on(e + 1)) ++e;
    if (!out.empty()) out += ',';
    out += e == c ? std::to_string(c) : std::to_string(c) + "-" + std::to_string(e);
    c = e;
  }
  return out;
}

Result<CalibrationRun> run_calibration(const CalibrateOptions& o, const std::string& tool_version) {
  if (o.sweep.sizes.empty() || o.sweep.copies < 1 || o.sweep.samples < 1) {
    return invalid_argument("the sweep needs at least one size, one copy and one sample");
  }
  NvmlSession nvml;
  auto loaded = load_nvml(o.nvml_library);
  if (!loaded) return loaded.status();
  nvml.api = std::move(*loaded);
  if (nvmlReturn_t rc = nvml.api->init(); rc != NVML_SUCCESS) {
    nvml.api.reset();
    return unavailable("nvmlInit_v2 failed: " + std::string(NvmlApi::error_name(rc)));
  }
  CalibrationRun run;
  run.date = now_iso();
  run.tool_version = tool_version;
  char driver[96] = {};
  if (nvml.api->get_driver_version != nullptr && nvml.api->get_driver_version(driver, sizeof driver) == NVML_SUCCESS)
    run.driver = driver;
  auto listed = list_nvml(*nvml.api);
  if (!listed) return listed.status();
  std::vector<NvmlGpu> all = std::move(*listed);
  if (all.empty()) return not_applicable("NVIDIA driver loaded but no GPU found");

  std::vector<const NvmlGpu*> chosen;
  for (const std::string& sel : o.gpus) {
    const NvmlGpu* hit = nullptr;
    for (const auto& g : all) {
      if (selected(g, sel)) hit = &g;
    }
    if (hit == nullptr) return invalid_argument("--gpus: no GPU " + sel + " (give an index, a UUID or a PCI bus id)");
    bool dup = false;
    for (const auto* c : chosen) dup |= c == hit;
    if (!dup) chosen.push_back(hit);
  }
  if (o.gpus.empty()) {
    for (const auto& g : all) chosen.push_back(&g);
  }
  for (const NvmlGpu* g : chosen) {
    if (g->pids.empty() || o.force) continue;
    std::string pids;
    for (unsigned p : g->pids) pids += (pids.empty() ? "" : ", ") + std::to_string(p);
    return Status(Code::kUnavailable, "GPU " + std::to_string(g->index) + " (" + g->uuid + ") is in use by pid " +
                                          pids +
                                          ": a peak measured under load is wrong; stop those processes, pick "
                                          "other GPUs with --gpus, or pass --force to measure anyway");
  }

  auto cuda_loaded = load_cuda(o.cuda_library);
  if (!cuda_loaded) return cuda_loaded.status();
  const CudaApi& cuda = **cuda_loaded;
  if (CUresult rc = cuda.init(0); rc != cuda::kSuccess) {
    if (rc == cuda::kErrorNoDevice) return not_applicable("cuInit: CUDA_ERROR_NO_DEVICE: CUDA sees no GPU");
    return unavailable("cuInit failed: " + std::string(CudaApi::error_name(rc)));
  }
  cuda.driver_version(&run.cuda_driver);
  int ordinals = 0;
  if (CUresult rc = cuda.device_count(&ordinals); rc != cuda::kSuccess) {
    return unavailable("cuDeviceGetCount failed: " + std::string(CudaApi::error_name(rc)));
  }
  if (ordinals == 0) return not_applicable("CUDA sees no GPU (CUDA_VISIBLE_DEVICES?)");
  struct CudaDev {
    CUdevice dev = 0;
    std::string uuid;
    int domain = -1, bus = -1, device = -1;
  };
  std::vector<CudaDev> cdevs;
  for (int i = 0; i < ordinals; ++i) {
    CudaDev c;
    if (cuda.device_get(&c.dev, i) != cuda::kSuccess) continue;
    CUuuid u{};
    if (cuda.device_uuid(&u, c.dev) == cuda::kSuccess) c.uuid = format_uuid(u);
    cuda.device_attribute(&c.domain, cuda::kAttrPciDomainId, c.dev);
    cuda.device_attribute(&c.bus, cuda::kAttrPciBusId, c.dev);
    cuda.device_attribute(&c.device, cuda::kAttrPciDeviceId, c.dev);
    cdevs.push_back(c);
  }

  size_t max_bytes = 0;
  for (size_t s : o.sweep.sizes) max_bytes = std::max(max_bytes, s);
  AffinityGuard affinity;
  std::vector<std::unique_ptr<CopyBench>> benches;
  for (const NvmlGpu* g : chosen) {
    GpuCalibration& r = run.gpus.emplace_back();
    r.index = g->index;
    r.uuid = g->uuid;
    r.name = g->name;
    r.pci_bus_id = g->pci;
    r.link_gen = g->gen;
    r.link_width = g->width;
    r.link_gen_max = g->gen_max;
    r.link_width_max = g->width_max;
    r.other_pids = g->pids;
    r.under_load = !g->pids.empty();
    benches.emplace_back();
    const CudaDev* match = nullptr;
    for (const auto& c : cdevs) {
      if (!c.uuid.empty() && lower(c.uuid) == lower(g->uuid)) match = &c;
    }
    for (const auto& c : cdevs) {
      if (match == nullptr && g->have_pci && c.domain == static_cast<int>(g->domain) &&
          c.bus == static_cast<int>(g->bus) && c.device == static_cast<int>(g->device))
        match = &c;
    }
    if (match == nullptr) {
      r.status = not_found("GPU " + std::to_string(g->index) + " (" + g->uuid +
                           "): CUDA does not see it by UUID or PCI address (CUDA_VISIBLE_DEVICES?)");
      continue;
    }
    r.cuda_ordinal = match->dev;
    if (affinity.pin(g->cpus)) r.cpus = cpu_list(g->cpus);
    auto bench = std::make_unique<CopyBench>(cuda, match->dev);
    const std::string who = "GPU " + std::to_string(g->index) + " (" + g->uuid + ")";
    if (Status s = bench->open(max_bytes); !s) {
      r.status = Status(s.code(), who + ": " + s.message());
      continue;
    }
    struct Job {
      Direction d;
      DirectionSweep* out;
    };
    std::vector<Job> jobs{{Direction::kHostToDevice, &r.h2d}, {Direction::kDeviceToHost, &r.d2h}};
    if (o.bidirectional) {
      jobs.push_back({Direction::kBidirHostToDevice, &r.bidir_h2d});
      jobs.push_back({Direction::kBidirDeviceToHost, &r.bidir_d2h});
    }
    for (const Job& j : jobs) {
      auto sw = bench->sweep(j.d, o.sweep);
      if (!sw) {
        r.status = Status(sw.status().code(),
                          who + ": " + std::string(direction_name(j.d)) + ": " + sw.status().message());
        break;
      }
      *j.out = std::move(*sw);
    }
    if (!r.status) continue;
    // An idle link trains down by design: read the link again now that it
    // has carried traffic, and keep the better reading.
    unsigned gen = 0, width = 0;
    if (nvml.api->get_pcie_gen != nullptr && nvml.api->get_pcie_gen(g->dev, &gen) == NVML_SUCCESS)
      r.link_gen = std::max(r.link_gen, gen);
    if (nvml.api->get_pcie_width != nullptr && nvml.api->get_pcie_width(g->dev, &width) == NVML_SUCCESS)
      r.link_width = std::max(r.link_width, width);
    if (o.progress) {
      o.progress(who + " " + r.name + ": host->device " + gib(r.h2d.peak) + ", device->host " + gib(r.d2h.peak) +
                 (o.bidirectional ? ", both " + gib(r.bidir_h2d.peak) + " + " + gib(r.bidir_d2h.peak) : "") +
                 (r.cpus.empty() ? "" : " (cpus " + r.cpus + ")"));
    }
    benches.back() = std::move(bench);
  }

  if (o.peers) {
    for (size_t a = 0; a < run.gpus.size(); ++a) {
      for (size_t b = 0; b < run.gpus.size(); ++b) {
        if (a == b || !benches[a] || !benches[b]) continue;
        int ab = 0, ba = 0;
        if (cuda.can_access_peer(&ab, run.gpus[a].cuda_ordinal, run.gpus[b].cuda_ordinal) != cuda::kSuccess ||
            cuda.can_access_peer(&ba, run.gpus[b].cuda_ordinal, run.gpus[a].cuda_ordinal) != cuda::kSuccess ||
            !ab || !ba)
          continue;
        auto bw = benches[a]->measure_peer(*benches[b], max_bytes, o.sweep);
        if (!bw) {
          run.gpus[a].status = Status(bw.status().code(), "GPU " + std::to_string(run.gpus[a].index) +
                                                              " -> GPU " + std::to_string(run.gpus[b].index) +
                                                              ": peer copy: " + bw.status().message());
          continue;
        }
        run.gpus[a].peers.push_back({run.gpus[b].uuid, run.gpus[b].index, *bw});
      }
    }
  }
  benches.clear();
  return run;
}

}  // namespace gpulens
