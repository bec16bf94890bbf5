// A stand-in libnvidia-ml.so.1 for tests: the NVML C ABI declared in
// nvml_api.h, answering from a script (script.h) named by the environment
// variable GPULENS_FAKE_NVML_SCRIPT. Built twice: the current-driver
// flavour, and with GPULENS_FAKE_OLD_DRIVER an old-driver flavour that lacks
// the newer symbols (memory v2, clocks-event reasons, GPM, process detail
// list) and writes the 32-byte process element of early R535 drivers.
//
// Struct versions are checked as a real driver does: nvmlMemory_v2 with the
// bare number 2 gives FUNCTION_NOT_FOUND, any other wrong value
// ARGUMENT_VERSION_MISMATCH; GPM structs want the raw version 1.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "sources/nvml/nvml_api.h"
#include "sources/nvml/testing/script.h"
#include "util/fake_script.h"

namespace {

using gpulens::fake::Gpu;
using gpulens::fake::MigDevice;
using gpulens::fake::Script;

struct State {
  std::mutex mu;
  Script script;
  std::vector<std::map<std::string, long>> calls;  // per GPU, per key
  std::vector<long> util_calls;
  int inits = 0;
  long gpm_allocs = 0;
};

State& state() {
  static State s;
  return s;
}

// Defaults so that scripts only state what a test is about.
const std::map<std::string, double>& defaults() {
  static const std::map<std::string, double> d{
      {"util_gpu", 50}, {"util_mem", 30}, {"mem_total", 85899345920.0}, {"mem_reserved", 536870912.0},
      {"mem_used", 10737418240.0}, {"mem_free", 74625056768.0}, {"temp", 45}, {"power_mw", 300000},
      {"power_limit_mw", 700000}, {"energy_mj", 1000000}, {"sm_clock", 1980}, {"sm_clock_max", 1980},
      {"mem_clock", 2619}, {"mem_clock_max", 2619}, {"clock_events", 0}, {"supported_clock_events", 0x1FF},
      {"pcie_gen", 5}, {"pcie_width", 16}, {"pcie_gen_max", 5}, {"pcie_width_max", 16},
      {"pcie_tx_kbs", 1000}, {"pcie_rx_kbs", 2000}, {"pcie_replays", 0}, {"ecc_corrected", 0},
      {"ecc_uncorrected", 0}, {"remap_cor", 0}, {"remap_unc", 0}, {"remap_pending", 0},
      {"remap_failure", 0}, {"pstate", 0}, {"cpu_affinity", 0xFFFF}, {"mem_affinity", 1},
      {"field.82", 50}, {"field.164", 25781}, {"gpm.1", 80}, {"gpm.2", 60}, {"gpm.3", 30},
      {"gpm.5", 40}, {"gpm.10", 50}, {"gpm.11", 0}, {"gpm.12", 20}, {"gpm.13", 5},
      {"gpm.20", 1024}, {"gpm.21", 2048}, {"gpm.60", 0}, {"gpm.61", 0}};
  return d;
}

int index_of(nvmlDevice_t dev) {
  auto& s = state();
  for (size_t i = 0; i < s.script.gpus.size(); ++i) {
    if (reinterpret_cast<nvmlDevice_t>(&s.script.gpus[i]) == dev) return static_cast<int>(i);
  }
  return -1;
}

// The MIG device behind a handle, null for a GPU handle.
MigDevice* mig_of(nvmlDevice_t dev) {
  for (Gpu& g : state().script.gpus) {
    for (MigDevice& m : g.migs) {
      if (reinterpret_cast<nvmlDevice_t>(&m) == dev) return &m;
    }
  }
  return nullptr;
}

// One device call: counts it, applies lost/error/hang rules and returns the
// scripted (or default) value. `alt` is a second key tried for the value.
nvmlReturn_t call(nvmlDevice_t dev, const std::string& key, double* out, const std::string& alt = {}) {
  auto& s = state();
  long hang = 0;
  nvmlReturn_t rc = NVML_SUCCESS;
  {
    std::lock_guard lock(s.mu);
    if (s.inits == 0) return NVML_ERROR_UNINITIALIZED;
    int i = index_of(dev);
    const MigDevice* mig = i < 0 ? mig_of(dev) : nullptr;
    if (mig != nullptr) i = mig->parent;
    if (i < 0) return NVML_ERROR_INVALID_ARGUMENT;
    Gpu& g = s.script.gpus[i];
    if (key == "util_gpu") ++s.util_calls[i];
    if (g.lost_at > 0 && s.util_calls[i] >= g.lost_at) return NVML_ERROR_GPU_IS_LOST;
    // A MIG device's keys carry its prefix; its values fall back to the GPU's.
    const std::string own = mig != nullptr ? mig->prefix() + key : key;
    const std::string& second = mig != nullptr && alt.empty() ? key : alt;
    long n = ++s.calls[i][own];
    if (auto e = g.errors.find(own); e != g.errors.end() && n >= e->second.from) return e->second.code;
    if (auto h = g.hang_ms.find(own); h != g.hang_ms.end() && (h->second.second == 0 || n <= h->second.second)) {
      hang = h->second.first;
    }
    if (out != nullptr && mig != nullptr && key.starts_with("mem_") && !g.values.contains(own)) {
      *out = key == "mem_total" ? static_cast<double>(mig->mem) : key == "mem_used" ? static_cast<double>(mig->used) : 0;
    } else if (out != nullptr) {
      const std::vector<double>* seq = nullptr;
      for (const std::string* k : {&own, &second}) {
        if (seq == nullptr && !k->empty()) {
          if (auto v = g.values.find(*k); v != g.values.end() && !v->second.empty()) seq = &v->second;
        }
      }
      if (seq != nullptr) {
        *out = (*seq)[std::min<size_t>(n - 1, seq->size() - 1)];
      } else if (auto d = defaults().find(key); d != defaults().end()) {
        *out = d->second;
      } else if (auto d2 = defaults().find(second); !second.empty() && d2 != defaults().end()) {
        *out = d2->second;
      } else {
        rc = NVML_ERROR_NOT_SUPPORTED;
      }
    }
  }
  if (hang > 0) std::this_thread::sleep_for(std::chrono::milliseconds(hang));
  return rc;
}

template <typename T>
nvmlReturn_t get(nvmlDevice_t dev, const std::string& key, T* out) {
  if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  double v = 0;
  nvmlReturn_t rc = call(dev, key, &v);
  if (rc == NVML_SUCCESS) *out = static_cast<T>(v);
  return rc;
}

nvmlReturn_t copy_string(const std::string& s, char* buf, unsigned len) {
  if (buf == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s.size() + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(buf, s.c_str(), s.size() + 1);
  return NVML_SUCCESS;
}

Gpu* gpu_of(nvmlDevice_t dev) {
  int i = index_of(dev);
  return i < 0 ? nullptr : &state().script.gpus[i];
}

struct FakeSample {
  nvmlDevice_t dev = nullptr;
  long seq = 0;
};

struct FakeEventSet {
  std::deque<nvmlEventData_t> pending;
};

}  // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))

FAKE_API nvmlReturn_t nvmlInit_v2() {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (s.inits == 0) {
    std::string text, path;
    if (!gpulens::script::read_script_file("GPULENS_FAKE_NVML_SCRIPT", text, path)) return NVML_ERROR_DRIVER_NOT_LOADED;
    Script parsed;
    std::string err;
    if (!gpulens::fake::parse_script(text, parsed, err)) {
      std::fprintf(stderr, "fake nvml: %s: %s\n", path.c_str(), err.c_str());
      return NVML_ERROR_UNKNOWN;
    }
    if (parsed.init_error != 0) return parsed.init_error;
    s.script = std::move(parsed);
    s.calls.assign(s.script.gpus.size(), {});
    s.util_calls.assign(s.script.gpus.size(), 0);
  }
  ++s.inits;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlShutdown() {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (s.inits == 0) return NVML_ERROR_UNINITIALIZED;
  --s.inits;
  return NVML_SUCCESS;
}

FAKE_API const char* nvmlErrorString(nvmlReturn_t) { return "fake NVML error"; }

FAKE_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* count) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (s.inits == 0) return NVML_ERROR_UNINITIALIZED;
  *count = static_cast<unsigned>(s.script.gpus.size());
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* dev) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (s.inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (i >= s.script.gpus.size()) return NVML_ERROR_INVALID_ARGUMENT;
  *dev = reinterpret_cast<nvmlDevice_t>(&s.script.gpus[i]);
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlSystemGetDriverVersion(char* buf, unsigned len) {
  return copy_string(state().script.driver, buf, len);
}

FAKE_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (version == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (state().script.cuda == 0) return 12;  // NVML_ERROR_LIBRARY_NOT_FOUND: no libcuda.so.1
  *version = state().script.cuda;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char* buf, unsigned len) {
  if (const MigDevice* m = mig_of(dev)) {
    return copy_string(state().script.gpus[m->parent].name + " MIG " + m->profile, buf, len);
  }
  Gpu* g = gpu_of(dev);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = call(dev, "name", nullptr); rc != NVML_SUCCESS) return rc;
  return copy_string(g->name, buf, len);
}

