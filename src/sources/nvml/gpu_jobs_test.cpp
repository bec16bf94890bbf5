// Job attribution on the node: the environment's job keys (and nothing
// else), the Slurm mapping directory, their order, and the NVML source's
// gpu_job_info against a fixture /proc and mapping directory.
#include "sources/kubelet/pod_directory.h"
#include "sources/nvml/gpu_jobs.h"
#include "sources/nvml/hpc_job_map.h"
#include "sources/nvml/job_env.h"
#include "sources/nvml/nvml_source.h"
#include "util/testing/temp_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace gpulens {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

std::string environ_of(std::initializer_list<std::string> entries) {
  std::string out;
  for (const auto& e : entries) out += e + '\0';
  return out;
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

TEST(JobEnv, KeepsOnlyTheNamedKeys) {
  const JobEnv env = parse_job_environ(environ_of({"HF_TOKEN=hf_secret", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=16",
                                                   "GROUP_RANK=0", "MASTER_ADDR=trn-k01", "MASTER_PORT=29500",
                                                   "AWS_SECRET_ACCESS_KEY=abc", "TORCHELASTIC_RUN_ID=none",
                                                   "PATH=/usr/bin", "RANKX=9"}));
  EXPECT_EQ(env.rank, "3");
  EXPECT_EQ(env.local_rank, "1");
  EXPECT_EQ(env.world_size, "16");
  EXPECT_EQ(env.group_rank, "0");
  // torchrun's default run id "none" names no job: the rendezvous does.
  EXPECT_EQ(env.job_id(), "trn-k01:29500");
  EXPECT_EQ(env.job_source(), "environment");
  // Nothing else is anywhere in the struct.
  for (const std::string* v : {&env.slurm_job_id, &env.slurm_procid, &env.slurm_localid, &env.slurm_ntasks,
                               &env.slurm_nodeid, &env.master_addr, &env.master_port, &env.run_id}) {
    EXPECT_EQ(v->find("secret"), std::string::npos);
    EXPECT_EQ(v->find("abc"), std::string::npos);
  }
}

TEST(JobEnv, SlurmJobWinsOverTheRendezvousAndValuesAreChecked) {
  JobEnv env = parse_job_environ(environ_of({"TORCHELASTIC_RUN_ID=run-7", "SLURM_JOB_ID=81234", "SLURM_PROCID=5"}));
  EXPECT_EQ(env.job_id(), "81234");
  EXPECT_EQ(env.job_source(), "slurm");
  env = parse_job_environ(environ_of({"TORCHELASTIC_RUN_ID=run-7"}));
  EXPECT_EQ(env.job_id(), "run-7");
  // A rank that is no number, a run id with a control byte or too long, a
  // key without '=': all absent, never a crash.
  env = parse_job_environ(environ_of({"RANK=three", "TORCHELASTIC_RUN_ID=a\x1b]0;x", "SLURM_JOB_ID", "WORLD_SIZE=-1"}));
  EXPECT_TRUE(env.empty());
  env = parse_job_environ(environ_of({"TORCHELASTIC_RUN_ID=" + std::string(129, 'r')}));
  EXPECT_EQ(env.job_id(), "");
}

TEST(JobEnv, BinaryHugeAndUnreadableFiles) {
  testing::TestDir dir;
  // Binary garbage with the keys somewhere inside.
  std::string binary;
  for (int i = 0; i < 4096; ++i) binary += static_cast<char>((i * 37) & 0xff);
  write(dir.file("binary"), binary + '\0' + "RANK=2"s + '\0' + binary);
  JobEnv env;
  EXPECT_EQ(read_job_environ(dir.file("binary"), env), EnvironRead::kOk);
  EXPECT_EQ(env.rank, "2");

  // Larger than the bound: the keys inside the first 256 KiB are seen, the
  // entry cut at the bound and what follows are not.
  const std::string filler = "FILLER=" + std::string(kMaxEnvironBytes, 'x');
  write(dir.file("huge"), environ_of({"RANK=1", filler, "WORLD_SIZE=8"}));
  EXPECT_EQ(read_job_environ(dir.file("huge"), env), EnvironRead::kTruncated);
  EXPECT_EQ(env.rank, "1");
  EXPECT_EQ(env.world_size, "");

  // Exactly at the bound is whole.
  std::string exact = environ_of({"WORLD_SIZE=8"});
  exact += std::string(kMaxEnvironBytes - exact.size(), '\0');
  write(dir.file("exact"), exact);
  EXPECT_EQ(read_job_environ(dir.file("exact"), env), EnvironRead::kOk);
  EXPECT_EQ(env.world_size, "8");

  // A file that cannot be opened, or read (a directory: read() fails as a
  // ptrace-protected environ does): absent.
  EXPECT_EQ(read_job_environ(dir.file("missing"), env), EnvironRead::kUnreadable);
  fs::create_directories(dir.file("a-directory"));
  EXPECT_EQ(read_job_environ(dir.file("a-directory"), env), EnvironRead::kUnreadable);
  EXPECT_TRUE(env.empty());
}

TEST(HpcJobMap, OneFilePerGpuIndexWithItsJobs) {
  testing::TestDir dir;
  write(dir.file("0"), "81234\n");
  write(dir.file("1"), "81234\r\n  \n81240\n81234\n");  // two jobs on GPU 1, a duplicate, a blank line
  write(dir.file("3"), "");                             // a GPU no job holds now
  write(dir.file("README"), "not a GPU\n");
  write(dir.file("7"), "81250\n\x01\x02garbage\x7f\njob with spaces\n" + std::string(200, 'j') + "\n81251\n");
  fs::create_directories(dir.file("5"));  // not a file
  const HpcJobMap map = read_hpc_job_map(dir.path());
  EXPECT_EQ(map.jobs.at(0), std::vector<std::string>{"81234"});
  EXPECT_EQ(map.jobs.at(1), (std::vector<std::string>{"81234", "81240"}));
  EXPECT_EQ(map.jobs.count(3), 0u);
  EXPECT_EQ(map.jobs.count(5), 0u);
  EXPECT_EQ(map.jobs.at(7), (std::vector<std::string>{"81250", "81251"}));  // the good lines kept
  ASSERT_EQ(map.problems.size(), 2u);
  std::string all = map.problems[0] + "\n" + map.problems[1];
  EXPECT_NE(all.find(dir.file("7") + ": line 2 is not a job id (and 2 more lines)"), std::string::npos) << all;
  EXPECT_NE(all.find(dir.file("5") + ": not a readable file"), std::string::npos) << all;
}

TEST(HpcJobMap, MissingDirectoryAndOversizedFile) {
  testing::TestDir dir;
  HpcJobMap map = read_hpc_job_map(dir.file("nowhere"));
  EXPECT_TRUE(map.jobs.empty());
  ASSERT_EQ(map.problems.size(), 1u);
  EXPECT_NE(map.problems[0].find("cannot read the job mapping directory"), std::string::npos);

  std::string big = "81234\n";
  while (big.size() < 2 * kMaxHpcJobFileBytes) big += "x\n";
  write(dir.file("map/2"), big);
  map = read_hpc_job_map(dir.file("map"));
  EXPECT_EQ(map.jobs.at(2), (std::vector<std::string>{"81234", "x"}));
  EXPECT_NE(map.problems.at(0).find("larger than 64 KiB"), std::string::npos);
}

TEST(GpuJobs, MappingDirectoryFirstThenSlurmThenTheRendezvous) {
  const JobEnv torch = parse_job_environ(environ_of({"RANK=3", "LOCAL_RANK=3", "WORLD_SIZE=16", "GROUP_RANK=0",
                                                     "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}));
  const JobEnv slurm = parse_job_environ(
      environ_of({"SLURM_JOB_ID=900", "SLURM_PROCID=12", "SLURM_LOCALID=4", "SLURM_NTASKS=32", "SLURM_NODEID=1"}));
  const std::vector<const JobEnv*> torch_only{&torch}, slurm_only{&slurm};
  const std::vector<std::string> mapped{"81234"};

  // The mapping directory names the job; torchrun's ranks label it.
  auto jobs = attribute_gpu_jobs(&mapped, torch_only);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0], (GpuJob{"81234", "slurm", "3", "3", "16", "0"}));
  EXPECT_EQ(job_labels(jobs[0]).render(),
            R"(group_rank="0",job_id="81234",local_rank="3",rank="3",source="slurm",world_size="16")");
  // A process of another Slurm job lends the mapped job no ranks.
  jobs = attribute_gpu_jobs(&mapped, slurm_only);
  EXPECT_EQ(jobs.at(0), (GpuJob{.job_id = "81234", .source = "slurm"}));
  EXPECT_EQ(job_labels(jobs[0]).render(), R"(job_id="81234",source="slurm")");
  // Without the directory: the process's Slurm job, its ranks from SLURM_*.
  jobs = attribute_gpu_jobs(nullptr, slurm_only);
  EXPECT_EQ(jobs.at(0), (GpuJob{"900", "slurm", "12", "4", "32", "1"}));
  jobs = attribute_gpu_jobs(nullptr, torch_only);
  EXPECT_EQ(jobs.at(0), (GpuJob{"10.0.0.1:29500", "environment", "3", "3", "16", "0"}));
  // No job keys at all: no job.
  const JobEnv none;
  EXPECT_TRUE(attribute_gpu_jobs(nullptr, std::vector<const JobEnv*>{&none}).empty());
}

TEST(GpuJobs, TwoJobsClaimingOneGpuAreBothListed) {
  const std::vector<std::string> mapped{"81234", "81240"};
  auto jobs = attribute_gpu_jobs(&mapped, {});
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].job_id, "81234");
  EXPECT_EQ(jobs[1].job_id, "81240");
  const JobEnv a = parse_job_environ(environ_of({"TORCHELASTIC_RUN_ID=a", "RANK=0"}));
  const JobEnv b = parse_job_environ(environ_of({"TORCHELASTIC_RUN_ID=b", "RANK=5"}));
  const JobEnv a2 = parse_job_environ(environ_of({"TORCHELASTIC_RUN_ID=a", "RANK=1"}));
  jobs = attribute_gpu_jobs(nullptr, std::vector<const JobEnv*>{&a, &b, &a2});
  ASSERT_EQ(jobs.size(), 2u);  // one series per job, not per process
  EXPECT_EQ(jobs[0], (GpuJob{.job_id = "a", .source = "environment", .rank = "0"}));
  EXPECT_EQ(jobs[1], (GpuJob{.job_id = "b", .source = "environment", .rank = "5"}));
}

