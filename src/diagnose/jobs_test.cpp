// Jobs across hosts: one root cause per job (a lost GPU, a straggler), the
// peers' symptoms its consequences, each rule with both sides.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/explain.h"
#include "diagnose/mapping.h"
#include "diagnose/report.h"
#include "diagnose/report_parse.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 81;  // 15 s x 81 = 20 min
constexpr int64_t kStep = 15'000;
constexpr int kFault = 8;    // the point where a GPU fails (2 min in)

Series flat(double v) { return testing::flat(v, kPoints, kStep); }
Series steps(double before, double after, int at) { return testing::steps(before, after, at, kPoints, kStep); }

GpuSignals busy_gpu(const std::string& index, const std::string& job = "", const std::string& source = "") {
  GpuSignals g;
  g.index = index;
  g.model = "NVIDIA H100 80GB HBM3";
  g.job = job;
  g.job_source = source;
  g.sig(GpuSig::kGpuUtil) = flat(0.95);
  g.sig(GpuSig::kSmActive) = flat(0.85);
  g.sig(GpuSig::kSmOccupancy) = flat(0.5);
  g.sig(GpuSig::kFbUsed) = flat(60e9);
  g.sig(GpuSig::kFbFree) = flat(20e9);
  g.sig(GpuSig::kThermalThrottle) = flat(0);
  g.sig(GpuSig::kLastXid) = flat(0);
  g.sig(GpuSig::kGpuUp) = flat(1);
  return g;
}

// A peer of a lost GPU as NCCL leaves it: util 100 %, SMs idle, nothing moves.
void stalled_from(GpuSignals& g, int at) {
  g.sig(GpuSig::kGpuUtil) = steps(0.95, 1.0, at);
  g.sig(GpuSig::kSmActive) = steps(0.85, 0.02, at);
  g.sig(GpuSig::kSmOccupancy) = steps(0.5, 0.011, at);
}

void lost_at(GpuSignals& g, int at) {
  g.sig(GpuSig::kGpuUtil).resize(static_cast<size_t>(at));
  g.sig(GpuSig::kSmActive).resize(static_cast<size_t>(at));
  g.sig(GpuSig::kSmOccupancy).resize(static_cast<size_t>(at));
  g.sig(GpuSig::kLastXid) = steps(0, 79, at);
  g.sig(GpuSig::kGpuUp) = steps(1, 0, at);
}

ProcessPlacement proc(const std::string& pid, const std::string& gpu) {
  return ProcessPlacement{.pid = pid, .gpu = gpu, .cpus = "0-95", .numa_nodes = "0-1", .present = flat(1)};
}

HostSignals host(const std::string& name, std::vector<GpuSignals> gpus, bool ddp_processes = false) {
  HostSignals h;
  h.name = name;
  if (ddp_processes) {
    for (const GpuSignals& g : gpus) h.processes.push_back(proc(std::to_string(1000 + h.processes.size()), g.index));
  }
  h.gpus = std::move(gpus);
  h.sig(HostSig::kCpuBusy) = flat(0.3);
  return h;
}

Report run(std::vector<HostSignals> hosts) {
  SignalSet set;
  set.hosts = std::move(hosts);
  set.to_ms = (kPoints - 1) * kStep;
  return diagnose(set, {});
}

const GpuReport& gpu(const Report& r, size_t h, size_t g) { return r.hosts.at(h).gpus.at(g); }

// The xid-79 scenario's shape: eight GPUs, one DDP process each, GPU 4 lost.
std::vector<GpuSignals> xid79_gpus(bool fault) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 8; ++i) {
    GpuSignals g = busy_gpu(std::to_string(i));
    if (fault && i == 4) lost_at(g, kFault);
    else stalled_from(g, kFault);  // without the fault: the same look, no explanation
    gpus.push_back(g);
  }
  return gpus;
}

