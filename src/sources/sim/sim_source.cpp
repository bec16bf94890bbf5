// Derivation of every field from the scenario's workload at time t.
#include "sources/sim/sim_source.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "model/catalog.h"
#include "model/xid.h"
#include "model/xid_ledger.h"
#include "push/push_store.h"
#include "sources/scrape/catalog_targets.h"

namespace gpulens {
namespace {

using sim::Fault;
using sim::Scenario;
using sim::Workload;

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGB = 1e9;
constexpr int kNoGpuLost = -2;  // the job stalls with no GPU lost (fault kind hang)

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Deterministic noise in [-1, 1] for (seed, gpu, channel, second).
double noise(uint64_t seed, int gpu, int channel, int64_t second) {
  uint64_t h = mix(seed ^ mix(static_cast<uint64_t>(gpu + 1) * 1000003ULL + channel) ^ mix(second));
  return static_cast<double>(h >> 11) / static_cast<double>(1ULL << 52) * 2.0 - 1.0;
}

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// Per-direction PCIe line rate in bytes/s (reference table: GT/s x encoding / 8).
double pcie_peak(int gen, int width) {
  static constexpr double kPerLane[] = {0, 0.25e9, 0.5e9, 0.9846e9, 1.9692e9, 3.9385e9, 7.5625e9};
  return kPerLane[std::clamp(gen, 1, 6)] * width;
}

// Standard normal CDF.
double phi(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

struct GpuState {
  double pcie_tx = 0, pcie_rx = 0, energy = 0, retries = 0;
  std::vector<double> nvl_tx, nvl_rx;
  double reason_seconds[9] = {};
};

struct NodeState {
  double cpu[8] = {};  // by kCpuModes
  double psi_cpu = 0, psi_io_some = 0, psi_io_full = 0, psi_mem = 0;
  double disk_time = 0, disk_read = 0, disk_written = 0;
  double nic_rx = 0, nic_tx = 0;
  std::vector<double> ib_rx, ib_tx;
  std::vector<double> buckets;  // cumulative counts per latency bucket
  double lat_sum = 0, lat_count = 0;
};

// vLLM V1's own bucket bounds (seconds) of its e2e and time-to-first-token histograms.
constexpr double kE2eBounds[] = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0,
                                 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
constexpr double kTtftBounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                  1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0, 7680.0};

// One simulated engine's counters (its page's cumulative values).
struct EngineState {
  double e2e[std::size(kE2eBounds)] = {}, e2e_count = 0, e2e_sum = 0;
  double ttft[std::size(kTtftBounds)] = {}, ttft_count = 0, ttft_sum = 0;
  double preemptions = 0, prompt_tokens = 0, generation_tokens = 0, requests = 0;
};

constexpr const char* kCpuModes[8] = {"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"};

class SimSource final : public Source {
 public:
  SimSource(Scenario s, uint64_t seed, double speed, std::shared_ptr<XidLedger> xids, std::string kernel_log)
      : s_(std::move(s)), seed_(seed), speed_(speed), push_(push::PushOptions{.check_pids = false,
                                                                             .self_metrics = false}),
        ledger_(xids ? std::move(xids) : std::make_shared<XidLedger>()), kernel_log_(std::move(kernel_log)),
        fired_(s_.faults.size(), false) {}

  std::string_view name() const override { return "sim"; }
  bool simulated() const override { return true; }