// The pod's owner label names the job only where nothing on the node does.
TEST(GpuJobs, PodOwnerLabelComesLast) {
  const JobEnv torch = parse_job_environ(environ_of({"RANK=3", "MASTER_ADDR=10.0.0.1", "MASTER_PORT=29500"}));
  const JobEnv ranks_only = parse_job_environ(environ_of({"RANK=5", "WORLD_SIZE=8"}));
  const std::vector<std::string> mapped{"81234"}, pods{"ml/llama"}, two_pods{"lab/nb-a", "lab/nb-b"};
  EXPECT_EQ(attribute_gpu_jobs(&mapped, {}, pods), (std::vector<GpuJob>{{.job_id = "81234", .source = "slurm"}}));
  EXPECT_EQ(attribute_gpu_jobs(nullptr, std::vector<const JobEnv*>{&torch}, pods).at(0).source, "environment");
  // Nothing else: the pod's job, ranks from its process.
  EXPECT_EQ(attribute_gpu_jobs(nullptr, std::vector<const JobEnv*>{&ranks_only}, pods),
            (std::vector<GpuJob>{{.job_id = "ml/llama", .source = "kubernetes", .rank = "5", .world_size = "8"}}));
  EXPECT_EQ(attribute_gpu_jobs(nullptr, {}, two_pods).size(), 2u);  // a shared GPU: both pods' jobs
  EXPECT_TRUE(attribute_gpu_jobs(nullptr, {}, {}).empty());
}