TEST(Jobs, LostGpuExplainsEveryPeerOfItsHostJob) {
  const Report r = run({host("sim-h100-5", xid79_gpus(true), /*ddp_processes=*/true)});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 1u) << text;
  EXPECT_EQ(r.jobs[0].job, "sim-h100-5");
  EXPECT_EQ(r.jobs[0].source, "host");
  EXPECT_EQ(r.jobs[0].gpus.size(), 8u);
  ASSERT_TRUE(r.jobs[0].has_root);
  EXPECT_EQ(r.jobs[0].root.gpu, "4");
  EXPECT_EQ(r.jobs[0].root.cause, "hardware_errors");
  EXPECT_EQ(r.jobs[0].root.since_ms, kFault * kStep);
  for (const GpuReport& g : r.hosts[0].gpus) {
    if (g.gpu == "4") {
      ASSERT_FALSE(g.findings.empty());
      EXPECT_EQ(g.findings[0].cause, "hardware_errors");
      continue;
    }
    ASSERT_FALSE(g.findings.empty()) << "GPU " << g.gpu << "\n" << text;
    for (const Finding& f : g.findings) {
      // Only consequences: no advice of their own.
      EXPECT_EQ(f.explained_by.cause, "hardware_errors") << "GPU " << g.gpu << " " << f.cause << "\n" << text;
      EXPECT_EQ(f.explained_by.gpu, "4");
      EXPECT_EQ(f.explained_by.host, "sim-h100-5");
      EXPECT_NE(f.explained_by.why.find("waiting for GPU 4 of sim-h100-5 (hardware_errors)"), std::string::npos);
      EXPECT_EQ(f.action.find("Larger batches"), std::string::npos) << f.action;
    }
  }
  // The waste is charged to the hardware, none to the batch size.
  EXPECT_EQ(r.waste_by_cause.count("small_batch"), 0u) << text;
  ASSERT_TRUE(r.waste_by_cause.count("hardware_errors"));
  double total = 0;
  for (const auto& [cause, s] : r.waste_by_cause) total += s;
  EXPECT_GT(r.waste_by_cause.at("hardware_errors"), 0.95 * total);
  EXPECT_NEAR(r.jobs[0].waste_gpu_seconds, total, 1e-6);
  EXPECT_EQ(text.find("fixing the batch size"), std::string::npos) << text;
  EXPECT_NE(text.find("fixing the hardware is worth"), std::string::npos) << text;
  // The jobs section comes first and names the root.
  const size_t jobs = text.find("\njobs\n");
  ASSERT_NE(jobs, std::string::npos) << text;
  EXPECT_LT(jobs, text.find("\nhost sim-h100-5"));
  EXPECT_NE(text.find("job sim-h100-5 (the GPUs of one host), 8 GPUs on 1 host: stopped by GPU 4 of sim-h100-5, "
                      "hardware_errors"),
            std::string::npos)
      << text;
}

TEST(Jobs, WithoutTheFaultTheSameStallIsItsOwnFinding) {
  const Report r = run({host("sim-h100-5", xid79_gpus(false), true)});
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_FALSE(r.jobs[0].has_root);
  const GpuReport& g = gpu(r, 0, 0);
  ASSERT_FALSE(g.findings.empty()) << report_text(r, false);
  EXPECT_EQ(g.findings[0].cause, "small_batch");
  EXPECT_TRUE(g.findings[0].explained_by.cause.empty());
  EXPECT_GT(r.waste_by_cause.count("small_batch"), 0u);
  EXPECT_NE(report_json(r).find("\"root\":null"), std::string::npos);
  // Every rank spins with idle SMs and nothing moves: the job hangs.
  EXPECT_TRUE(r.jobs[0].hung);
  EXPECT_EQ(r.jobs[0].hang.since_ms, kFault * kStep);
  EXPECT_TRUE(r.jobs[0].hang.gpu.empty());  // all stopped at once: none is first
}

TEST(Jobs, EveryRankStuckAcrossHostsIsAHangOfTheJob) {
  std::vector<GpuSignals> a, b;
  for (int i = 0; i < 2; ++i) {
    a.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    stalled_from(a.back(), kFault);
    b.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    stalled_from(b.back(), kFault);
  }
  stalled_from(b[1], kFault - 4);  // this rank stopped first
  // A rank that exited but holds its memory counts as stuck too.
  a[1].sig(GpuSig::kGpuUtil) = steps(0.95, 0, kFault);
  const Report r = run({host("trn-k01", a), host("trn-k02", b)});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_FALSE(r.jobs[0].has_root);
  ASSERT_TRUE(r.jobs[0].hung) << text;
  EXPECT_EQ(r.jobs[0].hang.since_ms, kFault * kStep);
  EXPECT_EQ(r.jobs[0].hang.host, "trn-k02");
  EXPECT_EQ(r.jobs[0].hang.gpu, "1");
  EXPECT_NE(text.find("job 81234 (slurm), 4 GPUs on 2 hosts: hung since"), std::string::npos) << text;
  EXPECT_NE(text.find("the first stuck: GPU 1 of trn-k02"), std::string::npos) << text;
  const std::string json = report_json(r);
  EXPECT_NE(json.find("\"hang\":{\"since\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"first\":{\"host\":\"trn-k02\",\"gpu\":\"1\"}"), std::string::npos) << json;
  Result<Report> back = report_from_json(json, "test");
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->jobs.at(0).hung);
  EXPECT_EQ(back->jobs[0].hang.gpu, "1");
}

