// The simulator source: a node of GPUs running a scenario.
//
// Values of all layers are derived from one workload description, so they
// agree with each other the way real ones do: a starved input pipeline shows
// bursty, low SM activity, little PCIe traffic and busy host CPUs; an XID 79
// takes one GPU off the bus and stalls its peers. Output depends only on the
// scenario, the seed and the frame time: the same inputs give the same values,
// which is what tests and recordings need.
//
// XIDs go through the agent's XidLedger as the NVML source's do; with
// SimOptions::kernel_log set, each is also appended to that file as the
// NVIDIA driver writes it to the kernel log ("NVRM: Xid (PCI:…): 79, …"), so
// that the kmsg source reading the same file counts it once, with its text.
//
// A scenario's serving engines (Scenario::engines) each write their own
// /metrics page in vLLM V1's names every frame; the page goes through
// scrape::map_page(), the scrape source's mapping, as a scraped engine's
// would, its series labelled engine, endpoint and pid.
//
// Time: the scenario starts at the first frame's time; `speed` scales how
// fast it runs against the frame clock.
//
// Thread-safety: like every source, one sampling thread.
#pragma once

#include <memory>

#include "sources/options.h"
#include "sources/sim/scenario.h"
#include "sources/source.h"

namespace gpulens {

std::unique_ptr<Source> make_sim_source(const SourceOptions& options);
// For tests and `record`: a simulator over an already loaded scenario.
std::unique_ptr<Source> make_sim_source(sim::Scenario scenario, uint64_t seed, double speed,
                                        std::shared_ptr<XidLedger> xids = nullptr, std::string kernel_log = {});

}  // namespace gpulens