// ---- the NVML source, through the stand-in libnvidia-ml.so.1 ----

// stat with a start time (field 22) the process cache keys on.
std::string stat_of(unsigned pid) {
  return std::to_string(pid) +
         " (python3) S 1 1 1 0 -1 4194560 1000 0 0 0 500 50 0 0 20 0 12 0 987654 1000000 1000 0 1 1 0 0 0 0 0 0 0 0 0 "
         "0 17 3 0 0 0 0 0\n";
}

struct Fixture {
  testing::TestDir dir;
  NvmlOptions options;
  Fixture(const std::string& script) {
    write(dir.file("script.txt"), script);
    setenv("GPULENS_FAKE_NVML_SCRIPT", dir.file("script.txt").c_str(), 1);
    options.library = GPULENS_FAKE_NVML;
    options.proc_root = dir.file("proc");
    options.kubelet_root = options.sys_root = "/nonexistent";
    options.xid_wait_ms = 20;
    options.call_deadline_ms = 5000;
  }
  void process(unsigned pid, const std::string& environ) {
    write(dir.file("proc/" + std::to_string(pid) + "/stat"), stat_of(pid));
    write(dir.file("proc/" + std::to_string(pid) + "/environ"), environ);
  }
};

std::map<std::string, double> job_series(NvmlSource& src, SeriesRegistry& reg) {
  Frame frame(reg);
  frame.clear(0);
  EXPECT_TRUE(src.sample(frame).is_ok());
  std::map<std::string, double> out;
  for (const auto& v : frame.values()) {
    const Series& s = reg.series(v.slot);
    if (s.field == FieldId::kGpuJobInfo) out[std::to_string(s.gpu) + "|" + s.extra.render()] = v.value;
  }
  return out;
}