TEST(Jobs, ARankStillWorkingOrTrafficStillFlowingIsNoHang) {
  std::vector<GpuSignals> a;
  for (int i = 0; i < 3; ++i) {
    a.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    stalled_from(a.back(), kFault);
  }
  a[2] = busy_gpu("2", "81234", "slurm");  // still computing
  Report r = run({host("n1", a)});
  EXPECT_FALSE(r.jobs.at(0).hung) << report_text(r, false);
  a[2] = busy_gpu("2", "81234", "slurm");
  stalled_from(a[2], kFault);
  a[2].sig(GpuSig::kNvlinkUtil) = flat(0.4);  // SMs idle but collectives move data
  r = run({host("n1", a)});
  EXPECT_FALSE(r.jobs.at(0).hung);
  a[2].sig(GpuSig::kNvlinkUtil) = flat(0);
  r = run({host("n1", a)});
  EXPECT_TRUE(r.jobs.at(0).hung);  // the same job once the traffic stops
  EXPECT_EQ(report_json(r).find("\"hang\":null"), std::string::npos);
}

TEST(Jobs, LostGpuOnOneHostExplainsTheRanksOnAnother) {
  std::vector<GpuSignals> a, b;
  for (int i = 0; i < 2; ++i) {
    a.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    stalled_from(a.back(), kFault);
    b.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
  }
  lost_at(b[1], kFault);
  stalled_from(b[0], kFault);
  const Report r = run({host("trn-k01", a), host("trn-k02", b)});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 1u) << text;
  EXPECT_EQ(r.jobs[0].job, "81234");
  EXPECT_EQ(r.jobs[0].source, "slurm");
  EXPECT_EQ(r.jobs[0].hosts, 2u);
  EXPECT_EQ(r.jobs[0].gpus, (std::vector<std::string>{"trn-k01/0", "trn-k01/1", "trn-k02/0", "trn-k02/1"}));
  ASSERT_TRUE(r.jobs[0].has_root);
  EXPECT_EQ(r.jobs[0].root.host, "trn-k02");
  EXPECT_EQ(r.jobs[0].root.gpu, "1");
  for (size_t g = 0; g < 2; ++g) {
    const GpuReport& peer = gpu(r, 0, g);
    ASSERT_FALSE(peer.findings.empty()) << text;
    for (const Finding& f : peer.findings) {
      EXPECT_EQ(f.explained_by.host, "trn-k02") << text;
      EXPECT_EQ(f.explained_by.gpu, "1");
    }
    ASSERT_FALSE(peer.notes.empty());
    EXPECT_NE(peer.notes[0].find("GPU 1 of trn-k02 failed"), std::string::npos) << peer.notes[0];
  }
  EXPECT_NE(text.find("not its own: waiting for GPU 1 of trn-k02 (hardware_errors)"), std::string::npos) << text;
  const std::string json = report_json(r);
  EXPECT_NE(json.find("],\"jobs\":[{\"job\":\"81234\",\"source\":\"slurm\",\"gpus\":[\"trn-k01/0\","), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"root\":{\"host\":\"trn-k02\",\"gpu\":\"1\",\"cause\":\"hardware_errors\""),
            std::string::npos);
  EXPECT_NE(json.find("\"why\":\"waiting for GPU 1 of trn-k02 (hardware_errors)"), std::string::npos);
  EXPECT_NE(json.find(",\"host\":\"trn-k02\"}"), std::string::npos);
  // Read back (diagnose --agent), the jobs survive.
  Result<Report> back = report_from_json(json, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->jobs.size(), 1u);
  EXPECT_EQ(back->jobs[0].root.host, "trn-k02");
  EXPECT_EQ(back->jobs[0].gpus.size(), 4u);
  EXPECT_EQ(back->hosts[0].gpus[0].findings[0].explained_by.host, "trn-k02");
}

TEST(Jobs, ALostGpuDoesNotExplainAnotherJobOnTheSameHost) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 4; ++i) {
    gpus.push_back(busy_gpu(std::to_string(i), i < 2 ? "job-a" : "job-b", "kubernetes"));
    stalled_from(gpus.back(), kFault);
  }
  lost_at(gpus[0], kFault);
  const Report r = run({host("n1", gpus)});
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_TRUE(r.jobs[0].has_root);   // job-a
  EXPECT_FALSE(r.jobs[1].has_root);  // job-b
  EXPECT_EQ(gpu(r, 0, 1).findings.at(0).explained_by.gpu, "0");
  const GpuReport& other = gpu(r, 0, 2);
  ASSERT_FALSE(other.findings.empty());
  EXPECT_TRUE(other.findings[0].explained_by.cause.empty()) << report_text(r, false);
  EXPECT_TRUE(other.notes.empty());
}

