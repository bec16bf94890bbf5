// Datasheet values (NVIDIA product pages; NVLink per reference tables).
#include "sources/sim/models.h"

#include <array>

namespace gpulens::sim {
namespace {
constexpr std::array kModels{
    GpuModel{"h100-sxm", "NVIDIA H100 80GB HBM3", 81559, 1980, 2619, 700, 70, 5, 16, 18, 25},
    GpuModel{"h200-sxm", "NVIDIA H200", 143771, 1980, 3201, 700, 75, 5, 16, 18, 25},
    GpuModel{"a100-sxm", "NVIDIA A100-SXM4-80GB", 81920, 1410, 1593, 400, 55, 4, 16, 12, 25},
    GpuModel{"l40s", "NVIDIA L40S", 46068, 2520, 9001, 350, 35, 4, 16, 0, 0},
};
}  // namespace

std::span<const GpuModel> gpu_models() { return kModels; }

std::optional<GpuModel> find_gpu_model(std::string_view key) {
  for (const auto& m : kModels) {
    if (m.key == key) return m;
  }
  return std::nullopt;
}

}  // namespace gpulens::sim