FAKE_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char* buf, unsigned len) {
  if (const MigDevice* m = mig_of(dev)) {
    if (nvmlReturn_t rc = call(dev, "uuid", nullptr); rc != NVML_SUCCESS) return rc;
    return copy_string(m->uuid, buf, len);
  }
  Gpu* g = gpu_of(dev);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = call(dev, "uuid", nullptr); rc != NVML_SUCCESS) return rc;
  return copy_string(g->uuid, buf, len);
}

FAKE_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t dev, char* buf, unsigned len) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->serial.empty()) return NVML_ERROR_NOT_SUPPORTED;
  return copy_string(g->serial, buf, len);
}

FAKE_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t* pci) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr || pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(pci, 0, sizeof *pci);
  std::snprintf(pci->busId, sizeof pci->busId, "%s", g->pci.c_str());
  std::snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", g->pci.c_str() + 4);
  pci->pciDeviceId = 0x233010DE;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned* arch) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *arch = g->arch;
  return NVML_SUCCESS;
}

// Whole-GPU calls a GPU in MIG mode does not answer.
bool in_mig_mode(nvmlDevice_t dev) {
  const Gpu* g = gpu_of(dev);
  return mig_of(dev) != nullptr || (g != nullptr && g->mig_mode == 1);
}

