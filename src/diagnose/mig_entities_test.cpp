// MIG instances in recordings are entities of their own, never merged into
// their GPU: a recording of one A100 with two GPU instances, one idle and
// holding memory, one busy, gives each its own findings, in gpulens' names
// (gpu_mig_*, MIG labels) and in dcgm-exporter's (GPU_I_PROFILE/GPU_I_ID on
// every series, the GPU's own values repeated per instance).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "diagnose/engine.h"
#include "diagnose/replay_input.h"
#include "diagnose/report.h"

namespace gpulens::diagnose {
namespace {

constexpr int64_t kStart = 1'764'410'400;  // seconds
constexpr int kSteps = 15 * 4;             // 15 minutes at 15 s

std::string line(const std::string& name, const std::string& labels, double v, int64_t t) {
  char b[64];
  std::snprintf(b, sizeof b, " %.6g %lld\n", v, static_cast<long long>(t));
  return name + "{" + labels + "}" + b;
}

// gpulens' names: the parent GPU's series plus gpu_mig_* per instance.
std::string native_recording() {
  const std::string gpu = "gpu=\"0\",gpu_uuid=\"GPU-a100\",gpu_name=\"NVIDIA A100-SXM4-80GB\"";
  const std::string idle = gpu + ",mig_uuid=\"MIG-idle\",mig_profile=\"3g.40gb\",gpu_instance_id=\"1\",compute_instance_id=\"0\"";
  const std::string busy = gpu + ",mig_uuid=\"MIG-busy\",mig_profile=\"4g.40gb\",gpu_instance_id=\"2\",compute_instance_id=\"0\"";
  std::string out;
  for (int i = 0; i < kSteps; ++i) {
    const int64_t t = kStart + 15 * i;
    out += line("gpu_up", gpu, 1, t);
    out += line("gpu_temperature_celsius", gpu, 45, t);
    out += line("gpu_mig_graphics_engine_active_ratio", idle, 0, t);
    out += line("gpu_mig_memory_used_bytes", idle, 20e9, t);
    out += line("gpu_mig_memory_free_bytes", idle, 20e9, t);
    out += line("gpu_mig_graphics_engine_active_ratio", busy, 0.95, t);
    out += line("gpu_mig_sm_occupancy_ratio", busy, 0.1, t);
    out += line("gpu_mig_memory_used_bytes", busy, 30e9, t);
    out += line("gpu_mig_memory_free_bytes", busy, 10e9, t);
  }
  return out + "# EOF\n";
}

// dcgm-exporter's names: every series per GPU instance.
std::string dcgm_recording() {
  const std::string gpu = "gpu=\"0\",UUID=\"GPU-a100\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\"";
  const std::string idle = gpu + ",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"1\",Hostname=\"n1\"";
  const std::string busy = gpu + ",GPU_I_PROFILE=\"4g.40gb\",GPU_I_ID=\"2\",Hostname=\"n1\"";
  std::string out;
  for (int i = 0; i < kSteps; ++i) {
    const int64_t t = kStart + 15 * i;
    for (const std::string* l : {&idle, &busy}) {
      out += line("DCGM_FI_DEV_GPU_TEMP", *l, 45, t);
      out += line("DCGM_FI_DEV_XID_ERRORS", *l, 0, t);
    }
    out += line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", idle, 0, t);
    out += line("DCGM_FI_DEV_FB_USED", idle, 20000, t);
    out += line("DCGM_FI_DEV_FB_FREE", idle, 20000, t);
    out += line("DCGM_FI_PROF_GR_ENGINE_ACTIVE", busy, 0.95, t);
    out += line("DCGM_FI_PROF_SM_OCCUPANCY", busy, 0.1, t);
    out += line("DCGM_FI_DEV_FB_USED", busy, 30000, t);
    out += line("DCGM_FI_DEV_FB_FREE", busy, 10000, t);
  }
  return out + "# EOF\n";
}

const GpuReport* entity(const Report& r, std::string_view gpu) {
  for (const GpuReport& g : r.hosts.at(0).gpus) {
    if (g.gpu == gpu) return &g;
  }
  return nullptr;
}

void expect_per_instance(const std::string& text, bool native) {
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(text, "mig.om", info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  const Report r = diagnose(*set, Thresholds{});
  SCOPED_TRACE(report_text(r, false));
  ASSERT_EQ(r.hosts.size(), 1u);
  const GpuReport* idle = entity(r, "0/gi1");
  const GpuReport* busy = entity(r, "0/gi2");
  ASSERT_NE(idle, nullptr);
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(idle->mig.profile, "3g.40gb");
  EXPECT_EQ(idle->mig.gpu_instance, "1");
  EXPECT_EQ(idle->mig.gpu, "0");
  EXPECT_EQ(idle->uuid, "GPU-a100");
  EXPECT_EQ(busy->mig.profile, "4g.40gb");
  if (native) {
    EXPECT_EQ(idle->mig.uuid, "MIG-idle");
  }
  // The idle instance: idle, named in the evidence.
  ASSERT_FALSE(idle->findings.empty());
  EXPECT_EQ(idle->findings[0].cause, "idle");
  EXPECT_EQ(idle->findings[0].state, State::kFiring);
  ASSERT_FALSE(idle->findings[0].evidence.empty());
  EXPECT_NE(idle->findings[0].evidence[0].detail.find("MIG 3g.40gb, GPU instance 1 of GPU 0"), std::string::npos)
      << idle->findings[0].evidence[0].detail;
  // The busy one: not idle, its own small_batch (low occupancy, no latency).
  for (const Finding& f : busy->findings) EXPECT_NE(f.cause, "idle");
  ASSERT_FALSE(busy->findings.empty());
  EXPECT_EQ(busy->findings[0].cause, "small_batch");
  EXPECT_NE(busy->findings[0].evidence[0].detail.find("MIG 4g.40gb, GPU instance 2 of GPU 0"), std::string::npos);
  // Both in the JSON, each with its instance.
  const std::string json = report_json(r);
  EXPECT_NE(json.find("\"gpu\":\"0/gi1\""), std::string::npos);
  EXPECT_NE(json.find("\"mig\":{\"gpu\":\"0\",\"gpu_instance_id\":\"1\",\"profile\":\"3g.40gb\""), std::string::npos)
      << json;
  const std::string txt = report_text(r, false);
  EXPECT_NE(txt.find("GPU 0/gi1  MIG 3g.40gb (GPU instance 1 of GPU 0)"), std::string::npos) << txt;
}

TEST(MigEntities, NativeNamesGiveFindingsPerInstance) {
  expect_per_instance(native_recording(), true);
  // The parent GPU stays an entity of its own for its device-wide signals,
  // with no instance's activity merged into it.
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(native_recording(), "mig.om", info);
  ASSERT_TRUE(set.ok());
  const HostSignals& h = set->hosts.at(0);
  ASSERT_EQ(h.gpus.size(), 3u);
  EXPECT_EQ(h.gpus[0].index, "0");
  EXPECT_TRUE(h.gpus[0].sig(GpuSig::kGrActive).empty());
  EXPECT_FALSE(h.gpus[0].sig(GpuSig::kTemperature).empty());
  EXPECT_TRUE(h.gpus[0].mig.gpu_instance.empty());
}

TEST(MigEntities, DcgmExporterNamesGiveFindingsPerInstance) {
  expect_per_instance(dcgm_recording(), false);
  ReplayInfo info;
  Result<SignalSet> set = load_replay_text(dcgm_recording(), "mig.om", info);
  ASSERT_TRUE(set.ok());
  ASSERT_EQ(set->hosts.at(0).gpus.size(), 2u);  // no GPU-wide series: only the instances
  EXPECT_FALSE(set->hosts[0].gpus[0].sig(GpuSig::kTemperature).empty());  // the parent's, on each
}

}  // namespace
}  // namespace gpulens::diagnose