// A GPU that fell off the bus before NVML could list it, seen only in the
// kernel log (the kmsg source): an index of its own, no utilisation, no job
// information, gpu_up 0 and XID 79 from the moment the log says so.
GpuSignals kernel_log_only(const std::string& index, int at) {
  GpuSignals g;
  g.index = index;
  Series up, xid;
  for (int i = at; i < kPoints; ++i) {
    up.push_back({i * kStep, 0});
    xid.push_back({i * kStep, 79});
  }
  g.sig(GpuSig::kGpuUp) = up;
  g.sig(GpuSig::kLastXid) = xid;
  return g;
}

TEST(Jobs, AGpuSeenOnlyInTheKernelLogIsTheRootOfTheJobOnItsHost) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 7; ++i) {
    gpus.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    stalled_from(gpus.back(), kFault);
  }
  gpus.push_back(kernel_log_only("7", kFault));
  const Report r = run({host("trn-k01", gpus)});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 1u) << text;  // no job of its own for the lost GPU
  EXPECT_EQ(r.jobs[0].job, "81234");
  EXPECT_EQ(r.jobs[0].gpus.size(), 8u);
  EXPECT_EQ(r.jobs[0].gpus.back(), "trn-k01/7");
  ASSERT_TRUE(r.jobs[0].has_root) << text;
  EXPECT_EQ(r.jobs[0].root.gpu, "7");
  EXPECT_EQ(r.jobs[0].root.cause, "hardware_errors");
  EXPECT_EQ(r.jobs[0].root.since_ms, kFault * kStep);
  for (size_t g = 0; g < 7; ++g) {
    const GpuReport& peer = gpu(r, 0, g);
    ASSERT_FALSE(peer.findings.empty()) << text;
    for (const Finding& f : peer.findings) {
      EXPECT_EQ(f.explained_by.cause, "hardware_errors") << "GPU " << g << " " << f.cause << "\n" << text;
      EXPECT_EQ(f.explained_by.gpu, "7");
    }
  }
  const GpuReport& lost = gpu(r, 0, 7);
  ASSERT_FALSE(lost.findings.empty()) << text;
  EXPECT_EQ(lost.findings[0].cause, "hardware_errors");
}

TEST(Jobs, AKernelLogOnlyGpuOnAHostOfTwoJobsJoinsNeither) {
  std::vector<GpuSignals> gpus;
  for (int i = 0; i < 4; ++i) {
    gpus.push_back(busy_gpu(std::to_string(i), i < 2 ? "job-a" : "job-b", "kubernetes"));
    stalled_from(gpus.back(), kFault);
  }
  gpus.push_back(kernel_log_only("4", kFault));
  const Report r = run({host("n1", gpus)});
  const std::string text = report_text(r, false);
  for (const JobReport& j : r.jobs) {
    if (j.job == "job-a" || j.job == "job-b") {
      EXPECT_FALSE(j.has_root) << j.job << "\n" << text;  // which job it served is unknown
      EXPECT_EQ(j.gpus.size(), 2u);
    }
  }
  EXPECT_TRUE(gpu(r, 0, 0).findings.at(0).explained_by.cause.empty()) << text;
}