FAKE_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t* u) {
  if (in_mig_mode(dev)) return NVML_ERROR_NOT_SUPPORTED;
  if (nvmlReturn_t rc = get(dev, "util_gpu", &u->gpu); rc != NVML_SUCCESS) return rc;
  return get(dev, "util_mem", &u->memory);
}

#ifndef GPULENS_FAKE_OLD_DRIVER
FAKE_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t* m) {
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != nvmlMemory_v2) {
    return m->version == 2 ? NVML_ERROR_FUNCTION_NOT_FOUND : NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  }
  if (nvmlReturn_t rc = get(dev, "mem_total", &m->total); rc != NVML_SUCCESS) return rc;
  get(dev, "mem_reserved", &m->reserved);
  get(dev, "mem_free", &m->free);
  nvmlReturn_t rc = get(dev, "mem_used", &m->used);
  if (mig_of(dev) != nullptr) m->free = m->total - m->used;
  return rc;
}
#endif

FAKE_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t* m) {
  unsigned long long reserved = 0, used = 0;
  if (nvmlReturn_t rc = get(dev, "mem_total", &m->total); rc != NVML_SUCCESS) return rc;
  get(dev, "mem_free", &m->free);
  get(dev, "mem_reserved", &reserved);
  get(dev, "mem_used", &used);
  m->used = reserved + used;  // v1 counts reserved memory as used
  if (mig_of(dev) != nullptr) m->free = m->total - m->used;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, unsigned sensor, unsigned* t) {
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  return get(dev, "temp", t);
}
FAKE_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned* p) { return get(dev, "power_mw", p); }
FAKE_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned* p) {
  return get(dev, "power_limit_mw", p);
}
FAKE_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long* e) {
  return get(dev, "energy_mj", e);
}
FAKE_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, unsigned type, unsigned* mhz) {
  if (type == NVML_CLOCK_SM) return get(dev, "sm_clock", mhz);
  if (type == NVML_CLOCK_MEM) return get(dev, "mem_clock", mhz);
  return NVML_ERROR_INVALID_ARGUMENT;
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, unsigned type, unsigned* mhz) {
  if (type == NVML_CLOCK_SM) return get(dev, "sm_clock_max", mhz);
  if (type == NVML_CLOCK_MEM) return get(dev, "mem_clock_max", mhz);
  return NVML_ERROR_INVALID_ARGUMENT;
}
#ifndef GPULENS_FAKE_OLD_DRIVER
FAKE_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long* r) {
  return get(dev, "clock_events", r);
}
FAKE_API nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t dev, unsigned long long* r) {
  return get(dev, "supported_clock_events", r);
}
#endif
FAKE_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long* r) {
  return get(dev, "clock_events", r);
}
FAKE_API nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t dev, unsigned long long* r) {
  return get(dev, "supported_clock_events", r);
}
FAKE_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned* v) {
  return get(dev, "pcie_gen", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned* v) {
  return get(dev, "pcie_width", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned* v) {
  return get(dev, "pcie_gen_max", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned* v) {
  return get(dev, "pcie_width_max", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t dev, unsigned counter, unsigned* v) {
  if (counter == NVML_PCIE_UTIL_TX_BYTES) return get(dev, "pcie_tx_kbs", v);
  if (counter == NVML_PCIE_UTIL_RX_BYTES) return get(dev, "pcie_rx_kbs", v);
  return NVML_ERROR_INVALID_ARGUMENT;
}
FAKE_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t dev, unsigned* v) {
  return get(dev, "pcie_replays", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, unsigned type, unsigned counter,
                                                 unsigned long long* v) {
  if (counter != NVML_VOLATILE_ECC) return NVML_ERROR_NOT_SUPPORTED;
  return get(dev, type == NVML_MEMORY_ERROR_TYPE_CORRECTED ? "ecc_corrected" : "ecc_uncorrected", v);
}
FAKE_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned* cor, unsigned* unc, unsigned* pending,
                                               unsigned* failure) {
  if (const Gpu* g = gpu_of(dev); g != nullptr && g->mig_mode == 1 && !g->migs.empty()) return NVML_ERROR_NOT_SUPPORTED;
  if (nvmlReturn_t rc = get(dev, "remap_cor", cor); rc != NVML_SUCCESS) return rc;
  get(dev, "remap_unc", unc);
  get(dev, "remap_pending", pending);
  return get(dev, "remap_failure", failure);
}
FAKE_API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t dev, unsigned* p) { return get(dev, "pstate", p); }
#ifndef GPULENS_FAKE_OLD_DRIVER
// Repair status (drivers 580 on): unscripted, NOT_SUPPORTED.
FAKE_API nvmlReturn_t nvmlDeviceGetRepairStatus(nvmlDevice_t dev, nvmlRepairStatus_v1_t* rs) {
  if (rs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (rs->version != nvmlRepairStatus_v1) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  if (nvmlReturn_t rc = get(dev, "repair_channel", &rs->bChannelRepairPending); rc != NVML_SUCCESS) return rc;
  return get(dev, "repair_tpc", &rs->bTpcRepairPending);
}
#endif

FAKE_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int n, nvmlFieldValue_t* values) {
  if (nvmlReturn_t rc = call(dev, "field_values", nullptr); rc != NVML_SUCCESS) return rc;
  for (int i = 0; i < n; ++i) {
    nvmlFieldValue_t& f = values[i];
    std::string base = "field." + std::to_string(f.fieldId);
    double v = 0;
    // The recovery action (field 230) and the NVLink recovery counts (213-215,
    // every link) also answer to their own keys; unscripted, they are
    // NOT_SUPPORTED, as on a driver older than the field.
    std::string own;
    switch (f.fieldId) {
      case NVML_FI_DEV_GET_GPU_RECOVERY_ACTION: own = "recovery_action"; break;
      case NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS: own = "nvlink_recovery_successful"; break;
      case NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS: own = "nvlink_recovery_failed"; break;
      case NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS: own = "nvlink_recovery_events"; break;
      default: own = base + "." + std::to_string(f.scopeId);
    }
    f.nvmlReturn = call(dev, own, &v, base);
    f.timestamp = 0;
    if (f.fieldId == NVML_FI_DEV_MEMORY_TEMP) {
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      f.value.uiVal = static_cast<unsigned>(v);
    } else {
      f.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
      f.value.ullVal = static_cast<unsigned long long>(v);
    }
  }
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, unsigned* active) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr || link >= NVML_NVLINK_MAX_LINKS) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = call(dev, "nvlink_state", nullptr); rc != NVML_SUCCESS) return rc;
  if (g->nvlink_peer.empty()) return NVML_ERROR_NOT_SUPPORTED;
  *active = g->nvlink_peer.contains(static_cast<int>(link)) ? 1 : 0;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t* pci) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = g->nvlink_peer.find(static_cast<int>(link));
  if (it == g->nvlink_peer.end()) return NVML_ERROR_NOT_SUPPORTED;
  std::memset(pci, 0, sizeof *pci);
  const auto& gpus = state().script.gpus;
  std::string bus = it->second >= 0 && it->second < static_cast<int>(gpus.size()) ? gpus[it->second].pci
                                                                                : "00000000:99:00.0";
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus.c_str());
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t dev, unsigned* count, void* infos) {
  const MigDevice* mig = mig_of(dev);
  Gpu* g = mig != nullptr ? &state().script.gpus[mig->parent] : gpu_of(dev);
  if (g == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = call(dev, "processes", nullptr); rc != NVML_SUCCESS) return rc;
  // A MIG device lists the processes of its own instance.
  std::vector<gpulens::fake::Process> procs;
  for (const auto& p : g->processes) {
    if (mig == nullptr || (p.gi == static_cast<int>(mig->gi) && p.ci == static_cast<int>(mig->ci))) procs.push_back(p);
  }
  unsigned n = static_cast<unsigned>(procs.size());
  if (*count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n; ++i) {
#ifdef GPULENS_FAKE_OLD_DRIVER
    auto* e = static_cast<nvmlProcessDetail_v1_t*>(infos) + i;
    e->usedGpuCcProtectedMemory = 0;
#else
    auto* e = static_cast<nvmlProcessInfo_t*>(infos) + i;
#endif
    e->pid = procs[i].pid;
    e->usedGpuMemory = procs[i].mem;
    e->gpuInstanceId = procs[i].gi < 0 ? 0xFFFFFFFFu : static_cast<unsigned>(procs[i].gi);
    e->computeInstanceId = procs[i].ci < 0 ? 0xFFFFFFFFu : static_cast<unsigned>(procs[i].ci);
  }
  *count = n;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t* samples,
                                                     unsigned* count, unsigned long long last_seen) {
  Gpu* g = gpu_of(dev);
  if (in_mig_mode(dev)) return NVML_ERROR_NOT_SUPPORTED;
  if (g == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  double tick = 0;
  if (nvmlReturn_t rc = call(dev, "process_util", &tick, "util_gpu"); rc != NVML_SUCCESS) return rc;
  unsigned long long ts = static_cast<unsigned long long>(state().calls[index_of(dev)]["process_util"]) * 1000000;
  if (ts <= last_seen || g->processes.empty()) return NVML_ERROR_NOT_FOUND;
  unsigned n = static_cast<unsigned>(g->processes.size());
  if (samples == nullptr || *count < n) {
    *count = n;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < n; ++i) {
    samples[i] = {};
    samples[i].pid = g->processes[i].pid;
    samples[i].timeStamp = ts;
    samples[i].smUtil = g->processes[i].sm;
  }
  *count = n;
  return NVML_SUCCESS;
}

#ifdef GPULENS_FAKE_OLD_DRIVER
FAKE_API nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t, void*) { return NVML_ERROR_NOT_SUPPORTED; }
#else
FAKE_API nvmlReturn_t nvmlDeviceGetConfComputeMemSizeInfo(nvmlDevice_t, void*) { return NVML_ERROR_NOT_SUPPORTED; }
FAKE_API nvmlReturn_t nvmlDeviceGetRunningProcessDetailList(nvmlDevice_t, void*) { return NVML_ERROR_NOT_SUPPORTED; }
#endif

