// GPU-to-GPU topology, NUMA node and CPU affinity, read once at open; see gpu.h.
#include <cstring>
#include <fstream>

#include "sources/nvml/cgroup.h"
#include "sources/nvml/gpu.h"

namespace gpulens {
namespace {

std::string_view level_name(unsigned level) {
  switch (level) {
    case NVML_TOPOLOGY_INTERNAL: return "PIX";  // same board
    case NVML_TOPOLOGY_SINGLE: return "PIX";
    case NVML_TOPOLOGY_MULTIPLE: return "PXB";
    case NVML_TOPOLOGY_HOSTBRIDGE: return "PHB";
    case NVML_TOPOLOGY_NODE: return "NODE";
    default: return "SYS";
  }
}

// "00000000:18:00.0" (NVML) -> "0000:18:00.0" (sysfs), lower case.
std::string sysfs_bus_id(std::string_view nvml) {
  std::string s(nvml.size() > 12 ? nvml.substr(nvml.size() - 12) : nvml);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

void open_topology(const NvmlApi& api, std::deque<GpuState>& gpus, const std::string& sys_root) {
  for (GpuState& a : gpus) {
    // Peers over NVLink: count links whose far end is that GPU.
    std::vector<int> nvlinks(gpus.size(), 0);
    if (api.get_nvlink_remote_pci != nullptr) {
      for (const NvLink& l : a.links) {
        nvmlPciInfo_t pci{};
        if (!l.up || api.get_nvlink_remote_pci(a.dev, l.id, &pci) != NVML_SUCCESS) continue;
        const std::string bus(pci.busId, strnlen(pci.busId, sizeof pci.busId));
        for (size_t j = 0; j < gpus.size(); ++j) {
          if (gpus[j].pci_bus_id == bus) ++nvlinks[j];
        }
      }
    }
    for (GpuState& b : gpus) {
      if (&a == &b) continue;
      std::string path;
      if (nvlinks[b.index] > 0) {
        path = "NVLINK";
      } else if (api.get_common_ancestor != nullptr) {
        unsigned level = 0;
        if (api.get_common_ancestor(a.dev, b.dev, &level) == NVML_SUCCESS) path = level_name(level);
      }
      if (path.empty()) continue;
      a.topology_extras.push_back(Labels{{"peer", std::to_string(b.index)}, {"path", path}});
    }
    // NUMA node: NVML's memory affinity, else sysfs.
    unsigned long nodes[4] = {};
    if (api.get_memory_affinity != nullptr &&
        api.get_memory_affinity(a.dev, 4, nodes, NVML_AFFINITY_SCOPE_NODE) == NVML_SUCCESS) {
      for (int n = 0; n < 256 && a.numa_node < 0; ++n) {
        if ((nodes[n / 64] >> (n % 64)) & 1UL) a.numa_node = n;
      }
    }
    if (a.numa_node < 0 && !a.pci_bus_id.empty()) {
      std::ifstream in(sys_root + "/bus/pci/devices/" + sysfs_bus_id(a.pci_bus_id) + "/numa_node");
      int n = -1;
      if (in >> n && n >= 0) a.numa_node = n;
    }
    unsigned long cpus[16] = {};  // 1024 CPUs
    if (api.get_cpu_affinity != nullptr && api.get_cpu_affinity(a.dev, 16, cpus) == NVML_SUCCESS) {
      std::string list = mask_to_list(cpus, 16);
      if (!list.empty()) a.cpu_affinity_extra = Labels{{"cpus", list}};
    }
  }
}

}  // namespace gpulens