// The same through the series the agent exports: the kmsg source's GPU
// carries gpu_up, gpu_last_xid and gpu_info with its PCI bus id only.
TEST(Jobs, AKernelLogOnlyGpuInARecordingIsTheRootOfTheJob) {
  SignalSetBuilder b;
  for (int i = 0; i < 3; ++i) {
    const std::string idx = std::to_string(i);
    const LabelPair g[] = {{"gpu", idx}, {"hostname", "trn-k01"}};
    const LabelPair info[] = {{"gpu", idx}, {"hostname", "trn-k01"}, {"job_id", "81234"}, {"source", "slurm"}};
    b.add("gpu_utilization_ratio", g, steps(0.95, 1.0, kFault));
    b.add("gpu_sm_active_ratio", g, steps(0.85, 0.02, kFault));
    b.add("gpu_sm_occupancy_ratio", g, steps(0.5, 0.011, kFault));
    b.add("gpu_memory_used_bytes", g, flat(60e9));
    b.add("gpu_memory_free_bytes", g, flat(20e9));
    b.add("gpu_up", g, flat(1));
    b.add("gpu_job_info", info, flat(1));
  }
  const LabelPair lost[] = {{"gpu", "3"}, {"hostname", "trn-k01"}};
  const LabelPair lost_info[] = {{"gpu", "3"}, {"hostname", "trn-k01"}, {"pci_bus_id", "00000000:3B:00.0"}};
  Series up, xid;
  for (int i = kFault; i < kPoints; ++i) {
    up.push_back({i * kStep, 0});
    xid.push_back({i * kStep, 79});
  }
  b.add("gpu_up", lost, up);
  b.add("gpu_last_xid", lost, xid);
  b.add("gpu_info", lost_info, up);
  SignalSet set = b.build();
  set.to_ms = (kPoints - 1) * kStep;
  const Report r = diagnose(set, {});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 1u) << text;
  ASSERT_TRUE(r.jobs[0].has_root) << text;
  EXPECT_EQ(r.jobs[0].root.gpu, "3");
  const GpuReport& peer = gpu(r, 0, 0);
  ASSERT_FALSE(peer.findings.empty()) << text;
  EXPECT_EQ(peer.findings[0].explained_by.gpu, "3") << text;
  EXPECT_NE(text.find("waiting for GPU 3 of trn-k01 (hardware_errors)"), std::string::npos) << text;
}

void throttled(GpuSignals& g) {
  g.sig(GpuSig::kThermalThrottle) = flat(1);
  g.sig(GpuSig::kSmClock) = flat(1.2e9);
  g.sig(GpuSig::kSmClockMax) = flat(1.98e9);
}
void waiting_in_collectives(GpuSignals& g) {
  g.sig(GpuSig::kSmActive) = flat(0.3);
  g.sig(GpuSig::kNvlinkUtil) = flat(0.7);
}

TEST(Jobs, ThrottledGpuOnOneHostIsTheJobsStraggler) {
  std::vector<GpuSignals> a, b;
  for (int i = 0; i < 2; ++i) {
    a.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    waiting_in_collectives(a.back());
    b.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
  }
  throttled(b[1]);
  waiting_in_collectives(b[0]);
  const Report r = run({host("trn-s01", a), host("trn-s02", b)});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 1u);
  ASSERT_TRUE(r.jobs[0].has_root) << text;
  EXPECT_EQ(r.jobs[0].root.host, "trn-s02");
  EXPECT_EQ(r.jobs[0].root.gpu, "1");
  EXPECT_EQ(r.jobs[0].root.cause, "thermal_throttle");
  for (const GpuReport& g : r.hosts[0].gpus) {
    ASSERT_FALSE(g.findings.empty()) << text;
    EXPECT_EQ(g.findings[0].cause, "communication");
    EXPECT_EQ(g.findings[0].explained_by.cause, "thermal_throttle");
    EXPECT_EQ(g.findings[0].explained_by.host, "trn-s02");
    EXPECT_EQ(g.findings[0].action.rfind("None of its own", 0), 0u) << g.findings[0].action;
  }
  EXPECT_EQ(r.waste_by_cause.count("communication"), 0u);
  EXPECT_NE(text.find("job 81234 (slurm), 4 GPUs on 2 hosts: slowed by GPU 1 of trn-s02, thermal_throttle"),
            std::string::npos)
      << text;
}

TEST(Jobs, ThrottlingSharedByTheWholeJobIsNoStraggler) {
  std::vector<GpuSignals> a, b;
  for (int i = 0; i < 2; ++i) {
    a.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    b.push_back(busy_gpu(std::to_string(i), "81234", "slurm"));
    throttled(a.back());
    throttled(b.back());
  }
  waiting_in_collectives(a[0]);
  const Report r = run({host("trn-s01", a), host("trn-s02", b)});
  ASSERT_EQ(r.jobs.size(), 1u);
  EXPECT_FALSE(r.jobs[0].has_root) << report_text(r, false);
  for (const Finding& f : gpu(r, 0, 0).findings) EXPECT_TRUE(f.explained_by.host.empty()) << f.cause;
}

TEST(Jobs, ThrottledGpuOfAnotherJobExplainsNothing) {
  std::vector<GpuSignals> a{busy_gpu("0", "job-a", "slurm"), busy_gpu("1", "job-b", "slurm")};
  throttled(a[0]);
  waiting_in_collectives(a[1]);
  const Report r = run({host("n1", a)});
  const GpuReport& other = gpu(r, 0, 1);
  ASSERT_FALSE(other.findings.empty());
  EXPECT_EQ(other.findings[0].cause, "communication");
  EXPECT_TRUE(other.findings[0].explained_by.cause.empty());
}

