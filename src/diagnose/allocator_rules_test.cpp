// The memory rules on pushed allocator series, through the name mapping:
// memory_fragmentation judges external fragmentation (the snapshot measure)
// when it is there and says so, falls back to slack otherwise, and names the
// process; memory_pressure fires on allocator retries and OOMs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/mapping.h"
#include "diagnose/testing/series.h"

namespace gpulens::diagnose {
namespace {

constexpr int kPoints = 61;  // 15 s x 61 = 15 min
constexpr int64_t kStep = 15'000;

Series flat(double v) { return testing::flat(v, kPoints, kStep); }
Series counter(double per_step) {
  Series s;
  for (int i = 0; i < kPoints; ++i) s.push_back({i * kStep, per_step * i});
  return s;
}

// A busy GPU with room in its framebuffer, as the agent's history holds it.
void healthy(SignalSetBuilder& b) {
  const std::vector<LabelPair> gpu{{"gpu", "0"}, {"gpu_uuid", "GPU-abc"}, {"hostname", "n1"}};
  b.add("gpu_utilization_ratio", gpu, flat(0.95));
  b.add("gpu_sm_active_ratio", gpu, flat(0.8));
  b.add("gpu_sm_occupancy_ratio", gpu, flat(0.5));
  b.add("gpu_memory_used_bytes", gpu, flat(40e9));
  b.add("gpu_memory_free_bytes", gpu, flat(40e9));
}

void pushed(SignalSetBuilder& b, std::string_view name, std::string_view pid, Series s, std::string_view pool = "") {
  const std::string_view pod = pid == "4242" ? "server-0" : "server-1";
  std::vector<LabelPair> l{{"gpu", "0"}, {"gpu_uuid", "GPU-abc"}, {"hostname", "n1"}, {"pid", pid},
                           {"namespace", "ml"}, {"pod", pod}};
  if (!pool.empty()) l.emplace_back("pool", pool);
  b.add(name, l, std::move(s));
}

const Finding* find(const Report& r, std::string_view cause) {
  for (const auto& f : r.hosts.at(0).gpus.at(0).findings) {
    if (f.cause == cause) return &f;
  }
  return nullptr;
}

TEST(AllocatorRules, ExternalFragmentationIsJudgedAndTheProcessNamed) {
  SignalSetBuilder b;
  healthy(b);
  // Slack is low (little cached), but what is free is in slivers.
  pushed(b, "gpu_memory_fragmentation_ratio", "4242", flat(0.2));
  pushed(b, "gpu_allocator_external_fragmentation_ratio", "4242", flat(0.8), "large");
  pushed(b, "gpu_allocator_external_fragmentation_ratio", "4343", flat(0.1), "large");
  const Report r = diagnose(b.build(), {});
  const Finding* f = find(r, "memory_fragmentation");
  ASSERT_NE(f, nullptr);
  ASSERT_GE(f->evidence.size(), 2u);
  EXPECT_EQ(f->evidence[0].signal, "external_fragmentation");
  EXPECT_NEAR(f->evidence[0].value, 0.8, 1e-9);
  EXPECT_NE(f->evidence[0].detail.find("largest free block"), std::string::npos) << f->evidence[0].detail;
  EXPECT_NE(f->evidence[0].detail.find("pid 4242 (ml/server-0)"), std::string::npos) << f->evidence[0].detail;
  EXPECT_EQ(f->evidence[1].signal, "fragmentation");
  EXPECT_NE(f->evidence[1].detail.find("not judged"), std::string::npos);
  EXPECT_NE(f->action.find("pid 4242"), std::string::npos);
}

TEST(AllocatorRules, HighSlackWithoutSlicesIsNotFragmentation) {
  SignalSetBuilder b;
  healthy(b);
  // After a peak: most reserved memory is free, but in one block.
  pushed(b, "gpu_memory_fragmentation_ratio", "4242", flat(0.7));
  pushed(b, "gpu_allocator_external_fragmentation_ratio", "4242", flat(0.05), "large");
  EXPECT_EQ(find(diagnose(b.build(), {}), "memory_fragmentation"), nullptr);
}

TEST(AllocatorRules, TheSmallPoolIsNotJudged) {
  SignalSetBuilder b;
  healthy(b);
  pushed(b, "gpu_allocator_external_fragmentation_ratio", "4242", flat(0.9), "small");
  pushed(b, "gpu_allocator_external_fragmentation_ratio", "4242", flat(0.1), "large");
  EXPECT_EQ(find(diagnose(b.build(), {}), "memory_fragmentation"), nullptr);
}

TEST(AllocatorRules, SlackIsTheFallbackAndSaysSo) {
  SignalSetBuilder b;
  healthy(b);
  pushed(b, "gpu_memory_fragmentation_ratio", "4343", flat(0.7));
  const Report r = diagnose(b.build(), {});
  const Finding* f = find(r, "memory_fragmentation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.at(0).signal, "fragmentation");
  EXPECT_NE(f->evidence[0].detail.find("slack, 1 - allocated/reserved"), std::string::npos);
  EXPECT_NE(f->evidence[0].detail.find("pid 4343 (ml/server-1)"), std::string::npos);
}

TEST(AllocatorRules, RetriesMeanMemoryPressureWithRoomInTheFramebuffer) {
  SignalSetBuilder b;
  healthy(b);
  pushed(b, "gpu_allocator_retries_total", "4242", counter(3));  // 3 retries every 15 s
  pushed(b, "gpu_allocator_ooms_total", "4242", flat(0));
  const Report r = diagnose(b.build(), {});
  const Finding* f = find(r, "memory_pressure");
  ASSERT_NE(f, nullptr);
  bool retries = false;
  for (const auto& e : f->evidence) {
    if (e.signal == "allocator_retries_per_second") {
      retries = true;
      EXPECT_NEAR(e.value, 0.2, 1e-9);
      EXPECT_NE(e.detail.find("pid 4242"), std::string::npos);
    }
  }
  EXPECT_TRUE(retries);
  EXPECT_NE(f->action.find("pid 4242"), std::string::npos);
}

TEST(AllocatorRules, NoRetriesNoPressure) {
  SignalSetBuilder b;
  healthy(b);
  pushed(b, "gpu_allocator_retries_total", "4242", flat(7));  // retried long ago, not since
  EXPECT_EQ(find(diagnose(b.build(), {}), "memory_pressure"), nullptr);
}

TEST(AllocatorRules, OomsAloneAreAssessed) {
  SignalSetBuilder b;
  const std::vector<LabelPair> gpu{{"gpu", "0"}, {"hostname", "n1"}};
  b.add("gpu_utilization_ratio", gpu, flat(0.95));
  pushed(b, "gpu_allocator_ooms_total", "4242", counter(1));
  const Report r = diagnose(b.build(), {});
  const Finding* f = find(r, "memory_pressure");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->evidence.at(0).signal, "allocator_ooms_per_second");
}

}  // namespace
}  // namespace gpulens::diagnose