TEST(NvmlJobs, FromTheMappingDirectoryAndTheRanksEnvironment) {
  Fixture f(
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa gpm=off\n"
      "gpu 1 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-bbbb gpm=off\n"
      "gpu 2 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-cccc gpm=off\n"
      "process 0 pid=5000 mem=1024\nprocess 1 pid=5001 mem=1024\nprocess 2 pid=5002 mem=1024\n");
  f.process(5000, environ_of({"RANK=8", "LOCAL_RANK=0", "WORLD_SIZE=16", "SECRET=x"}));
  f.process(5001, environ_of({"SLURM_JOB_ID=900", "SLURM_PROCID=9"}));
  f.process(5002, std::string(300 * 1024, 'z'));  // huge, no keys: GPU 2 has no job
  write(f.dir.file("map/0"), "81234\n");
  write(f.dir.file("map/2"), "\x01\x02\n");
  f.options.hpc_job_mapping_dir = f.dir.file("map");
  SeriesRegistry reg;
  NvmlSource src(f.options);
  ASSERT_TRUE(src.open(reg).is_ok());
  auto jobs = job_series(src, reg);
  EXPECT_EQ(jobs, (std::map<std::string, double>{
                      {R"(0|job_id="81234",local_rank="0",rank="8",source="slurm",world_size="16")", 1},
                      {R"(1|job_id="900",rank="9",source="slurm")", 1},
                  }));
  std::string notices;
  for (const auto& n : src.notices()) notices += n + "\n";
  EXPECT_NE(notices.find("larger than 256 KiB"), std::string::npos) << notices;
  EXPECT_NE(notices.find("map/2: line 1 is not a job id"), std::string::npos) << notices;
  EXPECT_EQ(notices.find("SECRET"), std::string::npos);
  // Every label on the exposed series is one of the documented ones.
  for (const auto& [key, v] : jobs) EXPECT_EQ(key.find("SECRET"), std::string::npos);
}

