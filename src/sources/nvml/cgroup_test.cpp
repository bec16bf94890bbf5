// PID -> pod mapping from real-shaped /proc/PID/cgroup files
// (tests/data/cgroup), the procfs helpers, and the identity cache.
#include "sources/nvml/cgroup.h"

#include <gtest/gtest.h>

#include "sources/nvml/process_cache.h"

namespace gpulens {
namespace {

const std::string kData = std::string(GPULENS_SOURCE_DIR) + "/tests/data/";
const std::string kUid = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b";
const std::string kCid = "3f2a9c1b7d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8";

std::optional<CgroupRef> parse_fixture(const std::string& name) {
  std::string text;
  EXPECT_TRUE(read_small_file(kData + "cgroup/" + name, text)) << name;
  return parse_cgroup(text);
}

struct Case {
  const char* file;
  bool pod;
  const char* runtime;
};

class CgroupFixture : public ::testing::TestWithParam<Case> {};

TEST_P(CgroupFixture, FindsPodAndContainer) {
  const Case& c = GetParam();
  auto ref = parse_fixture(c.file);
  ASSERT_TRUE(ref.has_value()) << c.file;
  EXPECT_EQ(ref->pod_uid, c.pod ? kUid : "") << c.file;
  EXPECT_EQ(ref->container_id, kCid) << c.file;
  EXPECT_EQ(ref->runtime, c.runtime) << c.file;
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, CgroupFixture,
    ::testing::Values(Case{"v2-systemd-containerd.txt", true, "containerd"},
                      Case{"v2-systemd-crio.txt", true, "crio"},
                      Case{"v2-systemd-guaranteed-cri-dockerd.txt", true, "docker"},
                      Case{"v2-private-cgroupns.txt", true, "containerd"},
                      Case{"v1-cgroupfs-containerd.txt", true, ""},
                      Case{"v1-cgroupfs-crio.txt", true, "crio"},
                      Case{"hybrid-systemd-containerd.txt", true, "containerd"},
                      Case{"v2-misconfigured-driver.txt", true, "containerd"},
                      Case{"v2-plain-docker.txt", false, "docker"},
                      Case{"v1-plain-docker.txt", false, "docker"}));

TEST(Cgroup, HostProcessHasNoContainer) {
  EXPECT_FALSE(parse_fixture("v2-host-process.txt").has_value());
  EXPECT_FALSE(parse_fixture("empty.txt").has_value());
  EXPECT_FALSE(parse_cgroup("garbage without colons\n").has_value());
}

TEST(Cgroup, RejectsAlmostUids) {
  // 11 hex digits in the last group, and a 63-digit container id.
  auto ref = parse_cgroup("0::/kubepods/pod0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5/" + kCid.substr(1) + "\n");
  EXPECT_FALSE(ref.has_value());
}

TEST(ProcStatus, ParsesAllowedLists) {
  auto a = parse_proc_status("Name:\tx\nCpus_allowed_list:\t0-15,32-47\nMems_allowed_list:\t0-1\n");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->cpus, "0-15,32-47");
  EXPECT_EQ(a->mems, "0-1");
  EXPECT_FALSE(parse_proc_status("Name:\tx\n").has_value());
}

TEST(ProcStat, StartTimeSurvivesOddCommandNames) {
  EXPECT_EQ(parse_start_time("12 (a) b) c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 424242 99\n"), 424242u);
  EXPECT_FALSE(parse_start_time("12 (short) S 1 2\n").has_value());
  EXPECT_FALSE(parse_start_time("no parens").has_value());
}

TEST(MaskToList, Ranges) {
  unsigned long m[2] = {0xF0F1UL, 0x1UL};
  EXPECT_EQ(mask_to_list(m, 2), "0,4-7,12-15,64");
  unsigned long z[1] = {0};
  EXPECT_EQ(mask_to_list(z, 1), "");
}

TEST(ProcessCache, ResolvesPodNamesOnceAndFallsBack) {
  ProcessCache cache(kData + "nvml/proc", kData + "nvml/kubelet");
  ProcessIdentity* p = cache.lookup(4242);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->labels.render(), "container=\"trainer\",namespace=\"ml-team\",pid=\"4242\",pod=\"trainer-0\"");
  EXPECT_EQ(p->cpus, "0-15");
  EXPECT_EQ(p->affinity_for(3).render(), "cpus=\"0-15\",gpu=\"3\",numa_nodes=\"0\",pid=\"4242\"");
  cache.sweep();
  ASSERT_NE(cache.lookup(4242), nullptr);
  EXPECT_EQ(cache.resolutions(), 1u);  // cached by (pid, start time)

  ProcessCache bare(kData + "nvml/proc", "");
  EXPECT_EQ(bare.lookup(4242)->labels.render(),
            "container=\"3f2a9c1b7d4e\",namespace=\"\",pid=\"4242\",pod=\"" + kUid + "\"");
  EXPECT_EQ(bare.lookup(4243)->labels.render(), "container=\"\",namespace=\"\",pid=\"4243\",pod=\"\"");
  EXPECT_EQ(bare.lookup(99999), nullptr);  // gone
  bare.sweep();
  bare.sweep();
  EXPECT_EQ(bare.size(), 0u);  // forgotten once no longer seen
}

}  // namespace
}  // namespace gpulens
