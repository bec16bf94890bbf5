// Findings for an NCCL Report: what is wrong with the job's communication
// setup, with the evidence and what to do.
//
// Each Finding uses a cause id from the project's findings vocabulary:
//   network_fallback  traffic between nodes on TCP sockets, IB disabled by the
//                     environment, nodes that chose different networks
//   communication     GPUDirect RDMA unavailable, NCCL errors and timeouts,
//                     mismatched NCCL versions
//   topology          P2P or shared memory disabled, intra-node traffic over the NIC
// and a `check` naming what exactly was seen (socket_transport, ib_disabled,
// transport_mismatch, gdr_unavailable, p2p_disabled, error:<class>,
// version_mismatch). Critical findings come first.
#pragma once

#include <string>
#include <vector>

#include "analyze/nccl/report.h"

namespace gpulens::nccl {

// Log lines quoted as evidence; any may be empty.
struct Evidence {
  std::vector<std::string> socket_lines;   // first NET/Socket connection lines
  std::vector<std::string> gdr_lines;      // "GPU Direct RDMA Disabled" lines
  std::vector<std::string> no_gdr_lines;   // first RDMA connection lines without /GDRDMA
};

std::vector<Finding> derive_findings(const Report& r, const Evidence& ev);

}  // namespace gpulens::nccl
