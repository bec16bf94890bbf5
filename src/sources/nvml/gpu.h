// GpuState: everything the NVML source keeps about one GPU between
// collections, and the functions that fill a frame from it.
//
// open_gpu() runs once per GPU at open(): identity, what the GPU supports,
// label strings built up front (links, clock-event reasons, peaks), the GPM
// buffers. collect_gpu() runs each interval and only reads: one pass over
// NVML calls, values converted to catalog units (percent -> ratio, mW -> W,
// mJ -> J, MHz -> Hz, KiB -> bytes, MiB/s -> bytes/s, ns -> s), rates
// integrated into the _bytes_total counters. A call that answers
// NOT_SUPPORTED or FUNCTION_NOT_FOUND is never asked again; GPU_IS_LOST ends
// the GPU's collection with gpu_up 0 and the other GPUs carry on.
//
// Thread-safety: a GpuState belongs to the collecting thread.
#pragma once

#include <bitset>
#include <deque>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/frame.h"
#include "sources/nvml/gpm.h"
#include "sources/nvml/loader.h"
#include "sources/nvml/mig.h"
#include "sources/nvml/pcie_peak.h"

namespace gpulens {

struct ProcessIdentity;

// A call this GPU or driver cannot make: asked no more, its value absent.
inline bool unsupported(nvmlReturn_t rc) {
  return rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND;
}

class ProcessCache;

// Calls that can be switched off for a GPU once it says it cannot do them.
enum class Probe : uint8_t {
  kUtil, kMemV2, kMemV1, kTemp, kMemTemp, kPower, kPowerLimit, kEnergy, kSmClock, kSmClockMax,
  kMemClock, kMemClockMax, kClockEvents, kClockEventTime, kPcieGen, kPcieWidth, kPcieGenMax,
  kPcieWidthMax, kPcieCounters, kPcieThroughput, kReplays, kEcc, kRemap, kPstate, kNvlinkBytes,
  kProcesses, kProcessUtil, kEncoder, kDecoder, kRecoveryAction, kNvlinkRecovery, kRepairStatus, kCount
};

struct NvLink {
  unsigned id = 0;
  Labels extra;                // {link="3"}
  double speed = 0;            // bytes/s per direction, 0 if unknown
  bool up = false;
  double tx = 0, rx = 0;       // last cumulative bytes
  bool have_bytes = false;
};

struct GpuState {
  int index = 0;
  nvmlDevice_t dev = nullptr;
  std::string uuid, name, pci_bus_id, serial;
  unsigned arch = 0;
  int minor = -1;  // device minor number, -1 when NVML cannot say
  bool lost = false;
  std::bitset<static_cast<size_t>(Probe::kCount)> off;  // unsupported calls

  Labels info_extra;  // model, pci_bus_id, driver, serial...
  std::vector<std::pair<uint64_t, Labels>> reasons;  // supported clock-event bits, {reason="..."}
  unsigned gen_max = 0, width_max = 0;  // read once at open
  unsigned sm_clock_max = 0, mem_clock_max = 0;  // MHz; static, and ~2 ms per read on R580
  std::vector<nvmlFieldValue_t> fields;  // field-values request, reused

  // PCIe
  PciePeak peak;
  unsigned cal_gen = 0, cal_width = 0;  // link recorded by gpulens calibrate; 0 unknown
  Labels peak_rx_extra, peak_tx_extra;
  double pcie_tx_total = 0, pcie_rx_total = 0;   // integrated bytes
  double pcie_tx_counter = -1, pcie_rx_counter = -1;  // last NVML byte counters (fields 197/198)
  int64_t last_ms = 0;

  // Slow tier: readings that are costly or change slowly (energy, power
  // limit, ECC, row remapping, replays, NVLink link state, clock-event time
  // counters, per-process SM share) are read every CollectContext::slow_interval_ms and replayed
  // from this cache in the collections between.
  bool slow_now = true;             // this collection reads the slow tier
  int64_t slow_next_ms = 0, slow_last_ms = 0;
  std::vector<Frame::Value> slow_values;
  bool util_have = false;           // last per-process utilisation read worked
  unsigned util_samples = 0;

  std::vector<NvLink> links;
  GpmSampler gpm;
  nvmlReturn_t gpm_open_rc = NVML_ERROR_NOT_SUPPORTED;
  bool gpm_warned = false;

  // processes (buffers grow, never shrink; reused every collection)
  std::vector<unsigned char> proc_buf;
  size_t proc_elem = sizeof(nvmlProcessInfo_t);
  std::vector<nvmlProcessUtilizationSample_t> util_buf;
  unsigned long long util_last_seen = 0;
  // This collection's processes that have an identity, for gpu_job_info
  // (valid until ProcessCache::sweep()); the job labels last derived and
  // what they were derived from ((pid, start time)..., mapping generation).
  std::vector<const ProcessIdentity*> job_processes;
  std::vector<uint64_t> job_inputs, job_inputs_next;
  std::vector<Labels> job_extras;

  // MIG mode and instances (discovered at open and on every slow tier)
  MigState mig;

  // topology, fixed at open
  std::vector<Labels> topology_extras;  // {path="NVLINK",peer="1"}
  int numa_node = -1;
  Labels cpu_affinity_extra;            // {cpus="0-31"}
};

struct CollectContext {
  const NvmlApi& api;
  Frame& frame;
  int64_t now_ms;
  std::function<void(const std::string&)> warn;  // one-line notices (throttled by the caller)
  int64_t slow_interval_ms = 0;                   // slow tier period; 0: every collection
};

// Identity and capabilities; returns false when the GPU cannot be used at
// all (its handle or UUID cannot be read), with the reason in `why`.
bool open_gpu(const NvmlApi& api, unsigned index, const std::string& driver, const PcieCalibration* cal,
              GpuState& gpu, std::string& why);
void collect_gpu(CollectContext& ctx, GpuState& gpu);
// Compute processes with memory, SM share, pod identity and CPU affinity.
void collect_processes(CollectContext& ctx, GpuState& gpu, ProcessCache& cache);
// gpu_job_info of the GPU (gpu_jobs.h), from the mapping directory's ids for
// it (`mapped`, null: none; `map_generation` changes with the directory's
// content) and the processes collect_processes() just listed.
void collect_jobs(CollectContext& ctx, GpuState& gpu, const std::vector<std::string>* mapped, uint64_t map_generation);
// Topology at open: peers (NVLink or PCIe common ancestor), NUMA node, CPU affinity.
void open_topology(const NvmlApi& api, std::deque<GpuState>& gpus, const std::string& sys_root);

}  // namespace gpulens