FAKE_API nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, unsigned* level) {
  Gpu* ga = gpu_of(a);
  int ib = index_of(b);
  if (ga == nullptr || ib < 0) return NVML_ERROR_INVALID_ARGUMENT;
  auto it = ga->topology.find(ib);
  *level = it == ga->topology.end() ? NVML_TOPOLOGY_NODE : it->second;
  return NVML_SUCCESS;
}

FAKE_API nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t dev, unsigned size, unsigned long* set) {
  if (size == 0 || set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(set, 0, size * sizeof(unsigned long));
  return get(dev, "cpu_affinity", &set[0]);
}

FAKE_API nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t dev, unsigned size, unsigned long* set, unsigned) {
  if (size == 0 || set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  std::memset(set, 0, size * sizeof(unsigned long));
  return get(dev, "mem_affinity", &set[0]);
}

FAKE_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) {
  *set = reinterpret_cast<nvmlEventSet_t>(new FakeEventSet);
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long* types) {
  if (nvmlReturn_t rc = call(dev, "events", nullptr); rc != NVML_SUCCESS) return rc;
  *types = nvmlEventTypeXidCriticalError | 0x7;
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr || set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if ((types & ~(nvmlEventTypeXidCriticalError | 0x7ULL)) != 0) return NVML_ERROR_NOT_SUPPORTED;
  std::lock_guard lock(state().mu);
  auto* s = reinterpret_cast<FakeEventSet*>(set);
  if ((types & nvmlEventTypeXidCriticalError) != 0) {
    for (auto x : g->xids) s->pending.push_back({dev, nvmlEventTypeXidCriticalError, x, 0xFFFFFFFFu, 0xFFFFFFFFu});
  }
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned timeout_ms) {
  auto* s = reinterpret_cast<FakeEventSet*>(set);
  {
    std::lock_guard lock(state().mu);
    if (!s->pending.empty()) {
      *data = s->pending.front();
      s->pending.pop_front();
      return NVML_SUCCESS;
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
  return NVML_ERROR_TIMEOUT;
}
FAKE_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
  delete reinterpret_cast<FakeEventSet*>(set);
  return NVML_SUCCESS;
}

#ifndef GPULENS_FAKE_OLD_DRIVER
FAKE_API nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t dev, nvmlGpmSupport_t* s) {
  const MigDevice* mig = mig_of(dev);
  Gpu* g = mig != nullptr ? &state().script.gpus[mig->parent] : gpu_of(dev);
  if (g == nullptr || s == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (s->version != NVML_GPM_SUPPORT_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  s->isSupportedDevice = g->gpm && g->arch >= NVML_DEVICE_ARCH_HOPPER ? 1 : 0;
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* s) {
  std::lock_guard lock(state().mu);
  ++state().gpm_allocs;
  *s = reinterpret_cast<nvmlGpmSample_t>(new FakeSample);
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) {
  delete reinterpret_cast<FakeSample*>(s);
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t dev, nvmlGpmSample_t s) {
  if (s == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = call(dev, "gpm_sample", nullptr); rc != NVML_SUCCESS) return rc;
  auto* fs = reinterpret_cast<FakeSample*>(s);
  fs->dev = dev;
  const MigDevice* mig = mig_of(dev);
  const int parent = mig != nullptr ? mig->parent : index_of(dev);
  std::lock_guard lock(state().mu);
  fs->seq = state().calls[parent][(mig != nullptr ? mig->prefix() : std::string()) + "gpm_sample"];
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* m) {
  if (m == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (m->version != NVML_GPM_METRICS_GET_VERSION) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
  auto* a = reinterpret_cast<FakeSample*>(m->sample1);
  auto* b = reinterpret_cast<FakeSample*>(m->sample2);
  if (a == nullptr || b == nullptr || a->dev == nullptr || a->dev != b->dev || a->seq >= b->seq) {
    return NVML_ERROR_INVALID_ARGUMENT;  // both samples must be taken, older first
  }
  if (m->numMetrics > kGpmMetricCapacity) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned i = 0; i < m->numMetrics; ++i) {
    nvmlGpmMetric_t& x = m->metrics[i];
    x.nvmlReturn = call(a->dev, "gpm." + std::to_string(x.metricId), &x.value);
  }
  return NVML_SUCCESS;
}
#endif

FAKE_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned* current, unsigned* pending) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr || current == nullptr || pending == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = call(dev, "mig_mode", nullptr); rc != NVML_SUCCESS) return rc;
  if (g->mig_mode < 0) return NVML_ERROR_NOT_SUPPORTED;
  *current = static_cast<unsigned>(g->mig_mode);
  *pending = static_cast<unsigned>(g->mig_pending);
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned* count) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (g->mig_mode < 0) return NVML_ERROR_NOT_SUPPORTED;
  *count = g->mig_mode == 1 ? std::max<unsigned>(7, static_cast<unsigned>(g->migs.size())) : 0;
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned index, nvmlDevice_t* mig) {
  Gpu* g = gpu_of(dev);
  if (g == nullptr || mig == nullptr || g->mig_mode != 1) return NVML_ERROR_INVALID_ARGUMENT;
  if (index >= g->migs.size()) return NVML_ERROR_NOT_FOUND;
  *mig = reinterpret_cast<nvmlDevice_t>(&g->migs[index]);
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned* id) {
  const MigDevice* m = mig_of(dev);
  if (m == nullptr || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = m->gi;
  return NVML_SUCCESS;
}
FAKE_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned* id) {
  const MigDevice* m = mig_of(dev);
  if (m == nullptr || id == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *id = m->ci;
  return NVML_SUCCESS;
}

// Test hook, not NVML: GPM sample buffers allocated so far.
FAKE_API long gpulensFakeGpmAllocations() {
  std::lock_guard lock(state().mu);
  return state().gpm_allocs;
}
