// Findings for an NCCL Report (see findings.h). The actions are the usual
// causes of each symptom, most likely first.
#include "analyze/nccl/findings.h"

#include <algorithm>
#include <map>

namespace gpulens::nccl {
namespace {

const Event* find_event(const std::vector<Event>& v, std::string_view kind) {
  for (const auto& e : v) {
    if (e.kind == kind) return &e;
  }
  return nullptr;
}

std::string xyz(const std::string& version) { return version.substr(0, version.find('+')); }

const std::map<std::string, std::pair<const char*, const char*>>& error_texts() {
  static const std::map<std::string, std::pair<const char*, const char*>> kTexts{
      {"ib_completion_error",
       {"an InfiniBand/RoCE work request completed with an error",
        "status 12 (transport retry exceeded) means the peer stopped answering: first check whether "
        "the remote process died, then the link (ibstat, port error counters), and on RoCE the "
        "PFC/ECN settings, MTU and NCCL_IB_GID_INDEX. Status 4 (local protection) usually points at "
        "GPUDirect RDMA with PCIe ACS enabled; status 5 (flushed) follows an earlier error."}},
      {"ib_setup_error",
       {"setting up an InfiniBand/RoCE connection failed",
        "ibv_modify_qp failures usually mean a wrong GID index (set NCCL_IB_GID_INDEX, typically 3 "
        "for RoCE v2), no route between the ports (VLAN, subnet), or a port that is down (ibstat)."}},
      {"plugin_error",
       {"the external network plugin failed",
        "check that the plugin (aws-ofi-nccl, nccl-rdma-sharp-plugins) matches the NCCL version, "
        "that libfabric/EFA or the RDMA stack it needs is installed and visible in the container, "
        "and the provider settings (FI_PROVIDER=efa, FI_EFA_USE_DEVICE_RDMA)."}},
      {"socket_error",
       {"a TCP connection between ranks failed",
        "make NCCL_SOCKET_IFNAME name an interface every node can reach (not docker0, virbr0 or "
        "lo), open the firewall between nodes for NCCL's ports, and check that the peer process "
        "was still alive at that time."}},
      {"remote_error",
       {"a peer closed its connection",
        "a remote rank most often exited first (exception, out of memory, killed): read that "
        "rank's log before suspecting the network; otherwise check the link between the nodes."}},
      {"timeout",
       {"a collective timed out",
        "one rank hung or died, or ranks issued collectives in different orders: compare the "
        "last collective of every rank (sequence numbers) and look for the rank that stopped "
        "first; raise the timeout only once the cause is known."}},
      {"system_error",
       {"a system call failed inside NCCL",
        "rerun with NCCL_DEBUG=INFO to see the WARN line; common causes are a too small /dev/shm "
        "in containers (--shm-size or --ipc=host), a low memlock limit (ulimit -l unlimited), "
        "and unreachable socket interfaces."}},
      {"cuda_error",
       {"a CUDA call failed inside NCCL",
        "out of memory is the common case (NCCL needs memory for its buffers on every channel); "
        "otherwise check the driver against the CUDA version NCCL was built for."}},
      {"internal_error",
       {"NCCL reported an internal error",
        "internal errors usually follow an earlier system or network error: look for the first "
        "WARN line; check that every node runs the same NCCL version."}},
  };
  return kTexts;
}

}  // namespace

std::vector<Finding> derive_findings(const Report& r, const Evidence& ev) {
  const auto& socket_lines = ev.socket_lines;
  const auto& gdr_lines = ev.gdr_lines;
  std::vector<Finding> out;
  const std::string& t = r.inter_node_transport;
  bool multi = r.nodes.value_or(0) > 1;
  const Event* no_ib = find_event(r.warnings, "no_ib_device");
  const Event* ib_off = find_event(r.warnings, "ib_disabled_by_env");

  bool socket = t == "Socket" || (t.starts_with("mixed:") && t.find("Socket") != std::string::npos);
  if (socket && t == "Socket") {
    Finding f{"network_fallback", "socket_transport", multi || !r.nodes ? "critical" : "warning",
              "traffic between nodes goes over TCP sockets (NET/Socket), not InfiniBand/RoCE/EFA",
              {}, {}};
    for (const auto& l : socket_lines) f.evidence.push_back(l);
    if (f.evidence.empty()) f.evidence.push_back("inter_node_transport: Socket");
    if (no_ib) f.evidence.push_back(no_ib->first);
    if (ib_off) f.evidence.push_back(ib_off->first);
    for (const auto& p : r.net_plugins) f.evidence.push_back("net plugin present but unused: " + p);
    if (ib_off) {
      f.action = "unset NCCL_IB_DISABLE (or set it to 0) so NCCL can use the RDMA network. ";
    }
    f.action +=
        "Check that the RDMA devices are visible where the job runs (ibv_devices, ibstat; in "
        "containers /dev/infiniband, rdma-core/libibverbs and the IPC_LOCK capability), that the "
        "NCCL_IB_HCA filter matches them, and on AWS that aws-ofi-nccl and EFA are installed. TCP "
        "over IPoIB is still TCP. When the cluster truly has only Ethernet, raise "
        "NCCL_SOCKET_NTHREADS/NCCL_NSOCKS_PERTHREAD and expect a fraction of RDMA bandwidth.";
    out.push_back(std::move(f));
  }
  if (ib_off && !socket) {
    out.push_back({"network_fallback", "ib_disabled", "warning",
                   "InfiniBand is disabled by the environment (NCCL_IB_DISABLE)",
                   {ib_off->first},
                   "remove NCCL_IB_DISABLE unless the fallback to TCP sockets is intended."});
  }
  if (t.starts_with("mixed:")) {
    Finding f{"network_fallback", "transport_mismatch", "critical",
              "nodes chose different networks (" + t.substr(6) + ")", {}, {}};
    for (const auto& [node, tr] : r.transport_by_node) f.evidence.push_back(node + ": " + tr);
    if (const Event* e = find_event(r.warnings, "transport_mismatch")) f.evidence.push_back(e->first);
    f.action =
        "every node must see the same network: one node without usable RDMA devices (driver, "
        "container device mounts, NCCL_IB_HCA) falls back to sockets and the job fails with "
        "'wrong type' errors or hangs; make all nodes use the same NCCL build and plugins.";
    out.push_back(std::move(f));
  } else if (const Event* e = find_event(r.warnings, "transport_mismatch")) {
    out.push_back({"network_fallback", "transport_mismatch", "critical",
                   "peers connected with different network types", {e->first},
                   "make every node use the same network (IB/RoCE/Socket) and NCCL build."});
  }

  bool rdma = t == "IB" || t == "RoCE" || t.starts_with("Plugin:");
  if ((rdma && r.gdr == "no") || !gdr_lines.empty()) {
    Finding f{"communication", "gdr_unavailable", "warning",
              "network transfers do not use GPUDirect RDMA: data is staged through host memory",
              {}, {}};
    for (const auto& l : gdr_lines) f.evidence.push_back(l);
    if (rdma && r.gdr == "no") {
      for (const auto& l : ev.no_gdr_lines) f.evidence.push_back(l);
    }
    if (f.evidence.empty()) f.evidence.push_back("NET connection lines without /GDRDMA (" + t + ")");
    f.action =
        "load the nvidia-peermem (or nv_peer_mem) kernel module or use DMA-BUF, check that the "
        "GPU and the NIC share a PCIe switch (nvidia-smi topo -m), that PCIe ACS is disabled, and "
        "that NCCL_NET_GDR_LEVEL is not restricting it.";
    out.push_back(std::move(f));
  }

  {
    Finding f{"topology", "p2p_disabled", "warning",
              "GPU peer-to-peer or shared-memory transport is disabled or bypassed", {}, {}};
    for (const char* kind : {"p2p_disabled_by_env", "shm_disabled_by_env"}) {
      if (const Event* e = find_event(r.warnings, kind)) f.evidence.push_back(e->first);
    }
    for (const auto& p : r.intra_node) {
      if (p.starts_with("NET/")) f.evidence.push_back("GPUs on the same node talk via " + p);
    }
    if (!f.evidence.empty()) {
      f.action =
          "unset NCCL_P2P_DISABLE, NCCL_P2P_LEVEL=LOC and NCCL_SHM_DISABLE unless they work "
          "around a known problem; GPUs in one node then use NVLink/PCIe P2P instead of the NIC.";
      out.push_back(std::move(f));
    }
  }

  for (const auto& e : r.errors) {
    auto it = error_texts().find(e.kind);
    if (it == error_texts().end()) continue;
    out.push_back({"communication", "error:" + e.kind, "critical",
                   std::string(it->second.first) + " (" + std::to_string(e.count) + "x)",
                   {e.first}, it->second.second});
  }

  std::vector<std::string> xyzs;
  for (const auto& v : r.nccl_versions) {
    if (std::find(xyzs.begin(), xyzs.end(), xyz(v)) == xyzs.end()) xyzs.push_back(xyz(v));
  }
  if (xyzs.size() > 1) {
    out.push_back({"communication", "version_mismatch", "warning",
                   "processes run different NCCL versions", r.nccl_versions,
                   "run the same NCCL release on every node; mixed versions can fail to connect or "
                   "hang."});
  }

  auto rank = [](const Finding& f) { return f.severity == "critical" ? 0 : f.severity == "warning" ? 1 : 2; };
  std::stable_sort(out.begin(), out.end(), [&](const Finding& a, const Finding& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace gpulens::nccl