TEST(Jobs, HostJobsWithoutJobInformation) {
  HostSignals h = host("n1", {busy_gpu("0"), busy_gpu("1"), busy_gpu("2"), busy_gpu("3")});
  // One process per GPU (DDP) does not split the host ...
  for (int i = 0; i < 4; ++i) h.processes.push_back(proc(std::to_string(i + 10), std::to_string(i)));
  EXPECT_EQ(jobs_of(h), (std::vector<std::vector<std::string>>{{"0", "1", "2", "3"}}));
  // ... a process that drives two GPUs keeps them as a job of its own.
  h.processes.push_back(proc("99", "2"));
  h.processes.push_back(proc("99", "3"));
  EXPECT_EQ(jobs_of(h), (std::vector<std::vector<std::string>>{{"0", "1"}, {"2", "3"}}));
  SignalSet set;
  set.hosts.push_back(h);
  const std::vector<JobGroup> groups = job_groups(set);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].job, "n1:0,1");
  EXPECT_EQ(groups[1].job, "n1:2,3");
  EXPECT_EQ(groups[1].source, "host");
}

// Two jobs claim GPU 1 at once (job-a on GPUs 0-1, job-b on GPUs 1-2); GPU 1
// fails. Both jobs list it, both are stopped by it, and both say so.
TEST(Jobs, AGpuTwoJobsClaimIsInBothJobsAndSaidSo) {
  std::vector<GpuSignals> gpus{busy_gpu("0", "job-a", "slurm"), busy_gpu("1", "job-b", "slurm"),
                               busy_gpu("2", "job-b", "slurm")};
  gpus[1].also_jobs.push_back({"job-a", "slurm"});
  lost_at(gpus[1], kFault);
  stalled_from(gpus[0], kFault);
  stalled_from(gpus[2], kFault);
  const Report r = run({host("n1", gpus)});
  const std::string text = report_text(r, false);
  ASSERT_EQ(r.jobs.size(), 2u) << text;
  EXPECT_EQ(r.jobs[0].job, "job-a");
  EXPECT_EQ(r.jobs[0].gpus, (std::vector<std::string>{"n1/0", "n1/1"}));
  EXPECT_EQ(r.jobs[1].job, "job-b");
  EXPECT_EQ(r.jobs[1].gpus, (std::vector<std::string>{"n1/1", "n1/2"}));
  for (const JobReport& j : r.jobs) {
    ASSERT_TRUE(j.has_root) << text;
    EXPECT_EQ(j.root.gpu, "1");
    EXPECT_EQ(j.root.cause, "hardware_errors");
    ASSERT_EQ(j.notes.size(), 1u) << text;
    EXPECT_NE(j.notes[0].find("GPU 1 of n1 is also claimed by job " + std::string(j.job == "job-a" ? "job-b" : "job-a")),
              std::string::npos)
        << j.notes[0];
  }
  // Each peer waits for GPU 1, whichever job it runs.
  for (size_t g : {0u, 2u}) {
    ASSERT_FALSE(gpu(r, 0, g).findings.empty()) << text;
    for (const Finding& f : gpu(r, 0, g).findings) EXPECT_EQ(f.explained_by.gpu, "1") << f.cause;
  }
  const GpuReport& shared = gpu(r, 0, 1);
  ASSERT_EQ(shared.notes.size(), 1u) << text;
  EXPECT_NE(shared.notes[0].find("claimed by 2 jobs at the same time (job-b, job-a)"), std::string::npos)
      << shared.notes[0];
  EXPECT_TRUE(gpu(r, 0, 0).notes.empty() || gpu(r, 0, 0).notes[0].find("claimed") == std::string::npos);
  // Waste: once per cause over all GPUs; in each job that claims the GPU.
  double by_cause = 0, by_gpu = 0;
  for (const auto& [cause, w] : r.waste_by_cause) by_cause += w;
  for (const GpuReport& g : r.hosts[0].gpus) by_gpu += g.waste_gpu_seconds;
  EXPECT_NEAR(by_cause, by_gpu, 1e-6);
  ASSERT_GT(shared.waste_gpu_seconds, 0) << text;
  EXPECT_NEAR(r.jobs[0].waste_gpu_seconds + r.jobs[1].waste_gpu_seconds, by_gpu + shared.waste_gpu_seconds, 1e-6);
  EXPECT_NE(text.find("note: GPU 1 of n1 is also claimed by job job-b"), std::string::npos) << text;
  // The JSON carries the notes and reads back the same.
  const std::string json = report_json(r);
  EXPECT_NE(json.find(R"("notes":["GPU 1 of n1 is also claimed by job job-b)"), std::string::npos) << json;
  auto back = report_from_json(json, "test");
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->jobs.size(), 2u);
  EXPECT_EQ(back->jobs[0].notes, r.jobs[0].notes);
  EXPECT_EQ(back->jobs[1].notes, r.jobs[1].notes);
  EXPECT_EQ(back->hosts[0].gpus[1].notes, shared.notes);
}

