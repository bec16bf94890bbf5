// Scenario: a simulated node and the workload it runs over time.
//
// A scenario is a YAML file (see scenarios/README.md for every key):
//
//   name: input-pipeline-cpu
//   description: DataLoader workers cannot keep up; GPUs wait for batches.
//   expect: {cause: input_pipeline, gpus: all}
//   node: {gpu_model: h100-sxm, gpus: 8, cpus: 96}
//   phases:
//     - {name: starved, duration: 1h, workload: {duty: 0.35, burst: true, cpu_busy: 0.97}}
//   faults:
//     - {kind: thermal, gpu: 3, after: 2m}
//
// Loading validates every key and value and names the file, line and problem
// on error. Unknown keys are errors (typos must not pass silently).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sources/sim/models.h"
#include "util/status.h"

namespace gpulens::sim {

// What the GPUs do in a phase. Ratios are 0..1; rates in GB/s (1e9 B/s).
struct Workload {
  std::string kind = "training";  // training | inference | idle
  double duty = 0.95;             // fraction of time a kernel runs (nvidia-smi util)
  double sm_efficiency = 0.9;     // fraction of SMs busy while kernels run
  double occupancy = 0.55;        // resident warps / max while busy
  double tensor = 0.55;           // tensor pipe activity while busy
  double fp32 = 0.15, fp16 = 0.05, fp64 = 0.0;
  double dram = 0.35;             // DRAM bandwidth utilisation while busy
  bool burst = false;             // duty comes in bursts (starved pipelines)
  double h2d_gbps = 1.5, d2h_gbps = 0.3;
  double nvlink_gbps = 20;        // per GPU per direction, all links
  double net_gbps = 0;            // inter-node traffic per node per direction
  std::string transport = "ib";   // ib | socket
  double mem_used = 0.75;         // of framebuffer
  double fragmentation = 0.08, fragmentation_end = -1;  // end < 0: constant
  double cpu_busy = 0.35, iowait = 0.01, psi_cpu = 0.02, psi_io = 0.01;
  double disk_busy = 0.05, disk_read_mbps = 150;
  // Serving (kind: inference): requests per second, latency quantiles.
  double rps = 0, p50_ms = 0, p99_ms = 0, queue = 0;
  // An engine's saturation (scenario engines only, docs/serving.md): its
  // KV-cache usage (< 0: from the batch), preemptions per second, how fast
  // the queue grows (requests a minute, from the phase's start), the running
  // batch (< 0: rps x p50), time to first token p50/p99 (0: p50/p99 / 5).
  double kv_usage = -1, preemptions = 0, queue_growth = 0, batch = -1, ttft_ms = 0, ttft_p99_ms = 0;
};

struct Phase {
  std::string name;
  int64_t duration_ms = 0;
  Workload workload;
};

struct Fault {
  std::string kind;     // thermal | power_cap | xid | link_degraded | idle_gpu
  int gpu = 0;
  int64_t after_ms = 0;
  int xid = 79;         // kind xid
  int gen = 3, width = 8;  // kind link_degraded
};

// Where the job runs: its GPUs and the NUMA nodes its processes may use
// (the simulated node has NUMA node 0 for the first half of the GPUs and
// node 1 for the rest, CPUs split the same way). GPUs outside the job run
// processes pinned to their own node.
struct Job {
  std::vector<int> gpus;        // empty: no job key (every GPU well placed)
  std::vector<int> numa_nodes;  // empty: each GPU's own node
  bool one_process = false;     // one process drives all its GPUs (else one per GPU)
  // A job id makes each of its GPUs carry gpu_job_info{job_id, source, rank,
  // local_rank, world_size} as the nvml source exports it; the ranks of
  // this node's GPUs start at first_rank (a job on several hosts: one
  // scenario per host, the same id).
  std::string id;               // "" none
  std::string source = "slurm"; // slurm | environment
  int first_rank = 0;
  int world_size = 0;           // 0: the job's GPUs on this node
};

// A serving engine the scenario runs on some of its GPUs: it publishes its
// own /metrics page in the engine's names (vLLM V1), which the simulator
// reads through the scrape source's mapping (scrape::map_page), as a
// scraped engine's page is read. Its process (pid 5000 + its index) is the
// one process on its GPUs; its series carry that pid.
struct Engine {
  std::string kind = "vllm";
  std::string model = "meta-llama/Llama-3.1-8B-Instruct";
  int port = 8000;
  std::vector<int> gpus;           // empty: all
  std::vector<Workload> by_phase;  // the serving workload per phase (the phase's, with the engine's overrides)
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source_path;
  std::string expect_cause;        // "" for healthy/benign scenarios
  std::vector<int> expect_gpus;    // empty: all
  std::string hostname = "sim-node-0";
  GpuModel model;
  int gpus = 8;
  int pcie_gen = 0, pcie_width = 0;  // 0: the model's
  int cpus = 96;
  std::string nic = "eth0";
  double nic_gbps = 100;
  int ib_ports = 8;
  double ib_gbps = 400;
  std::string gpu_links;           // nvlink | pcie; default: nvlink when the model has NVLink
  Job job;
  bool repeat = false;             // loop the phases (else hold the last)
  std::vector<Phase> phases;
  std::vector<Fault> faults;
  std::vector<Engine> engines;     // none: node-wide serving series from the workload (kind inference)

  int64_t total_ms() const;
  // Which phase (index) is in force `elapsed_ms` after the start.
  size_t phase_index(int64_t elapsed_ms) const;
  int numa_nodes() const { return gpus >= 2 ? 2 : 1; }
  int numa_node_of(int gpu) const { return gpus >= 2 && gpu >= gpus / 2 ? 1 : 0; }
  // The phase in force `elapsed_ms` after the start, and how far into it.
  const Phase& phase_at(int64_t elapsed_ms, int64_t* into_ms) const;
};

// Loads a scenario by path, or by name from `dir` (dir/NAME.yaml).
Result<Scenario> load_scenario(const std::string& name_or_path, const std::string& dir);
Result<Scenario> parse_scenario(const std::string& yaml_text, const std::string& origin);
// Names of the scenarios in `dir`, sorted.
std::vector<std::string> list_scenarios(const std::string& dir);
// The scenarios directory: $GPULENS_SCENARIOS, else next to the binary's
// share dir, else the source tree's.
std::string default_scenario_dir();

}  // namespace gpulens::sim
