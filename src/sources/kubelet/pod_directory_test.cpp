// The device directory: replica ids fold into their device, shared devices
// have no sole owner, replace() swaps the whole view.
#include "sources/kubelet/pod_directory.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

DeviceOwner owner(std::string device, std::string pod, std::string container = "main") {
  return {"nvidia.com/gpu", device_key(device), "ml", std::move(pod), std::move(container)};
}

TEST(DeviceKey, FoldsReplicasAndKeepsEverythingElse) {
  EXPECT_EQ(device_key("GPU-8b22::3"), "GPU-8b22");
  EXPECT_EQ(device_key("GPU-8b22"), "GPU-8b22");
  EXPECT_EQ(device_key("MIG-4f1c"), "MIG-4f1c");
  EXPECT_EQ(device_key("nvidia0/gi1"), "nvidia0/gi1");
}

TEST(IsGpuResource, NvidiaGpuSharedAndMigOnly) {
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu"));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/gpu.shared"));
  EXPECT_TRUE(is_gpu_resource("nvidia.com/mig-1g.10gb"));
  EXPECT_FALSE(is_gpu_resource("nvidia.com/gpus"));
  EXPECT_FALSE(is_gpu_resource("example.com/fpga"));
  EXPECT_FALSE(is_gpu_resource("cpu"));
}

TEST(PodDirectory, SoleOwnerOnlyWhenOneContainerHoldsTheDevice) {
  PodDirectory dir;
  const uint64_t g0 = dir.generation();
  dir.replace({owner("GPU-a", "train-0"), owner("GPU-b::1", "infer-0"), owner("GPU-b::2", "infer-1"),
               owner("GPU-c::1", "batch-0"), owner("GPU-c::2", "batch-0")});
  EXPECT_GT(dir.generation(), g0);
  ASSERT_TRUE(dir.sole_owner("GPU-a"));
  EXPECT_EQ(dir.sole_owner("GPU-a")->pod, "train-0");
  EXPECT_FALSE(dir.sole_owner("GPU-b"));  // time-sliced between two pods
  EXPECT_EQ(dir.owners_of("GPU-b").size(), 2u);
  ASSERT_TRUE(dir.sole_owner("GPU-c"));   // two replicas, one container
  EXPECT_EQ(dir.sole_owner("GPU-c")->pod, "batch-0");
  EXPECT_FALSE(dir.sole_owner("GPU-free"));

  dir.replace({owner("GPU-b", "infer-0")});
  EXPECT_FALSE(dir.sole_owner("GPU-a"));  // the pod went away
  EXPECT_EQ(dir.sole_owner("GPU-b")->pod, "infer-0");
  EXPECT_EQ(dir.all().size(), 1u);
  dir.clear();
  EXPECT_TRUE(dir.all().empty());
}

}  // namespace
}  // namespace gpulens
