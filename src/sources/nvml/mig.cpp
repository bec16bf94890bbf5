// MIG discovery and per-instance collection; see mig.h.
#include "sources/nvml/mig.h"

#include <cstring>

#include "sources/nvml/gpu.h"

namespace gpulens {
namespace {

std::string read_string(nvmlReturn_t (*fn)(nvmlDevice_t, char*, unsigned), nvmlDevice_t dev, nvmlReturn_t& rc) {
  char buf[96] = {};
  rc = fn != nullptr ? fn(dev, buf, sizeof buf) : NVML_ERROR_FUNCTION_NOT_FOUND;
  return rc == NVML_SUCCESS ? std::string(buf, strnlen(buf, sizeof buf)) : std::string();
}

}  // namespace

std::string mig_profile_from_name(const std::string& name) {
  const size_t at = name.rfind(" MIG ");
  if (at == std::string::npos) return {};
  std::string rest = name.substr(at + 5);
  return rest.substr(0, rest.find(' '));  // "1g.10gb" of "... MIG 1g.10gb Device 0"
}

void discover_mig(const NvmlApi& api, GpuState& gpu) {
  MigState& m = gpu.mig;
  if (m.unsupported || api.get_mig_mode == nullptr) return;
  unsigned current = 0, pending = 0;
  if (nvmlReturn_t rc = api.get_mig_mode(gpu.dev, &current, &pending); rc != NVML_SUCCESS) {
    if (unsupported(rc)) {
      m.unsupported = true;
      m.current = m.pending = -1;
      m.instances.clear();
    }
    return;  // a transient failure keeps the last layout
  }
  m.current = static_cast<int>(current);
  m.pending = static_cast<int>(pending);
  std::vector<std::unique_ptr<MigInstance>> found;
  unsigned max = 0;
  if (m.enabled() && api.get_max_mig_devices != nullptr && api.get_mig_handle != nullptr &&
      api.get_max_mig_devices(gpu.dev, &max) == NVML_SUCCESS) {
    for (unsigned i = 0; i < max; ++i) {
      nvmlDevice_t dev = nullptr;
      if (api.get_mig_handle(gpu.dev, i, &dev) != NVML_SUCCESS) continue;  // NOT_FOUND: no device there
      nvmlReturn_t rc = NVML_SUCCESS;
      MigIdentity id;
      id.uuid = read_string(api.get_uuid, dev, rc);
      if (rc != NVML_SUCCESS) continue;
      if (api.get_gpu_instance_id == nullptr || api.get_gpu_instance_id(dev, &id.gpu_instance) != NVML_SUCCESS) continue;
      if (api.get_compute_instance_id == nullptr || api.get_compute_instance_id(dev, &id.compute_instance) != NVML_SUCCESS) {
        continue;
      }
      id.profile = mig_profile_from_name(read_string(api.get_name, dev, rc));
      // The same instance (UUID and ids) keeps its GPM snapshots; the handle
      // is taken afresh, handles being reusable.
      std::unique_ptr<MigInstance> inst;
      for (auto& old : m.instances) {
        if (old && old->id.uuid == id.uuid && old->id.gpu_instance == id.gpu_instance &&
            old->id.compute_instance == id.compute_instance && old->id.profile == id.profile) {
          inst = std::move(old);
          break;
        }
      }
      if (!inst) {
        inst = std::make_unique<MigInstance>();
        inst->id = std::move(id);
        inst->extra = mig_labels(inst->id);
      }
      inst->dev = dev;
      found.push_back(std::move(inst));
    }
  }
  m.instances = std::move(found);
}

void collect_mig(CollectContext& ctx, GpuState& gpu) {
  const MigState& m = gpu.mig;
  if (m.current < 0 || gpu.lost) return;
  const NvmlApi& api = ctx.api;
  Frame& f = ctx.frame;
  const int g = gpu.index;
  static const Labels kCurrent{{"state", "current"}}, kPending{{"state", "pending"}};
  f.set(FieldId::kGpuMigMode, g, kCurrent, m.current == static_cast<int>(NVML_DEVICE_MIG_ENABLE) ? 1 : 0);
  f.set(FieldId::kGpuMigMode, g, kPending, m.pending == static_cast<int>(NVML_DEVICE_MIG_ENABLE) ? 1 : 0);
  if (m.current != m.pending) {
    ctx.warn("MIG mode of GPU " + std::to_string(g) + " (" + gpu.uuid + ") is " +
             (m.current == 1 ? "enabled" : "disabled") + " and pending " + (m.pending == 1 ? "enabled" : "disabled") +
             ": the change takes effect when the GPU is reset");
  }
  for (const auto& ip : m.instances) {
    MigInstance& inst = *ip;
    f.set(FieldId::kGpuMigInfo, g, inst.extra, 1);
    bool have = false;
    if (!inst.mem_v2_off && api.get_memory_v2 != nullptr) {
      nvmlMemory_v2_t mem{};
      mem.version = nvmlMemory_v2;
      nvmlReturn_t rc = api.get_memory_v2(inst.dev, &mem);
      if (rc == NVML_SUCCESS) {
        have = true;
        f.set(FieldId::kGpuMigMemoryTotal, g, inst.extra, static_cast<double>(mem.total));
        f.set(FieldId::kGpuMigMemoryUsed, g, inst.extra, static_cast<double>(mem.used));
        f.set(FieldId::kGpuMigMemoryFree, g, inst.extra, static_cast<double>(mem.free));
      } else if (unsupported(rc) || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
        inst.mem_v2_off = true;
      }
    }
    if (!have && !inst.mem_off && (inst.mem_v2_off || api.get_memory_v2 == nullptr) && api.get_memory_v1 != nullptr) {
      nvmlMemory_t mem{};
      nvmlReturn_t rc = api.get_memory_v1(inst.dev, &mem);
      if (rc == NVML_SUCCESS) {
        f.set(FieldId::kGpuMigMemoryTotal, g, inst.extra, static_cast<double>(mem.total));
        f.set(FieldId::kGpuMigMemoryUsed, g, inst.extra, static_cast<double>(mem.used));
        f.set(FieldId::kGpuMigMemoryFree, g, inst.extra, static_cast<double>(mem.free));
      } else if (unsupported(rc)) {
        inst.mem_off = true;
      }
    }
    // GPM on the MIG handle, where the parent GPU has GPM at all.
    if (!inst.gpm_tried) {
      inst.gpm_tried = true;
      if (gpu.gpm_open_rc == NVML_SUCCESS) inst.gpm.open(api, inst.dev);
    }
    if (!inst.gpm.active()) continue;
    GpmValues v;
    nvmlReturn_t rc = inst.gpm.sample(inst.dev, ctx.now_ms, v);
    if (rc == NVML_ERROR_NO_PERMISSION || unsupported(rc)) {
      inst.gpm.close();
      continue;
    }
    if (rc != NVML_SUCCESS) continue;
    struct Map {
      GpmMetric metric;
      FieldId field;
    };
    for (const Map& x : {Map{GpmMetric::kGraphics, FieldId::kGpuMigGraphicsEngineActive},
                         Map{GpmMetric::kSmActive, FieldId::kGpuMigSmActive},
                         Map{GpmMetric::kSmOccupancy, FieldId::kGpuMigSmOccupancy},
                         Map{GpmMetric::kTensor, FieldId::kGpuMigTensorActive},
                         Map{GpmMetric::kDram, FieldId::kGpuMigDramActive}}) {
      if (v.has(x.metric)) f.set(x.field, g, inst.extra, v.get(x.metric));
    }
  }
}

}  // namespace gpulens