// Without a second claim the same GPUs form two separate jobs: GPU 1 is in
// job-b only and job-a's GPU 0 is assessed on its own.
TEST(Jobs, WithoutASecondClaimTheGpuIsInOneJob) {
  std::vector<GpuSignals> gpus{busy_gpu("0", "job-a", "slurm"), busy_gpu("1", "job-b", "slurm"),
                               busy_gpu("2", "job-b", "slurm")};
  lost_at(gpus[1], kFault);
  stalled_from(gpus[0], kFault);
  stalled_from(gpus[2], kFault);
  const Report r = run({host("n1", gpus)});
  ASSERT_EQ(r.jobs.size(), 2u);
  EXPECT_EQ(r.jobs[0].gpus, (std::vector<std::string>{"n1/0"}));
  EXPECT_FALSE(r.jobs[0].has_root);
  EXPECT_TRUE(r.jobs[0].notes.empty());
  EXPECT_TRUE(r.jobs[1].notes.empty());
  for (const Finding& f : gpu(r, 0, 0).findings) EXPECT_TRUE(f.explained_by.cause.empty()) << f.cause;
}

// --- jobs in recordings and fleets (mapping) ---------------------------------

TEST(JobLabels, DcgmExportersHpcJobGroupsGpusAcrossHosts) {
  SignalSetBuilder b;
  for (const char* host : {"trn-k01", "trn-k02"}) {
    for (const char* g : {"0", "1"}) {
      const LabelPair l[] = {{"gpu", g}, {"Hostname", host}, {"hpc_job", "81234"}};
      b.add("DCGM_FI_DEV_GPU_UTIL", l, flat(95));
    }
  }
  const LabelPair other[] = {{"gpu", "0"}, {"Hostname", "trn-k03"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", other, flat(95));
  const SignalSet set = b.build();
  const std::vector<JobGroup> jobs = job_groups(set);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job, "81234");
  EXPECT_EQ(jobs[0].source, "slurm");
  EXPECT_EQ(jobs[0].gpus.size(), 4u);
  EXPECT_EQ(jobs[1].job, "trn-k03");  // no job information: its host's job
  EXPECT_EQ(jobs[1].source, "host");
}

TEST(JobLabels, GpuJobInfoNamesTheJobAndItsSource) {
  SignalSetBuilder b;
  const LabelPair g[] = {{"gpu", "0"}, {"hostname", "n1"}};
  const LabelPair info[] = {{"gpu", "0"}, {"hostname", "n1"}, {"job_id", "run-7"}, {"source", "environment"},
                            {"rank", "3"}};
  b.add("gpu_utilization_ratio", g, flat(0.9));
  b.add("gpu_job_info", info, flat(1));
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 1u);
  ASSERT_EQ(set.hosts[0].gpus.size(), 1u);
  EXPECT_EQ(set.hosts[0].gpus[0].job, "run-7");
  EXPECT_EQ(set.hosts[0].gpus[0].job_source, "environment");
  // A job the GPU ran earlier in the window gives way to the latest one.
  SignalSetBuilder later;
  const LabelPair old_info[] = {{"gpu", "0"}, {"hostname", "n1"}, {"job_id", "run-6"}, {"source", "slurm"}};
  later.add("gpu_utilization_ratio", g, flat(0.9));
  later.add("gpu_job_info", old_info, Series{{0, 1}, {kStep, 1}});
  later.add("gpu_job_info", info, Series{{2 * kStep, 1}, {3 * kStep, 1}});
  EXPECT_EQ(later.build().hosts.at(0).gpus.at(0).job, "run-7");
}

Series span(int from, int to) {  // gpu_job_info at 1 from point `from` to `to`, inclusive
  Series s;
  for (int i = from; i <= to; ++i) s.push_back({i * kStep, 1});
  return s;
}