  Status open(SeriesRegistry& reg) override {
    reg.set_hostname(s_.hostname);
    static constexpr int kBus[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
    for (int g = 0; g < s_.gpus; ++g) {
      const uint64_t h = mix(std::hash<std::string>{}(s_.hostname) + g);
      char uuid[64], bus[32], serial[32];
      std::snprintf(uuid, sizeof uuid, "GPU-%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(h >> 32),
                    static_cast<unsigned>(h >> 16) & 0xffff, static_cast<unsigned>(h) & 0xffff,
                    static_cast<unsigned>(mix(h) >> 48), static_cast<unsigned long long>(mix(h + 1) >> 16));
      std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", g < 8 ? kBus[g] : 0x100 - 8 + g % 8);
      std::snprintf(serial, sizeof serial, "SIM%010llu", static_cast<unsigned long long>(h % 10000000000ULL));
      reg.set_gpu(g, {.uuid = uuid, .name = std::string(s_.model.name), .pci_bus_id = bus, .serial = serial,
                      .driver = "simulated", .minor = g});
      buses_.push_back(bus);
      ledger_->claim(bus);  // the simulated NVML fills these GPUs' XIDs
      GpuState st;
      st.nvl_tx.assign(s_.model.nvlink_links, 0);
      st.nvl_rx.assign(s_.model.nvlink_links, 0);
      gpus_.push_back(std::move(st));
    }
    node_.ib_rx.assign(s_.ib_ports, 0);
    node_.ib_tx.assign(s_.ib_ports, 0);
    node_.buckets.assign(latency_buckets().size(), 0);
    for (int g = 0; g < s_.gpus; ++g) {
      uuids_.push_back(reg.gpu(g)->uuid);
    }
    job_labels_.assign(s_.gpus, Labels{});
    const auto& job = s_.job;
    for (size_t i = 0; !job.id.empty() && i < job.gpus.size(); ++i) {
      if (job.gpus[i] >= s_.gpus) continue;
      const size_t world = job.world_size > 0 ? static_cast<size_t>(job.world_size) : job.gpus.size();
      job_labels_[job.gpus[i]] = Labels{{"job_id", job.id},
                                        {"source", job.source},
                                        {"rank", std::to_string(job.first_rank + static_cast<int>(i))},
                                        {"local_rank", std::to_string(i)},
                                        {"world_size", std::to_string(world)}};
    }
    push_.attach(reg);
    return Status::ok();
  }

  Status sample(Frame& f) override {
    const int64_t now = f.time_ms();
    if (start_ms_ < 0) start_ms_ = last_ms_ = now;
    const double dt = std::max(0.0, (now - last_ms_) / 1000.0);
    last_ms_ = now;
    const int64_t elapsed = static_cast<int64_t>((now - start_ms_) * speed_);
    int64_t into = 0;
    const auto& phase = s_.phase_at(elapsed, &into);
    Workload w = phase.workload;
    if (w.fragmentation_end >= 0) {
      const double p = phase.duration_ms ? static_cast<double>(into) / phase.duration_ms : 1.0;
      w.fragmentation += (w.fragmentation_end - w.fragmentation) * std::min(1.0, p);
    }
    // Noise follows scenario time, not the wall clock: a seed gives the same
    // run whenever it starts.
    const int64_t second = (now - start_ms_) / 1000;

    // A GPU lost to an XID 79 stalls the whole job on the node; a hang
    // (kind hang: a collective that never completes) stalls every GPU.
    int lost_gpu = -1;
    for (const auto& fault : s_.faults) {
      if (fault.kind == "xid" && fault.xid == 79 && elapsed >= fault.after_ms) lost_gpu = fault.gpu;
      if (fault.kind == "hang" && elapsed >= fault.after_ms && lost_gpu < 0) lost_gpu = kNoGpuLost;
    }
    double node_duty = 0;
    for (int g = 0; g < s_.gpus; ++g) node_duty += sample_gpu(f, g, w, elapsed, second, dt, lost_gpu);
    const bool stalled = lost_gpu >= 0 || lost_gpu == kNoGpuLost;
    sample_node(f, w, node_duty / s_.gpus, second, dt, stalled);
    // The engines' pages go through the scrape source's mapping, as a
    // scraped engine's page does (labels engine and endpoint; pid, which
    // the simulator knows as the engine's process).
    const size_t phase_no = s_.phase_index(elapsed);
    for (size_t e = 0; e < s_.engines.size(); ++e) {
      const std::string page = engine_page(e, s_.engines[e].by_phase[phase_no], into, second, dt, stalled);
      const std::string endpoint = "http://127.0.0.1:" + std::to_string(s_.engines[e].port) + "/metrics";
      auto values = scrape::map_page(page, endpoint, std::to_string(5000 + e));
      if (!values) return internal_error("simulated engine page refused: " + values.status().message());
      for (const auto& v : *values) f.set_node(v.field, v.part, v.extra, v.value);
    }
    // The simulated processes' allocator values go through the push
    // receiver's parser and GPU join, as a real process's pushes do.
    for (int g = 0; g < s_.gpus; ++g) {
      const std::string path = "/metrics/job/gpulens_sim/gpu_uuid/" + uuids_[g] + "/pid/" + std::to_string(pid_of(g));
      if (auto a = push_.pushgateway("PUT", path, allocator_body_[g], now); a.status != 200) {
        return internal_error("simulator allocator push refused: " + a.body);
      }
    }
    push_.fill(f);
    return Status::ok();
  }

 private:
  const Fault* fault(int gpu, const char* kind, int64_t elapsed) const {
    for (const auto& x : s_.faults) {
      if (x.gpu == gpu && x.kind == kind && elapsed >= x.after_ms) return &x;
    }
    return nullptr;
  }

  // The CPUs of the given NUMA nodes in kernel list syntax: the node's CPUs
  // are an even share of the node's, in order.
  std::string cpus_of(std::vector<int> nodes) const {
    std::sort(nodes.begin(), nodes.end());
    std::string out;
    const int per = std::max(1, s_.cpus / s_.numa_nodes());
    for (size_t i = 0; i < nodes.size(); ++i) {
      size_t j = i;  // adjacent nodes make one range
      while (j + 1 < nodes.size() && nodes[j + 1] == nodes[j] + 1) ++j;
      out += (out.empty() ? "" : ",") + std::to_string(nodes[i] * per) + "-" + std::to_string(nodes[j] * per + per - 1);
      i = j;
    }
    return out;
  }

  // The pid of the process using GPU `g`: the scenario job's, else one per GPU.
  int pid_of(int g) const {
    if (const int e = engine_of(g); e >= 0) return 5000 + e;  // the engine's one process on its GPUs
    const auto& job = s_.job;
    if (std::find(job.gpus.begin(), job.gpus.end(), g) == job.gpus.end()) return 3000 + g;
    return 4000 + (job.one_process ? job.gpus.front() : g);
  }

  // The engine (index) that runs on GPU `g`, -1 none.
  int engine_of(int g) const {
    for (size_t e = 0; e < s_.engines.size(); ++e) {
      const auto& gpus = s_.engines[e].gpus;
      if (gpus.empty() || std::find(gpus.begin(), gpus.end(), g) != gpus.end()) return static_cast<int>(e);
    }
    return -1;
  }

  // Engine `e`'s /metrics page at this tick, in vLLM V1's names and shape
  // (engine="0" and model_name labels, _created gauges, no final newline).
  std::string engine_page(size_t e, const Workload& w, int64_t into_ms, int64_t second, double dt, bool stalled) {
    const sim::Engine& eng = s_.engines[e];
    EngineState& st = engines_[e];
    auto n = [&](int channel) { return noise(seed_, -2 - static_cast<int>(e), channel, second); };
    const bool serving = !stalled && w.rps > 0;
    const double requests = serving ? w.rps * dt : 0;
    auto observe = [&](double p50_ms, double p99_ms, const auto& bounds, double* cum, double& count, double& sum) {
      if (!(p50_ms > 0) || !(p99_ms > 0)) return;
      const double mu = std::log(p50_ms / 1000.0);
      const double sigma = std::max(1e-3, std::log(p99_ms / p50_ms) / 2.326);
      for (size_t b = 0; b < std::size(bounds); ++b) cum[b] += requests * phi((std::log(bounds[b]) - mu) / sigma);
      count += requests;
      sum += requests * std::exp(mu + sigma * sigma / 2);
    };
    observe(w.p50_ms, w.p99_ms, kE2eBounds, st.e2e, st.e2e_count, st.e2e_sum);
    const double ttft50 = w.ttft_ms > 0 ? w.ttft_ms : w.p50_ms / 5, ttft99 = w.ttft_p99_ms > 0 ? w.ttft_p99_ms : w.p99_ms / 5;
    observe(ttft50, std::max(ttft50, ttft99), kTtftBounds, st.ttft, st.ttft_count, st.ttft_sum);
    st.preemptions += serving ? w.preemptions * dt : 0;
    st.prompt_tokens += requests * 480;
    st.generation_tokens += requests * 220;
    const double batch = w.batch >= 0 ? w.batch : std::round(w.rps * w.p50_ms / 1000.0);
    const double running = serving ? std::max(0.0, std::round(batch * (1 + 0.02 * n(1)))) : 0;
    const double waiting =
        serving ? std::max(0.0, std::round((w.queue + w.queue_growth * static_cast<double>(into_ms) / 60'000.0) *
                                           (1 + 0.05 * n(2))))
                : 0;
    const double kv = w.kv_usage >= 0 ? std::min(1.0, w.kv_usage + 0.003 * n(3))
                                      : clamp01(0.25 + 0.4 * std::min(1.0, batch / 256) + 0.02 * n(3));
    const std::string l = "engine=\"0\",model_name=\"" + eng.model + "\"";
    std::string p;
    char b[256];
    auto family = [&](const char* name, const char* type, const char* help) {
      p += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    };
    auto value = [&](const std::string& name, const std::string& labels, double v) {
      std::snprintf(b, sizeof b, "%.17g", v);
      p += name + "{" + labels + "} " + b + "\n";
    };
    auto counter = [&](const char* name, const char* help, double v) {
      family((std::string(name) + "_total").c_str(), "counter", help);
      value(std::string(name) + "_total", l, std::floor(v));
      family((std::string(name) + "_created").c_str(), "gauge", help);
      value(std::string(name) + "_created", l, static_cast<double>(start_ms_) / 1000.0);
    };
    auto histogram = [&](const char* name, const char* help, const auto& bounds, const double* cum, double count,
                         double sum) {
      family(name, "histogram", help);
      for (size_t i = 0; i < std::size(bounds); ++i) {
        std::snprintf(b, sizeof b, "%g", bounds[i]);  // as Python prints a float: 0.25, 1.0, 7680.0
        std::string le = b;
        if (le.find('.') == std::string::npos) le += ".0";
        value(std::string(name) + "_bucket", "engine=\"0\",le=\"" + le + "\",model_name=\"" + eng.model + "\"",
              std::floor(cum[i]));
      }
      value(std::string(name) + "_bucket", "engine=\"0\",le=\"+Inf\",model_name=\"" + eng.model + "\"",
            std::floor(count));
      value(std::string(name) + "_count", l, std::floor(count));
      value(std::string(name) + "_sum", l, sum);
      family((std::string(name) + "_created").c_str(), "gauge", help);
      value(std::string(name) + "_created", l, static_cast<double>(start_ms_) / 1000.0);
    };
    family("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
    value("vllm:num_requests_running", l, running);
    family("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
    value("vllm:num_requests_waiting", l, waiting);
    family("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
    value("vllm:kv_cache_usage_perc", l, kv);
    counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", st.preemptions);
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", st.prompt_tokens);
    counter("vllm:generation_tokens", "Number of generation tokens processed.", st.generation_tokens);
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", kTtftBounds,
              st.ttft, st.ttft_count, st.ttft_sum);
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", kE2eBounds, st.e2e,
              st.e2e_count, st.e2e_sum);
    p.pop_back();  // as vLLM's own pages: no final newline
    return p;
  }

  // The process using GPU `g` and where it may run: the scenario's job, or
  // a process pinned to the GPU's own node.
  void set_process(Frame& f, int g) const {
    const auto& job = s_.job;
    const bool in_job = std::find(job.gpus.begin(), job.gpus.end(), g) != job.gpus.end();
    std::vector<int> nodes{s_.numa_node_of(g)};
    const int pid = pid_of(g);
    if (in_job) {
      if (!job.numa_nodes.empty()) {
        nodes = job.numa_nodes;
      } else if (job.one_process) {  // one process: the nodes of all its GPUs
        nodes.clear();
        for (int j : job.gpus) nodes.push_back(s_.numa_node_of(j));
        std::sort(nodes.begin(), nodes.end());
        nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
      }
    }
    std::string list;
    for (int n : nodes) list += (list.empty() ? "" : ",") + std::to_string(n);
    f.set_node(FieldId::kHostProcessCpuAffinity,
               Labels{{"pid", std::to_string(pid)}, {"gpu", std::to_string(g)}, {"cpus", cpus_of(nodes)}, {"numa_nodes", list}},
               1);
  }

  // Returns the GPU's duty (for host-side derivations).
  double sample_gpu(Frame& f, int g, Workload w, int64_t elapsed, int64_t second, double dt, int lost_gpu) {
    auto& st = gpus_[g];
    const auto& m = s_.model;
    auto n = [&](int channel) { return noise(seed_, g, channel, second); };
    const bool lost = g == lost_gpu;
    const bool stalled = (lost_gpu >= 0 || lost_gpu == kNoGpuLost) && !lost;
    if (fault(g, "idle_gpu", elapsed)) {
      w.duty = w.sm_efficiency = w.tensor = w.dram = w.fp32 = w.fp16 = w.fp64 = 0;
      w.h2d_gbps = w.d2h_gbps = w.nvlink_gbps = 0;
      w.mem_used = 0.01;
    }

    // Identity and XID events are reported even for a lost GPU.
    f.set(FieldId::kGpuInfo, g,
          Labels{{"pci_bus_id", f.registry().gpu(g)->pci_bus_id}, {"driver", "simulated"}, {"serial", f.registry().gpu(g)->serial}},
          1);
    for (size_t k = 0; k < s_.faults.size(); ++k) {
      const auto& x = s_.faults[k];
      if (x.gpu == g && x.kind == "xid" && elapsed >= x.after_ms && !fired_[k]) {
        fired_[k] = true;
        const double t = static_cast<double>(start_ms_ + x.after_ms / speed_) / 1000.0;
        ledger_->record(buses_[g], x.xid, t, XidPath::kNvml);
        log_xid(g, x.xid);
      }
    }
    if (auto x = ledger_->get(buses_[g])) XidLedger::fill(f, g, *x);
    // The scenario job's ranks, a lost GPU's too (as the nvml source keeps them).
    if (!job_labels_[g].empty()) f.set(FieldId::kGpuJobInfo, g, job_labels_[g], 1);
    f.set(FieldId::kGpuUp, g, lost ? 0 : 1);
    if (lost) return 0;

    double duty = w.duty;
    if (w.burst && duty > 0) {
      // Bursts: a 2-second slot is busy with probability duty.
      const double u = (noise(seed_, g, 99, second / 2) + 1) / 2;
      duty = u < w.duty ? 0.92 + 0.08 * n(1) : 0.03 * (n(2) + 1);
    } else if (duty > 0) {
      duty = clamp01(duty + 0.02 * n(1));
    }
    double sm_active = duty * w.sm_efficiency;
    double gpu_util = duty;
    double tensor = w.tensor * duty, dram = w.dram * duty;
    double h2d = w.h2d_gbps * kGB * (duty > 0.05 || !w.burst ? 1 : 0.1), d2h = w.d2h_gbps * kGB;
    double nvlink = w.nvlink_gbps * kGB;
    if (stalled) {
      // The job lost a peer: NCCL kernels spin waiting for it.
      gpu_util = 1.0;
      sm_active = 0.02;
      tensor = dram = 0;
      h2d = d2h = nvlink = 0;
      duty = 0;
    }
    const double occupancy = w.occupancy * sm_active;
    h2d *= 1 + 0.03 * n(3);
    d2h *= 1 + 0.03 * n(4);

    // Clocks, power, temperature.
    const bool thermal = fault(g, "thermal", elapsed) != nullptr;
    const Fault* pcap = fault(g, "power_cap", elapsed);
    const bool busy = gpu_util > 0.05;
    const double limit = pcap ? m.power_limit_w * 0.6 : m.power_limit_w;
    double power = m.idle_power_w +
                   (m.power_limit_w - m.idle_power_w) * (0.2 * gpu_util + 0.45 * sm_active + 0.2 * dram + 0.15 * tensor);
    double clock = busy ? 1.0 : 0.3;
    uint64_t reasons = busy ? 0 : 0x1;
    if (pcap && power >= limit * 0.97) {
      power = limit * (0.985 + 0.01 * n(5));
      clock = 0.78 + 0.03 * n(6);
      reasons |= 0x4;
    }
    power = std::min(power * (1 + 0.01 * n(7)), limit);
    double temp = 28 + 0.068 * power + 1.0 * n(8);
    if (thermal) {
      temp = 89 + 1.5 * n(8);
      clock = std::min(clock, 0.68 + 0.03 * n(6));
      reasons |= 0x20 | 0x40;
    }
    st.energy += power * dt;

    const double total = m.memory_mib * kMiB;
    const double used = total * w.mem_used;
    const double driver_reserved = total * 0.006;

    f.set(FieldId::kGpuUtilization, g, clamp01(gpu_util));
    f.set(FieldId::kGpuSmActive, g, clamp01(sm_active));
    f.set(FieldId::kGpuSmOccupancy, g, clamp01(occupancy));
    f.set(FieldId::kGpuGraphicsEngineActive, g, clamp01(gpu_util * 0.98));
    f.set(FieldId::kGpuTensorActive, g, clamp01(tensor));
    f.set(FieldId::kGpuFp64Active, g, clamp01(w.fp64 * duty));
    f.set(FieldId::kGpuFp32Active, g, clamp01(w.fp32 * duty));
    f.set(FieldId::kGpuFp16Active, g, clamp01(w.fp16 * duty));
    f.set(FieldId::kGpuEncoderUtil, g, 0);  // training and inference leave the video engines idle
    f.set(FieldId::kGpuDecoderUtil, g, 0);
    f.set(FieldId::kGpuSmClock, g, std::round(m.sm_clock_max_mhz * clock) * 1e6);
    f.set(FieldId::kGpuSmClockMax, g, m.sm_clock_max_mhz * 1e6);
    f.set(FieldId::kGpuMemClock, g, m.mem_clock_max_mhz * 1e6);
    f.set(FieldId::kGpuMemClockMax, g, m.mem_clock_max_mhz * 1e6);

    f.set(FieldId::kGpuMemoryTotal, g, total);
    f.set(FieldId::kGpuMemoryUsed, g, used);
    f.set(FieldId::kGpuMemoryReserved, g, driver_reserved);
    f.set(FieldId::kGpuMemoryFree, g, std::max(0.0, total - used - driver_reserved));
    f.set(FieldId::kGpuMemoryUtil, g, clamp01(dram * 0.9));
    f.set(FieldId::kGpuDramActive, g, clamp01(dram));
    // What the process's client would push (an empty PUT drops the group).
    std::string& body = allocator_body_[g];
    body.clear();
    if (w.mem_used > 0.05) {
      const double reserved = used * 0.96;
      const double frag = clamp01(w.fragmentation + 0.01 * n(9));
      if (frag > 0.5) st.retries += 0.5 * dt;
      // External fragmentation: the free bytes are in pieces once the slack
      // is fragmented; one free block while it is not.
      const double external = frag > 0.3 ? clamp01(0.4 + frag * 0.5 + 0.01 * n(10)) : clamp01(0.05 + 0.01 * n(10));
      const double free = reserved * frag;
      char b[1024];
      std::snprintf(b, sizeof b,
                    "gpu_allocator_reserved_bytes %.17g\n"
                    "gpu_allocator_allocated_bytes %.17g\n"
                    "gpu_memory_fragmentation_ratio %.17g\n"
                    "# TYPE gpu_allocator_retries_total counter\n"
                    "gpu_allocator_retries_total %.17g\n"
                    "# TYPE gpu_allocator_ooms_total counter\n"
                    "gpu_allocator_ooms_total 0\n"
                    "gpu_allocator_external_fragmentation_ratio{pool=\"large\",stream=\"0\"} %.17g\n"
                    "gpu_allocator_largest_free_block_bytes{pool=\"large\",stream=\"0\"} %.17g\n",
                    reserved, reserved * (1 - frag), frag, std::floor(st.retries), external,
                    std::floor(free * (1 - external)));
      body = b;
    }

    // PCIe: an idle link drops to Gen1 to save power; a degraded one stays low.
    int gen = s_.pcie_gen, width = s_.pcie_width;
    if (const Fault* ld = fault(g, "link_degraded", elapsed)) {
      gen = std::min(gen, ld->gen);
      width = std::min(width, ld->width);
    }
    if (!busy) gen = 1;
    const double peak = pcie_peak(gen, width);
    h2d = std::min(h2d, peak * 0.97);
    d2h = std::min(d2h, peak * 0.97);
    st.pcie_rx += h2d * dt;
    st.pcie_tx += d2h * dt;
    f.set(FieldId::kGpuPcieRxRate, g, h2d);
    f.set(FieldId::kGpuPcieTxRate, g, d2h);
    f.set(FieldId::kGpuPcieRxBytes, g, std::floor(st.pcie_rx));
    f.set(FieldId::kGpuPcieTxBytes, g, std::floor(st.pcie_tx));
    f.set(FieldId::kGpuPciePeak, g, Labels{{"basis", "link"}}, peak);
    f.set(FieldId::kGpuPcieRxUtil, g, clamp01(h2d / peak));
    f.set(FieldId::kGpuPcieTxUtil, g, clamp01(d2h / peak));
    f.set(FieldId::kGpuPcieLinkGen, g, gen);
    f.set(FieldId::kGpuPcieLinkGenMax, g, s_.pcie_gen);
    f.set(FieldId::kGpuPcieLinkWidth, g, width);
    f.set(FieldId::kGpuPcieLinkWidthMax, g, s_.pcie_width);
    f.set(FieldId::kGpuPcieReplays, g, 0);

    const bool nvlinked = s_.gpu_links == "nvlink";
    if (nvlinked) {
      const double per_link = nvlink * (1 + 0.02 * n(10)) / m.nvlink_links;
      for (int l = 0; l < m.nvlink_links; ++l) {
        st.nvl_tx[l] += per_link * dt;
        st.nvl_rx[l] += per_link * dt;
        const Labels link{{"link", std::to_string(l)}};
        f.set(FieldId::kGpuNvlinkTxBytes, g, link, std::floor(st.nvl_tx[l]));
        f.set(FieldId::kGpuNvlinkRxBytes, g, link, std::floor(st.nvl_rx[l]));
        f.set(FieldId::kGpuNvlinkLinkUp, g, link, 1);
      }
      f.set(FieldId::kGpuNvlinkTxRate, g, per_link * m.nvlink_links);
      f.set(FieldId::kGpuNvlinkRxRate, g, per_link * m.nvlink_links);
      f.set(FieldId::kGpuNvlinkUtil, g, clamp01(per_link / (m.nvlink_gbps_per_link * kGB)));
    }
    // Without NVLink, peers on the same socket meet at a host bridge (NODE),
    // the others across the socket interconnect (SYS).
    const int node = s_.numa_node_of(g);
    for (int p = 0; p < s_.gpus; ++p) {
      if (p == g) continue;
      const char* path = nvlinked ? "NVLINK" : s_.numa_node_of(p) == node ? "NODE" : "SYS";
      f.set(FieldId::kGpuTopology, g, Labels{{"peer", std::to_string(p)}, {"path", path}}, 1);
    }
    f.set(FieldId::kGpuNumaNode, g, node);
    f.set(FieldId::kGpuCpuAffinity, g, Labels{{"cpus", cpus_of({node})}}, 1);
    if (w.mem_used > 0.05 && !fault(g, "idle_gpu", elapsed)) set_process(f, g);

    f.set(FieldId::kGpuPower, g, power);
    f.set(FieldId::kGpuPowerLimit, g, limit);
    f.set(FieldId::kGpuEnergy, g, st.energy);
    f.set(FieldId::kGpuTemperature, g, std::round(temp));
    f.set(FieldId::kGpuMemoryTemperature, g, std::round(temp + 4));
    f.set(FieldId::kGpuPstate, g, busy ? 0 : 8);
    f.set(FieldId::kGpuClockEventReasons, g, static_cast<double>(reasons));
    const auto all_reasons = clock_reasons();
    for (size_t r = 0; r < all_reasons.size(); ++r) {
      const bool on = reasons & all_reasons[r].bit;
      if (on) st.reason_seconds[r] += dt;
      const Labels reason{{"reason", all_reasons[r].label}};
      f.set(FieldId::kGpuClockEventActive, g, reason, on ? 1 : 0);
      f.set(FieldId::kGpuClockEventSeconds, g, reason, st.reason_seconds[r]);
    }
    f.set(FieldId::kGpuEccErrors, g, Labels{{"type", "corrected"}}, 0);
    f.set(FieldId::kGpuEccErrors, g, Labels{{"type", "uncorrected"}}, 0);
    f.set(FieldId::kGpuRemappedRows, g, Labels{{"cause", "correctable"}}, 0);
    f.set(FieldId::kGpuRemappedRows, g, Labels{{"cause", "uncorrectable"}}, 0);
    f.set(FieldId::kGpuRowRemapFailure, g, 0);
    return duty;
  }

  void sample_node(Frame& f, const Workload& w, double duty, int64_t second, double dt, bool stalled) {
    auto n = [&](int channel) { return noise(seed_, -1, channel, second); };
    const double cpus = s_.cpus;
    double busy = clamp01(w.cpu_busy + 0.02 * n(1));
    if (stalled) busy = std::min(busy, 0.08);
    const double iowait = clamp01(w.iowait * (1 + 0.1 * n(2)));
    const double idle = std::max(0.0, 1 - busy - iowait);
    const double share[8] = {busy * 0.78, 0.0, busy * 0.18, idle, iowait, busy * 0.01, busy * 0.03, 0.0};
    for (int m = 0; m < 8; ++m) {
      node_.cpu[m] += share[m] * cpus * dt;
      f.set_node(FieldId::kHostCpuSeconds, Labels{{"mode", kCpuModes[m]}}, node_.cpu[m]);
    }
    f.set_node(FieldId::kHostCpuCount, cpus);
    node_.psi_cpu += clamp01(w.psi_cpu * (1 + 0.1 * n(3))) * dt;
    node_.psi_io_some += clamp01(w.psi_io * (1 + 0.1 * n(4))) * dt;
    node_.psi_io_full += clamp01(w.psi_io * 0.6) * dt;
    f.set_node(FieldId::kHostPressureCpuWaiting, node_.psi_cpu);
    f.set_node(FieldId::kHostPressureIoWaiting, node_.psi_io_some);
    f.set_node(FieldId::kHostPressureIoStalled, node_.psi_io_full);
    f.set_node(FieldId::kHostPressureMemoryWaiting, node_.psi_mem);

    const Labels disk{{"device", "nvme0n1"}};
    node_.disk_time += clamp01(w.disk_busy * (1 + 0.05 * n(5))) * dt;
    node_.disk_read += w.disk_read_mbps * 1e6 * (1 + 0.05 * n(6)) * dt;
    node_.disk_written += 5e6 * dt;
    f.set_node(FieldId::kHostDiskIoTime, disk, node_.disk_time);
    f.set_node(FieldId::kHostDiskReadBytes, disk, std::floor(node_.disk_read));
    f.set_node(FieldId::kHostDiskWrittenBytes, disk, std::floor(node_.disk_written));

    // Inter-node traffic goes over IB unless NCCL fell back to TCP sockets.
    const double net = stalled ? 0 : w.net_gbps * kGB * (0.4 + 0.6 * std::max(duty, 0.5));
    const bool over_socket = w.transport == "socket";
    const double nic_speed = s_.nic_gbps * 1e9 / 8;
    const double nic_rate = over_socket ? std::min(net, nic_speed * 0.96) : 2e6 * (1 + 0.2 * n(7));
    node_.nic_rx += nic_rate * dt;
    node_.nic_tx += nic_rate * dt;
    const Labels nic{{"device", s_.nic}};
    f.set_node(FieldId::kHostNetworkReceiveBytes, nic, std::floor(node_.nic_rx));
    f.set_node(FieldId::kHostNetworkTransmitBytes, nic, std::floor(node_.nic_tx));
    f.set_node(FieldId::kHostNetworkSpeed, nic, nic_speed);
    for (int p = 0; p < s_.ib_ports; ++p) {
      const double rate = over_socket ? 0 : net / s_.ib_ports;
      node_.ib_rx[p] += rate * dt;
      node_.ib_tx[p] += rate * dt;
      const Labels port{{"device", "mlx5_" + std::to_string(p)}, {"port", "1"}};
      f.set_node(FieldId::kHostInfinibandReceiveBytes, port, std::floor(node_.ib_rx[p]));
      f.set_node(FieldId::kHostInfinibandTransmitBytes, port, std::floor(node_.ib_tx[p]));
      f.set_node(FieldId::kHostInfinibandRate, port, s_.ib_gbps * 1e9 / 8);
    }

    if (w.kind == "inference" && w.rps > 0 && s_.engines.empty()) {
      // Log-normal latency with the scenario's p50 and p99.
      const double mu = std::log(w.p50_ms / 1000.0);
      const double sigma = std::max(1e-3, std::log(w.p99_ms / w.p50_ms) / 2.326);
      const double requests = stalled ? 0 : w.rps * dt;
      const auto bounds = latency_buckets();
      for (size_t b = 0; b < bounds.size(); ++b) {
        node_.buckets[b] += requests * phi((std::log(bounds[b]) - mu) / sigma);
      }
      node_.lat_count += requests;
      node_.lat_sum += requests * std::exp(mu + sigma * sigma / 2);
      for (size_t b = 0; b < bounds.size(); ++b) {
        char le[32];
        std::snprintf(le, sizeof le, "%g", bounds[b]);
        f.set_node(FieldId::kServingLatency, Labels{{"le", le}}, std::floor(node_.buckets[b]));
      }
      f.set_node(FieldId::kServingLatency, Labels{{"le", "+Inf"}}, std::floor(node_.lat_count));
      f.set_node(FieldId::kServingLatency, HistogramPart::kSum, {}, node_.lat_sum);
      f.set_node(FieldId::kServingLatency, HistogramPart::kCount, {}, std::floor(node_.lat_count));
      f.set_node(FieldId::kServingRequestsRunning, std::round(w.rps * w.p50_ms / 1000.0));
      f.set_node(FieldId::kServingRequestsWaiting, std::round(w.queue * (1 + 0.2 * n(8))));
    }
  }

  Scenario s_;
  uint64_t seed_;
  double speed_;
  // Appends the driver's kernel-log lines of XID `xid` on GPU `g` to
  // kernel_log_ (a file, or a FIFO with a reader; never waits).
  void log_xid(int g, int xid) {
    if (kernel_log_.empty()) return;
    const int fd = ::open(kernel_log_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd < 0) return;
    const std::string b = canonical_bus_id(buses_[g]);
    // /dev/kmsg records: priority 3 (error), sequence, microseconds, flags.
    auto record = [&](const std::string& msg) {
      const uint64_t seq = ++kmsg_seq_;
      return "3," + std::to_string(seq) + "," + std::to_string(seq * 1000) + ",-;" + msg + "\n";
    };
    std::string text = record("NVRM: Xid (PCI:" + b + "): " + std::to_string(xid) +
                              ", pid='<unknown>', name=<unknown>, " + std::string(xid_message(xid)) + ".");
    if (xid == 79) text += record("NVRM: GPU " + b + ".0: GPU has fallen off the bus.");
    [[maybe_unused]] ssize_t n = ::write(fd, text.data(), text.size());
    ::close(fd);
  }

  int64_t start_ms_ = -1, last_ms_ = 0;
  std::vector<GpuState> gpus_;
  std::vector<std::string> uuids_;
  NodeState node_;
  std::vector<EngineState> engines_ = std::vector<EngineState>(8);  // per scenario engine (at most 8)
  push::PushStore push_;                        // the simulated processes' pushes
  std::shared_ptr<XidLedger> ledger_;
  std::string kernel_log_;                      // where XIDs are also written as kernel-log lines ("" off)
  std::vector<bool> fired_;                     // per fault: its XID was recorded
  std::vector<std::string> buses_;              // per GPU
  std::vector<Labels> job_labels_;              // per GPU: its gpu_job_info labels, empty: none
  uint64_t kmsg_seq_ = 0;
  std::vector<std::string> allocator_body_ = std::vector<std::string>(64);  // per GPU, this tick
};

}  // namespace

std::unique_ptr<Source> make_sim_source(sim::Scenario scenario, uint64_t seed, double speed,
                                        std::shared_ptr<XidLedger> xids, std::string kernel_log) {
  return std::make_unique<SimSource>(std::move(scenario), seed, speed, std::move(xids), std::move(kernel_log));
}

namespace {
// A source whose open() reports why the scenario could not be loaded.
class BrokenSource final : public Source {
 public:
  explicit BrokenSource(Status s) : status_(std::move(s)) {}
  std::string_view name() const override { return "sim"; }
  bool simulated() const override { return true; }
  Status open(SeriesRegistry&) override { return status_; }
  Status sample(Frame&) override { return status_; }

 private:
  Status status_;
};
}  // namespace

std::unique_ptr<Source> make_sim_source(const SourceOptions& options) {
  const std::string dir = options.sim.scenario_dir.empty() ? sim::default_scenario_dir() : options.sim.scenario_dir;
  auto scenario = sim::load_scenario(options.sim.scenario, dir);
  if (!scenario) return std::make_unique<BrokenSource>(scenario.status());
  return make_sim_source(std::move(*scenario), options.sim.seed, options.sim.speed, options.xids,
                         options.sim.kernel_log);
}

}  // namespace gpulens
