// MIG: the GPU and compute instances of a GPU in MIG mode, as NVML's MIG
// device handles show them.
//
// discover_mig() reads the GPU's MIG mode (current and pending) and, when
// it is enabled, every MIG device: its handle, MIG UUID, GPU-instance and
// compute-instance ids and the profile its name carries ("NVIDIA H100 80GB
// HBM3 MIG 1g.10gb" -> "1g.10gb"). It runs at open and again on every
// slow-tier collection, because instances are created and destroyed while
// the driver runs and their handles can be reused; an instance whose MIG
// UUID is still there keeps its state (its GPM snapshots).
//
// collect_mig() fills, per instance, gpu_mig_info, the instance's memory
// (memory v2, v1 where v2 is missing) and, where GPM works on the MIG
// handle (Hopper+), its activity; gpu_mig_mode for the GPU. Series carry the
// parent GPU's index and mig_labels() (model/series.h). A GPU without MIG
// support (NOT_SUPPORTED, or no symbol) gets none of these series.
//
//   discover_mig(api, gpu, now_ms);           // at open / slow tier
//   collect_mig(ctx, gpu);                    // every collection
//
// Thread-safety: like GpuState, owned by the collecting thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/series.h"
#include "sources/nvml/gpm.h"
#include "sources/nvml/loader.h"

namespace gpulens {

struct CollectContext;
struct GpuState;

struct MigInstance {
  nvmlDevice_t dev = nullptr;
  MigIdentity id;
  Labels extra;  // mig_labels(id)
  GpmSampler gpm;
  bool gpm_tried = false;
  bool mem_v2_off = false, mem_off = false;
  std::vector<unsigned char> proc_buf;  // process list buffer, reused
};

struct MigState {
  int current = -1, pending = -1;  // NVML_DEVICE_MIG_*; -1: MIG unsupported
  bool enabled() const { return current == 1; }
  bool unsupported = false;            // the GPU said NOT_SUPPORTED: never asked again
  std::vector<std::unique_ptr<MigInstance>> instances;  // in MIG device index order
};

// The profile in a MIG device's name: the token after the last " MIG "
// ("" when the name has none).
std::string mig_profile_from_name(const std::string& name);

// Reads MIG mode and instances of `gpu`; a no-op for a GPU that said
// MIG is not supported.
void discover_mig(const NvmlApi& api, GpuState& gpu);
void collect_mig(CollectContext& ctx, GpuState& gpu);

}  // namespace gpulens
