// GPM two-snapshot sampling; see gpm.h.
#include "sources/nvml/gpm.h"

namespace gpulens {
namespace {

struct MetricDef {
  unsigned id;
  double scale;  // to catalog units
};

constexpr double kPercent = 0.01;
constexpr double kMiB = 1024.0 * 1024.0;
// Order of GpmMetric.
constexpr std::array<MetricDef, kGpmMetricCount> kMetrics{{
    {NVML_GPM_METRIC_GRAPHICS_UTIL, kPercent},
    {NVML_GPM_METRIC_SM_UTIL, kPercent},
    {NVML_GPM_METRIC_SM_OCCUPANCY, kPercent},
    {NVML_GPM_METRIC_ANY_TENSOR_UTIL, kPercent},
    {NVML_GPM_METRIC_DRAM_BW_UTIL, kPercent},
    {NVML_GPM_METRIC_FP64_UTIL, kPercent},
    {NVML_GPM_METRIC_FP32_UTIL, kPercent},
    {NVML_GPM_METRIC_FP16_UTIL, kPercent},
    {NVML_GPM_METRIC_PCIE_TX_PER_SEC, kMiB},
    {NVML_GPM_METRIC_PCIE_RX_PER_SEC, kMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, kMiB},
    {NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, kMiB},
}};

// The header states an internal refresh of 100 ms between usable snapshots.
constexpr int64_t kMinSpanMs = 100;

}  // namespace

GpmSampler::~GpmSampler() { close(); }

nvmlReturn_t GpmSampler::open(const NvmlApi& api, nvmlDevice_t dev) {
  if (!api.gpm_query_support || !api.gpm_sample_alloc || !api.gpm_sample_free || !api.gpm_sample_get ||
      !api.gpm_metrics_get) {
    return NVML_ERROR_FUNCTION_NOT_FOUND;
  }
  nvmlGpmSupport_t support{};
  support.version = NVML_GPM_SUPPORT_VERSION;  // raw 1, not size-encoded
  if (nvmlReturn_t rc = api.gpm_query_support(dev, &support); rc != NVML_SUCCESS) return rc;
  if (support.isSupportedDevice == 0) return NVML_ERROR_NOT_SUPPORTED;
  for (auto& b : buf_) {
    if (nvmlReturn_t rc = api.gpm_sample_alloc(&b); rc != NVML_SUCCESS) {
      b = nullptr;
      api_ = &api;
      close();
      return rc;
    }
  }
  api_ = &api;
  request_.version = NVML_GPM_METRICS_GET_VERSION;
  request_.numMetrics = static_cast<unsigned>(kMetrics.size());
  return NVML_SUCCESS;
}

void GpmSampler::close() {
  if (api_ == nullptr) return;
  for (auto& b : buf_) {
    if (b != nullptr) api_->gpm_sample_free(b);
    b = nullptr;
  }
  api_ = nullptr;
  newest_ = -1;
}

nvmlReturn_t GpmSampler::sample(nvmlDevice_t dev, int64_t now_ms, GpmValues& out) {
  out.valid.fill(false);
  if (api_ == nullptr) return NVML_ERROR_NOT_SUPPORTED;
  if (newest_ >= 0 && now_ms - newest_ms_ < kMinSpanMs) return NVML_SUCCESS;  // too soon: keep the old one
  const int next = newest_ < 0 ? 0 : 1 - newest_;
  if (nvmlReturn_t rc = api_->gpm_sample_get(dev, buf_[next]); rc != NVML_SUCCESS) {
    newest_ = -1;  // a failed snapshot breaks the pair
    return rc;
  }
  const int older = newest_;
  newest_ = next;
  newest_ms_ = now_ms;
  if (older < 0) return NVML_SUCCESS;  // primed; values from the next interval on
  request_.sample1 = buf_[older];
  request_.sample2 = buf_[next];
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    request_.metrics[i].metricId = kMetrics[i].id;
    request_.metrics[i].nvmlReturn = NVML_ERROR_UNKNOWN;
  }
  if (nvmlReturn_t rc = api_->gpm_metrics_get(&request_); rc != NVML_SUCCESS) return rc;
  for (size_t i = 0; i < kMetrics.size(); ++i) {
    const nvmlGpmMetric_t& m = request_.metrics[i];
    if (m.nvmlReturn == NVML_SUCCESS && m.value == m.value) {  // NaN is "no value"
      out.value[i] = m.value * kMetrics[i].scale;
      out.valid[i] = true;
    }
  }
  return NVML_SUCCESS;
}

}  // namespace gpulens