TEST(NvmlJobs, UnreadableEnvironmentIsAbsentAndSaidOnce) {
  Fixture f(
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa gpm=off\n"
      "process 0 pid=6000 mem=1024\nprocess 0 pid=6001 mem=1024\n");
  // environ as a directory: opened, but read() fails, as a ptrace-protected one does.
  write(f.dir.file("proc/6000/stat"), stat_of(6000));
  fs::create_directories(f.dir.file("proc/6000/environ"));
  write(f.dir.file("proc/6001/stat"), stat_of(6001));
  SeriesRegistry reg;
  NvmlSource src(f.options);
  ASSERT_TRUE(src.open(reg).is_ok());
  EXPECT_TRUE(job_series(src, reg).empty());
  EXPECT_TRUE(job_series(src, reg).empty());
  int said = 0;
  for (const auto& n : src.notices()) said += n.find("CAP_SYS_PTRACE") != std::string::npos;
  EXPECT_EQ(said, 1);
}

TEST(NvmlJobs, TwoJobsOnOneGpuBothListedAndSaid) {
  Fixture f(
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa gpm=off\n"
      "process 0 pid=7000 mem=1024\nprocess 0 pid=7001 mem=1024\n");
  f.process(7000, environ_of({"TORCHELASTIC_RUN_ID=alpha", "RANK=0"}));
  f.process(7001, environ_of({"TORCHELASTIC_RUN_ID=beta", "RANK=0"}));
  f.options.job_environ = true;
  SeriesRegistry reg;
  NvmlSource src(f.options);
  ASSERT_TRUE(src.open(reg).is_ok());
  auto jobs = job_series(src, reg);
  EXPECT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs.count(R"(0|job_id="alpha",rank="0",source="environment")"), 1u);
  EXPECT_EQ(jobs.count(R"(0|job_id="beta",rank="0",source="environment")"), 1u);
  std::string notices;
  for (const auto& n : src.notices()) notices += n + "\n";
  EXPECT_NE(notices.find("GPU 0 is claimed by 2 jobs (alpha, beta)"), std::string::npos) << notices;

  // Off: the environment is not read at all.
  f.options.job_environ = false;
  SeriesRegistry reg2;
  NvmlSource off(f.options);
  ASSERT_TRUE(off.open(reg2).is_ok());
  EXPECT_TRUE(job_series(off, reg2).empty());
}

}  // namespace
}  // namespace gpulens

namespace gpulens {
namespace {

// The kubelet source's view (pod of each GPU, job of each pod) becomes
// gpu_job_info{source="kubernetes"} for a GPU nothing else names, and goes
// when the view does.
TEST(NvmlJobs, ThePodsOwnerLabelNamesAGpuNothingElseNames) {
  Fixture f(
      "gpu 0 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-aaaa gpm=off\n"
      "gpu 1 name=\"NVIDIA H100 80GB HBM3\" uuid=GPU-bbbb gpm=off\n"
      "process 1 pid=7100 mem=1024\n");
  f.process(7100, environ_of({"TORCHELASTIC_RUN_ID=gamma", "RANK=1"}));
  pod_directory().replace({{"nvidia.com/gpu", "GPU-aaaa", "ml", "llama-worker-0", "trainer"},
                           {"nvidia.com/gpu", "GPU-bbbb", "ml", "llama-worker-1", "trainer"}});
  pod_directory().replace_pod_jobs({{"ml/llama-worker-0", "ml/llama"}, {"ml/llama-worker-1", "ml/llama"}});
  SeriesRegistry reg;
  NvmlSource src(f.options);
  ASSERT_TRUE(src.open(reg).is_ok());
  EXPECT_EQ(job_series(src, reg), (std::map<std::string, double>{
                                      {R"(0|job_id="ml/llama",source="kubernetes")", 1},
                                      {R"(1|job_id="gamma",rank="1",source="environment")", 1},
                                  }));
  pod_directory().replace_pod_jobs({});  // the API server stopped answering: absent
  EXPECT_EQ(job_series(src, reg).size(), 1u);
  pod_directory().clear();
}

}  // namespace
}  // namespace gpulens
