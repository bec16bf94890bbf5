// The one table of sources. Keep it in sync with docs: docs/how-it-works.md "Sources".
#include "sources/registry.h"

#include <array>

#include "sources/host.h"
#include "sources/kmsg.h"
#include "sources/kubelet/kubelet_source.h"
#include "sources/nvml/nvml_source.h"
#include "sources/scrape/scrape_source.h"
#include "sources/sim/sim_source.h"

namespace gpulens {
namespace {

const std::array kSources{
    SourceEntry{"sim", "scenario-driven simulator of a GPU node (demo, tests)", false, true, make_sim_source},
    SourceEntry{"nvml", "NVIDIA GPUs through the driver's NVML (dlopen; GPM on Hopper+)", true, true, make_nvml_source},
    SourceEntry{"host", "host CPU, PSI, disk, NIC and InfiniBand from procfs/sysfs", true, false,
                make_host_source},
    SourceEntry{"kubelet", "Kubernetes pod, namespace and container per GPU from the kubelet's PodResources API",
                false, false, make_kubelet_source},
    SourceEntry{"scrape", "exporters on the node over HTTP (dcgm-exporter, node_exporter, vLLM, SGLang, TGI, Triton)",
                false, false, make_scrape_source},
    SourceEntry{"kmsg", "NVIDIA XIDs, NVSwitch SXids and PCIe AER errors from the kernel log (/dev/kmsg)", false,
                false, make_kmsg_source},
};

}  // namespace

std::span<const SourceEntry> source_entries() { return kSources; }

std::vector<std::string> default_source_names() {
  std::vector<std::string> names;
  for (const auto& e : kSources) {
    if (e.enabled_by_default) names.emplace_back(e.name);
  }
  return names;
}

const SourceEntry* find_source(std::string_view name) {
  for (const auto& e : kSources) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace gpulens