// Claims whose spans overlap hold the GPU at once; a job that ended before the
// next one started (or handed over at one shared instant) was the GPU's
// earlier job and gives way to the latest.
TEST(JobLabels, OverlappingClaimsBothHoldTheGpuSequentialOnesGiveWay) {
  const LabelPair g[] = {{"gpu", "0"}, {"hostname", "n1"}};
  auto claims = [&](Series a, Series b, bool hpc_label = false) {
    SignalSetBuilder bld;
    bld.add("gpu_utilization_ratio", g, flat(0.9));
    const LabelPair ia[] = {{"gpu", "0"}, {"hostname", "n1"}, {"job_id", "81234"}, {"source", "slurm"}};
    const LabelPair ib[] = {{"gpu", "0"}, {"hostname", "n1"}, {"job_id", "run-9"}, {"source", "environment"}};
    if (hpc_label) {
      const LabelPair ha[] = {{"gpu", "0"}, {"hostname", "n1"}, {"hpc_job", "81234"}};
      bld.add("DCGM_FI_DEV_GPU_TEMP", ha, a);
    } else {
      bld.add("gpu_job_info", ia, a);
    }
    bld.add("gpu_job_info", ib, b);
    return bld.build().hosts.at(0).gpus.at(0);
  };
  const GpuSignals both = claims(span(0, 60), span(20, 80));
  EXPECT_EQ(both.job, "run-9");
  EXPECT_EQ(both.job_source, "environment");
  EXPECT_EQ(both.also_jobs, (std::vector<GpuSignals::JobClaim>{{"81234", "slurm"}}));
  EXPECT_EQ(claims(span(0, 60), span(20, 80), true).also_jobs,
            (std::vector<GpuSignals::JobClaim>{{"81234", "slurm"}}));  // dcgm-exporter's hpc_job too
  EXPECT_EQ(claims(span(30, 30), span(0, 80)).also_jobs.size(), 1u);      // one sample inside the other
  EXPECT_EQ(claims(span(5, 5), span(5, 5)).also_jobs.size(), 1u);         // one scrape, both
  const GpuSignals sequential = claims(span(0, 30), span(31, 80));
  EXPECT_EQ(sequential.job, "run-9");
  EXPECT_TRUE(sequential.also_jobs.empty());
  EXPECT_TRUE(claims(span(0, 30), span(30, 80)).also_jobs.empty());       // handed over at one instant
  // Grouped: the overlapping GPU is in both jobs, the sequential one in the latest.
  SignalSet set;
  HostSignals h;
  h.name = "n1";
  h.gpus = {both};
  set.hosts.push_back(h);
  std::vector<JobGroup> groups = job_groups(set);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].job, "81234");
  EXPECT_EQ(groups[0].source, "slurm");
  EXPECT_EQ(groups[1].job, "run-9");
  EXPECT_EQ(groups[0].gpus, groups[1].gpus);
  set.hosts[0].gpus = {sequential};
  groups = job_groups(set);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].job, "run-9");
}

TEST(JobLabels, KubePodLabelsJoinByNamespaceAndPod) {
  SignalSetBuilder b;
  for (const char* host : {"gpu-a", "gpu-b"}) {
    const LabelPair l[] = {{"gpu", "0"}, {"Hostname", host}, {"namespace", "ml"}, {"pod", std::string_view(host) == "gpu-a" ? "llama-worker-0" : "llama-worker-1"}};
    b.add("DCGM_FI_DEV_GPU_UTIL", l, flat(95));
  }
  const LabelPair unowned[] = {{"gpu", "1"}, {"Hostname", "gpu-b"}, {"namespace", "ml"}, {"pod", "notebook"}};
  b.add("DCGM_FI_DEV_GPU_UTIL", unowned, flat(95));
  for (const char* pod : {"llama-worker-0", "llama-worker-1"}) {
    const LabelPair k[] = {{"instance", "kube-state-metrics:8080"}, {"namespace", "ml"}, {"pod", pod},
                           {"label_training_kubeflow_org_job_name", "llama"}};
    b.add("kube_pod_labels", k, flat(1));
  }
  const LabelPair nb[] = {{"instance", "kube-state-metrics:8080"}, {"namespace", "ml"}, {"pod", "notebook"},
                          {"label_app", "jupyter"}};
  b.add("kube_pod_labels", nb, flat(1));
  const SignalSet set = b.build();
  ASSERT_EQ(set.hosts.size(), 2u);  // kube-state-metrics is no host of its own
  EXPECT_EQ(set.hosts[0].gpus[0].job, "ml/llama");
  EXPECT_EQ(set.hosts[0].gpus[0].job_source, "kubernetes");
  EXPECT_EQ(set.hosts[1].gpus[0].job, "ml/llama");
  EXPECT_EQ(set.hosts[1].gpus[1].job, "");  // a pod without an owner label
}

}  // namespace
}  // namespace gpulens::diagnose
