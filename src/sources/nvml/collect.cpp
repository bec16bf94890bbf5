// Per-GPU open and collection of the core fields; see gpu.h.
#include <array>
#include <cmath>
#include <cstring>
#include <tuple>

#include "sources/nvml/gpu.h"


namespace gpulens {
namespace {

using F = FieldId;

// Cumulative time in a reason, ns (field ids, driver 12.9+).
// Label sets built once, at start: a set() passes the same one every time.
const std::array<std::pair<unsigned, Labels>, 5> kReasonTimes{{
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP, Labels{{"reason", "sw_power_cap"}}},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST, Labels{{"reason", "sync_boost"}}},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN, Labels{{"reason", "sw_thermal"}}},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN, Labels{{"reason", "hw_thermal"}}},
    {NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, Labels{{"reason", "hw_power_brake"}}},
}};
const Labels kNvmlEccCorrected{{"type", "corrected"}}, kNvmlEccUncorrected{{"type", "uncorrected"}};
const Labels kNvmlRemapCorrectable{{"cause", "correctable"}}, kNvmlRemapUncorrectable{{"cause", "uncorrectable"}};
const Labels kNvmlRepairChannel{{"repair", "channel"}}, kNvmlRepairTpc{{"repair", "tpc"}};

// NVLink5 recovery counts (fields 213-215): by outcome, then every event ("").
const std::array<std::pair<unsigned, Labels>, 3> kLinkRecoveries{{
    {NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS, Labels{{"result", "successful"}}},
    {NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS, Labels{{"result", "failed"}}},
    {NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS, Labels{}},
}};

double field_number(const nvmlFieldValue_t& v) {
  switch (v.valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return v.value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.value.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.value.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.value.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return v.value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.value.usVal;
    default: return std::nan("");
  }
}

bool gone(nvmlReturn_t rc) { return rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_RESET_REQUIRED; }

std::string read_string(const NvmlApi& api, nvmlReturn_t (*fn)(nvmlDevice_t, char*, unsigned), nvmlDevice_t dev,
                        nvmlReturn_t& rc) {
  char buf[96] = {};
  rc = fn != nullptr ? fn(dev, buf, sizeof buf) : NVML_ERROR_FUNCTION_NOT_FOUND;
  (void)api;
  return rc == NVML_SUCCESS ? std::string(buf) : std::string();
}

// One collection's bookkeeping: which calls may run, and whether the GPU
// was lost on the way.
struct Pass {
  GpuState& gpu;
  bool lost = false;
  bool may(Probe p, const void* fn) const { return !lost && fn != nullptr && !gpu.off.test(static_cast<size_t>(p)); }
  bool ok(Probe p, nvmlReturn_t rc) {
    if (rc == NVML_SUCCESS) return true;
    if (gone(rc)) lost = true;
    else if (unsupported(rc)) gpu.off.set(static_cast<size_t>(p));
    return false;
  }
};

}  // namespace

bool open_gpu(const NvmlApi& api, unsigned index, const std::string& driver, const PcieCalibration* cal,
              GpuState& gpu, std::string& why) {
  gpu.index = static_cast<int>(index);
  if (nvmlReturn_t rc = api.get_handle_by_index(index, &gpu.dev); rc != NVML_SUCCESS) {
    why = "cannot open GPU " + std::to_string(index) + ": " + std::string(NvmlApi::error_name(rc));
    return false;
  }
  nvmlReturn_t rc = NVML_SUCCESS;
  gpu.uuid = read_string(api, api.get_uuid, gpu.dev, rc);
  if (rc != NVML_SUCCESS) {
    why = "cannot read the UUID of GPU " + std::to_string(index) + ": " + std::string(NvmlApi::error_name(rc));
    return false;
  }
  gpu.name = read_string(api, api.get_name, gpu.dev, rc);
  gpu.serial = read_string(api, api.get_serial, gpu.dev, rc);
  if (api.get_pci_info != nullptr) {
    nvmlPciInfo_t pci{};
    if (api.get_pci_info(gpu.dev, &pci) == NVML_SUCCESS) gpu.pci_bus_id = std::string(pci.busId, strnlen(pci.busId, 32));
  }
  if (api.get_architecture != nullptr) api.get_architecture(gpu.dev, &gpu.arch);
  if (unsigned minor = 0; api.get_minor_number != nullptr && api.get_minor_number(gpu.dev, &minor) == NVML_SUCCESS) {
    gpu.minor = static_cast<int>(minor);
  }
  gpu.info_extra = Labels{{"model", gpu.name}, {"pci_bus_id", gpu.pci_bus_id}, {"driver", driver}, {"serial", gpu.serial}};

  unsigned long long mask = 0x1FF;
  if (api.get_supported_clock_events != nullptr) api.get_supported_clock_events(gpu.dev, &mask);
  for (const ClockReason& r : clock_reasons()) {
    if ((mask & r.bit) != 0) gpu.reasons.emplace_back(r.bit, Labels{{"reason", r.label}});
  }
  if (api.get_pcie_gen_max != nullptr) api.get_pcie_gen_max(gpu.dev, &gpu.gen_max);
  if (api.get_max_clock != nullptr) {
    api.get_max_clock(gpu.dev, NVML_CLOCK_SM, &gpu.sm_clock_max);
    api.get_max_clock(gpu.dev, NVML_CLOCK_MEM, &gpu.mem_clock_max);
  }
  if (api.get_pcie_width_max != nullptr) api.get_pcie_width_max(gpu.dev, &gpu.width_max);
  gpu.peak = choose_pcie_peak(cal, gpu.uuid, gpu.name, gpu.gen_max, gpu.width_max);
  if (const PcieCalibration::Entry* e = cal != nullptr ? cal->find(gpu.uuid, gpu.name) : nullptr) {
    gpu.cal_gen = e->link_gen;
    gpu.cal_width = e->link_width;
  }
  if (gpu.peak.rx > 0) {
    gpu.peak_rx_extra = Labels{{"basis", gpu.peak.basis}, {"direction", "rx"}};
    gpu.peak_tx_extra = Labels{{"basis", gpu.peak.basis}, {"direction", "tx"}};
  }

  // NVLink: which links exist, and their speed (MBps per direction).
  if (api.get_nvlink_state != nullptr) {
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      unsigned active = 0;
      nvmlReturn_t lrc = api.get_nvlink_state(gpu.dev, link, &active);
      if (lrc != NVML_SUCCESS) {
        if (link == 0 && unsupported(lrc)) break;  // no NVLink on this GPU
        continue;
      }
      NvLink l;
      l.id = link;
      l.extra = Labels{{"link", std::to_string(link)}};
      l.up = active == NVML_FEATURE_ENABLED;
      if (api.get_field_values != nullptr) {
        nvmlFieldValue_t fv{};
        fv.fieldId = NVML_FI_DEV_NVLINK_GET_SPEED;
        fv.scopeId = link;
        if (api.get_field_values(gpu.dev, 1, &fv) == NVML_SUCCESS && fv.nvmlReturn == NVML_SUCCESS) {
          l.speed = field_number(fv) * 1e6;
        }
      }
      gpu.links.push_back(std::move(l));
    }
  }
  gpu.gpm_open_rc = gpu.gpm.open(api, gpu.dev);
  // Early R535 drivers wrote 32-byte elements for the _v3 process calls;
  // they are the ones with the confidential-computing call but without the
  // process detail list (the rule nvitop uses).
  gpu.proc_elem = api.probe_conf_compute_mem != nullptr && api.probe_process_detail_list == nullptr
                      ? sizeof(nvmlProcessDetail_v1_t)
                      : sizeof(nvmlProcessInfo_t);
  gpu.fields.reserve(8 + 2 * gpu.links.size());
  return true;
}

void collect_gpu(CollectContext& ctx, GpuState& gpu) {
  const NvmlApi& api = ctx.api;
  Frame& f = ctx.frame;
  const int g = gpu.index;
  const nvmlDevice_t dev = gpu.dev;
  const double dt = gpu.last_ms > 0 ? static_cast<double>(ctx.now_ms - gpu.last_ms) / 1000.0 : 0.0;
  Pass p{gpu};
  const bool slow = ctx.slow_interval_ms <= 0 || ctx.now_ms >= gpu.slow_next_ms;
  gpu.slow_now = slow;
  if (slow) {
    gpu.slow_values.clear();
    gpu.slow_last_ms = ctx.now_ms;
    gpu.slow_next_ms = ctx.now_ms + ctx.slow_interval_ms;
  }
  auto keep = [&] { gpu.slow_values.push_back(f.values().back()); };  // after a slow-tier set()

  f.set(F::kGpuInfo, g, gpu.info_extra, 1);
  if (p.may(Probe::kUtil, reinterpret_cast<const void*>(api.get_utilization))) {
    nvmlUtilization_t u{};
    if (p.ok(Probe::kUtil, api.get_utilization(dev, &u))) {
      f.set(F::kGpuUtilization, g, u.gpu / 100.0);
      f.set(F::kGpuMemoryUtil, g, u.memory / 100.0);
    }
  }
  // Video engines: percent over the driver's sampling period.
  for (const auto& [probe, fn, field] : {std::tuple{Probe::kEncoder, api.get_encoder_util, F::kGpuEncoderUtil},
                                         std::tuple{Probe::kDecoder, api.get_decoder_util, F::kGpuDecoderUtil}}) {
    unsigned util = 0, period_us = 0;
    if (p.may(probe, reinterpret_cast<const void*>(fn)) && p.ok(probe, fn(dev, &util, &period_us))) {
      f.set(field, g, util / 100.0);
    }
  }
  // Memory: v2 (with reserved), falling back to v1 where v2 is missing.
  bool have_mem = false;
  if (p.may(Probe::kMemV2, reinterpret_cast<const void*>(api.get_memory_v2))) {
    nvmlMemory_v2_t m{};
    m.version = nvmlMemory_v2;
    nvmlReturn_t rc = api.get_memory_v2(dev, &m);
    if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) gpu.off.set(static_cast<size_t>(Probe::kMemV2));
    if (p.ok(Probe::kMemV2, rc)) {
      have_mem = true;
      f.set(F::kGpuMemoryTotal, g, static_cast<double>(m.total));
      f.set(F::kGpuMemoryUsed, g, static_cast<double>(m.used));
      f.set(F::kGpuMemoryFree, g, static_cast<double>(m.free));
      f.set(F::kGpuMemoryReserved, g, static_cast<double>(m.reserved));
    }
  }
  if (!have_mem && (api.get_memory_v2 == nullptr || gpu.off.test(static_cast<size_t>(Probe::kMemV2))) &&
      p.may(Probe::kMemV1, reinterpret_cast<const void*>(api.get_memory_v1))) {
    nvmlMemory_t m{};
    if (p.ok(Probe::kMemV1, api.get_memory_v1(dev, &m))) {
      f.set(F::kGpuMemoryTotal, g, static_cast<double>(m.total));
      f.set(F::kGpuMemoryUsed, g, static_cast<double>(m.used));  // v1: includes reserved
      f.set(F::kGpuMemoryFree, g, static_cast<double>(m.free));
    }
  }
  if (p.may(Probe::kTemp, reinterpret_cast<const void*>(api.get_temperature))) {
    unsigned t = 0;
    if (p.ok(Probe::kTemp, api.get_temperature(dev, NVML_TEMPERATURE_GPU, &t))) f.set(F::kGpuTemperature, g, t);
  }
  if (p.may(Probe::kPower, reinterpret_cast<const void*>(api.get_power_usage))) {
    unsigned mw = 0;
    if (p.ok(Probe::kPower, api.get_power_usage(dev, &mw))) f.set(F::kGpuPower, g, mw / 1000.0);
  }
  if (slow && p.may(Probe::kPowerLimit, reinterpret_cast<const void*>(api.get_power_limit))) {
    unsigned mw = 0;
    if (p.ok(Probe::kPowerLimit, api.get_power_limit(dev, &mw))) {
      f.set(F::kGpuPowerLimit, g, mw / 1000.0);
      keep();
    }
  }
  // Energy: ~4.5 ms per call on an H200 (R580), the costliest read.
  if (slow && p.may(Probe::kEnergy, reinterpret_cast<const void*>(api.get_energy))) {
    unsigned long long mj = 0;
    if (p.ok(Probe::kEnergy, api.get_energy(dev, &mj))) {
      f.set(F::kGpuEnergy, g, static_cast<double>(mj) / 1000.0);
      keep();
    }
  }
  struct ClockRead {
    Probe probe;
    decltype(api.get_clock) fn;
    unsigned type;
    FieldId field;
  };
  for (const ClockRead& c : {ClockRead{Probe::kSmClock, api.get_clock, NVML_CLOCK_SM, F::kGpuSmClock},
                             ClockRead{Probe::kMemClock, api.get_clock, NVML_CLOCK_MEM, F::kGpuMemClock},
                             }) {
    if (!p.may(c.probe, reinterpret_cast<const void*>(c.fn))) continue;
    unsigned mhz = 0;
    if (p.ok(c.probe, c.fn(dev, c.type, &mhz))) f.set(c.field, g, mhz * 1e6);
  }
  if (p.may(Probe::kClockEvents, reinterpret_cast<const void*>(api.get_clock_events))) {
    unsigned long long mask = 0;
    if (p.ok(Probe::kClockEvents, api.get_clock_events(dev, &mask))) {
      f.set(F::kGpuClockEventReasons, g, static_cast<double>(mask));
      for (const auto& [bit, extra] : gpu.reasons) f.set(F::kGpuClockEventActive, g, extra, (mask & bit) ? 1 : 0);
    }
  }
  if (!p.lost && gpu.sm_clock_max > 0) f.set(F::kGpuSmClockMax, g, gpu.sm_clock_max * 1e6);
  if (!p.lost && gpu.mem_clock_max > 0) f.set(F::kGpuMemClockMax, g, gpu.mem_clock_max * 1e6);
  // PCIe link state.
  if (p.may(Probe::kPcieGen, reinterpret_cast<const void*>(api.get_pcie_gen))) {
    unsigned v = 0;
    if (p.ok(Probe::kPcieGen, api.get_pcie_gen(dev, &v))) f.set(F::kGpuPcieLinkGen, g, v);
  }
  if (p.may(Probe::kPcieWidth, reinterpret_cast<const void*>(api.get_pcie_width))) {
    unsigned v = 0;
    if (p.ok(Probe::kPcieWidth, api.get_pcie_width(dev, &v))) f.set(F::kGpuPcieLinkWidth, g, v);
  }
  if (!p.lost && gpu.gen_max > 0) f.set(F::kGpuPcieLinkGenMax, g, gpu.gen_max);
  if (!p.lost && gpu.width_max > 0) f.set(F::kGpuPcieLinkWidthMax, g, gpu.width_max);
  if (slow && p.may(Probe::kReplays, reinterpret_cast<const void*>(api.get_pcie_replays))) {
    unsigned v = 0;
    if (p.ok(Probe::kReplays, api.get_pcie_replays(dev, &v))) {
      f.set(F::kGpuPcieReplays, g, v);
      keep();
    }
  }
  if (slow && p.may(Probe::kEcc, reinterpret_cast<const void*>(api.get_ecc_errors))) {
    unsigned long long c = 0, u = 0;
    if (p.ok(Probe::kEcc, api.get_ecc_errors(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c)) &&
        p.ok(Probe::kEcc, api.get_ecc_errors(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &u))) {
      f.set(F::kGpuEccErrors, g, kNvmlEccCorrected, static_cast<double>(c));
      keep();
      f.set(F::kGpuEccErrors, g, kNvmlEccUncorrected, static_cast<double>(u));
      keep();
    }
  }
  if (slow && p.may(Probe::kRemap, reinterpret_cast<const void*>(api.get_remapped_rows))) {
    unsigned cor = 0, unc = 0, pending = 0, failed = 0;
    if (p.ok(Probe::kRemap, api.get_remapped_rows(dev, &cor, &unc, &pending, &failed))) {
      f.set(F::kGpuRemappedRows, g, kNvmlRemapCorrectable, cor);
      keep();
      f.set(F::kGpuRemappedRows, g, kNvmlRemapUncorrectable, unc);
      keep();
      f.set(F::kGpuRowRemapFailure, g, failed != 0 ? 1 : 0);
      keep();
      f.set(F::kGpuRowRemapPending, g, pending != 0 ? 1 : 0);
      keep();
    }
  }
  if (slow && p.may(Probe::kRepairStatus, reinterpret_cast<const void*>(api.get_repair_status))) {
    nvmlRepairStatus_v1_t rs{};
    rs.version = nvmlRepairStatus_v1;
    const nvmlReturn_t rc = api.get_repair_status(dev, &rs);
    if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) gpu.off.set(static_cast<size_t>(Probe::kRepairStatus));
    if (p.ok(Probe::kRepairStatus, rc)) {
      f.set(F::kGpuRepairPending, g, kNvmlRepairChannel, rs.bChannelRepairPending != 0 ? 1 : 0);
      keep();
      f.set(F::kGpuRepairPending, g, kNvmlRepairTpc, rs.bTpcRepairPending != 0 ? 1 : 0);
      keep();
    }
  }
  if (p.may(Probe::kPstate, reinterpret_cast<const void*>(api.get_pstate))) {
    unsigned ps = 0;
    if (p.ok(Probe::kPstate, api.get_pstate(dev, &ps)) && ps <= 15) f.set(F::kGpuPstate, g, ps);
  }
  for (NvLink& l : gpu.links) {
    if (p.lost || !slow) break;
    unsigned active = 0;
    nvmlReturn_t rc = api.get_nvlink_state(dev, l.id, &active);
    if (gone(rc)) p.lost = true;
    if (rc != NVML_SUCCESS) continue;
    l.up = active == NVML_FEATURE_ENABLED;
    f.set(F::kGpuNvlinkLinkUp, g, l.extra, l.up ? 1 : 0);
    keep();
  }
  if (!slow && !p.lost) {
    for (const Frame::Value& v : gpu.slow_values) f.set_slot(v.slot, v.value);
  }

  // One field-values call for everything served that way.
  double pcie_tx_rate = -1, pcie_rx_rate = -1, nvl_tx_rate = -1, nvl_rx_rate = -1;
  if (!p.lost && api.get_field_values != nullptr) {
    auto& req = gpu.fields;
    req.clear();
    auto ask = [&](unsigned id, unsigned scope) {
      nvmlFieldValue_t v{};
      v.fieldId = id;
      v.scopeId = scope;
      req.push_back(v);
    };
    const bool mem_temp = !gpu.off.test(static_cast<size_t>(Probe::kMemTemp));
    // Clock-event time counters: 0.9 ms per call on an H200: slow tier.
    const bool times = slow && !gpu.off.test(static_cast<size_t>(Probe::kClockEventTime));
    const bool pcie = !gpu.off.test(static_cast<size_t>(Probe::kPcieCounters));
    const bool nvl = !gpu.off.test(static_cast<size_t>(Probe::kNvlinkBytes)) && !gpu.links.empty();
    if (mem_temp) ask(NVML_FI_DEV_MEMORY_TEMP, 0);
    if (times) for (const auto& [id, extra] : kReasonTimes) ask(id, 0);
    if (pcie) {
      ask(NVML_FI_DEV_PCIE_COUNT_TX_BYTES, 0);
      ask(NVML_FI_DEV_PCIE_COUNT_RX_BYTES, 0);
    }
    if (nvl) {
      for (const NvLink& l : gpu.links) {
        ask(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, l.id);
        ask(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, l.id);
      }
    }
    // Every collection: an alert on it should not wait for the slow tier.
    const bool recovery = !gpu.off.test(static_cast<size_t>(Probe::kRecoveryAction));
    if (recovery) ask(NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, 0);
    // NVLink5 recovery counts, summed over the links: slow tier, as the other error counters.
    const bool link_recovery = slow && !gpu.links.empty() && !gpu.off.test(static_cast<size_t>(Probe::kNvlinkRecovery));
    if (link_recovery) {
      for (const auto& [id, extra] : kLinkRecoveries) ask(id, NVML_SCOPE_ALL_LINKS);
    }
    nvmlReturn_t rc = req.empty() ? NVML_SUCCESS : api.get_field_values(dev, static_cast<int>(req.size()), req.data());
    if (gone(rc)) p.lost = true;
    if (rc == NVML_SUCCESS && !req.empty()) {
      size_t i = 0;
      auto good = [&](size_t k) { return req[k].nvmlReturn == NVML_SUCCESS; };
      if (mem_temp) {
        if (good(i)) f.set(F::kGpuMemoryTemperature, g, field_number(req[i]));
        else if (unsupported(req[i].nvmlReturn)) gpu.off.set(static_cast<size_t>(Probe::kMemTemp));
        ++i;
      }
      if (times) {
        bool any = false;
        for (const auto& [id, extra] : kReasonTimes) {
          if (good(i)) {
            f.set(F::kGpuClockEventSeconds, g, extra, field_number(req[i]) / 1e9);
            keep();
            any = true;
          } else if (!unsupported(req[i].nvmlReturn)) {
            any = true;  // a transient failure: ask again next time
          }
          ++i;
        }
        if (!any) gpu.off.set(static_cast<size_t>(Probe::kClockEventTime));
      }
      if (pcie) {
        if (good(i) && good(i + 1)) {
          const double tx = field_number(req[i]), rx = field_number(req[i + 1]);
          // The counters may wrap: a step backwards restarts the delta.
          if (gpu.pcie_tx_counter >= 0 && dt > 0 && tx >= gpu.pcie_tx_counter && rx >= gpu.pcie_rx_counter) {
            pcie_tx_rate = (tx - gpu.pcie_tx_counter) / dt;
            pcie_rx_rate = (rx - gpu.pcie_rx_counter) / dt;
          }
          gpu.pcie_tx_counter = tx;
          gpu.pcie_rx_counter = rx;
        } else if (unsupported(req[i].nvmlReturn) || unsupported(req[i + 1].nvmlReturn)) {
          gpu.off.set(static_cast<size_t>(Probe::kPcieCounters));
        }
        i += 2;
      }
      if (nvl) {
        bool any = false;
        double tx_sum = 0, rx_sum = 0;
        bool rates = dt > 0;
        for (NvLink& l : gpu.links) {
          if (good(i) && good(i + 1)) {
            any = true;
            const double tx = field_number(req[i]) * 1024.0, rx = field_number(req[i + 1]) * 1024.0;  // KiB
            f.set(F::kGpuNvlinkTxBytes, g, l.extra, tx);
            f.set(F::kGpuNvlinkRxBytes, g, l.extra, rx);
            if (l.have_bytes && tx >= l.tx && rx >= l.rx) {
              tx_sum += tx - l.tx;
              rx_sum += rx - l.rx;
            } else {
              rates = false;
            }
            l.tx = tx;
            l.rx = rx;
            l.have_bytes = true;
          } else if (!unsupported(req[i].nvmlReturn)) {
            any = true;
          }
          i += 2;
        }
        if (!any) gpu.off.set(static_cast<size_t>(Probe::kNvlinkBytes));
        if (any && rates) {
          nvl_tx_rate = tx_sum / dt;
          nvl_rx_rate = rx_sum / dt;
        }
      }
      if (recovery) {
        // A driver older than the field answers an error for it: absent from then on.
        if (good(i)) f.set(F::kGpuRecoveryAction, g, field_number(req[i]));
        else if (unsupported(req[i].nvmlReturn) || req[i].nvmlReturn == NVML_ERROR_INVALID_ARGUMENT) {
          gpu.off.set(static_cast<size_t>(Probe::kRecoveryAction));
        }
        ++i;
      }
      if (link_recovery) {
        bool any = false;
        for (const auto& [id, extra] : kLinkRecoveries) {
          if (good(i)) {
            const double n = field_number(req[i]);
            if (extra.empty()) f.set(F::kGpuNvlinkRecoveryEvents, g, n);
            else f.set(F::kGpuNvlinkRecoveries, g, extra, n);
            keep();
            any = true;
          } else if (!unsupported(req[i].nvmlReturn) && req[i].nvmlReturn != NVML_ERROR_INVALID_ARGUMENT) {
            any = true;  // a transient failure: ask again next time
          }
          ++i;
        }
        // Before NVLink5 or on a driver older than the fields: absent from then on.
        if (!any) gpu.off.set(static_cast<size_t>(Probe::kNvlinkRecovery));
      }
    }
  }

  // GPM (Hopper+): profiling-grade activity and link rates.
  if (!p.lost && gpu.gpm.active()) {
    GpmValues v;
    nvmlReturn_t rc = gpu.gpm.sample(dev, ctx.now_ms, v);
    if (gone(rc)) {
      p.lost = true;
    } else if (rc == NVML_ERROR_NO_PERMISSION) {
      ctx.warn("GPM on GPU " + std::to_string(g) + " (" + gpu.uuid +
               ") returned NVML_ERROR_NO_PERMISSION: SM active/occupancy, tensor, DRAM and GPM link rates are "
               "off for this GPU; run the agent privileged (e.g. securityContext.privileged: true, or as root on "
               "the host) to enable them");
      gpu.gpm.close();
    } else if (rc == NVML_SUCCESS) {
      struct Map {
        GpmMetric m;
        FieldId f;
      };
      for (const Map& m : {Map{GpmMetric::kGraphics, F::kGpuGraphicsEngineActive}, Map{GpmMetric::kSmActive, F::kGpuSmActive},
                           Map{GpmMetric::kSmOccupancy, F::kGpuSmOccupancy}, Map{GpmMetric::kTensor, F::kGpuTensorActive},
                           Map{GpmMetric::kDram, F::kGpuDramActive}, Map{GpmMetric::kFp64, F::kGpuFp64Active},
                           Map{GpmMetric::kFp32, F::kGpuFp32Active}, Map{GpmMetric::kFp16, F::kGpuFp16Active}}) {
        if (v.has(m.m)) f.set(m.f, g, v.get(m.m));
      }
      if (v.has(GpmMetric::kPcieTx) && v.has(GpmMetric::kPcieRx)) {
        pcie_tx_rate = v.get(GpmMetric::kPcieTx);
        pcie_rx_rate = v.get(GpmMetric::kPcieRx);
      }
      if (v.has(GpmMetric::kNvlinkTx) && v.has(GpmMetric::kNvlinkRx) && !gpu.links.empty()) {
        nvl_tx_rate = v.get(GpmMetric::kNvlinkTx);
        nvl_rx_rate = v.get(GpmMetric::kNvlinkRx);
      }
    }
  }
  // Last resort for PCIe rates: the 20 ms KB/s window of nvmlDeviceGetPcieThroughput.
  if (!p.lost && pcie_tx_rate < 0 && !gpu.gpm.active() && gpu.off.test(static_cast<size_t>(Probe::kPcieCounters)) &&
      p.may(Probe::kPcieThroughput, reinterpret_cast<const void*>(api.get_pcie_throughput))) {
    unsigned tx = 0, rx = 0;
    if (p.ok(Probe::kPcieThroughput, api.get_pcie_throughput(dev, NVML_PCIE_UTIL_TX_BYTES, &tx)) &&
        p.ok(Probe::kPcieThroughput, api.get_pcie_throughput(dev, NVML_PCIE_UTIL_RX_BYTES, &rx))) {
      pcie_tx_rate = tx * 1024.0;
      pcie_rx_rate = rx * 1024.0;
    }
  }
  if (!p.lost && pcie_tx_rate >= 0) {
    gpu.pcie_tx_total += pcie_tx_rate * dt;
    gpu.pcie_rx_total += pcie_rx_rate * dt;
    f.set(F::kGpuPcieTxRate, g, pcie_tx_rate);
    f.set(F::kGpuPcieRxRate, g, pcie_rx_rate);
    f.set(F::kGpuPcieTxBytes, g, gpu.pcie_tx_total);
    f.set(F::kGpuPcieRxBytes, g, gpu.pcie_rx_total);
    if (gpu.peak.tx > 0) f.set(F::kGpuPcieTxUtil, g, pcie_tx_rate / gpu.peak.tx);
    if (gpu.peak.rx > 0) f.set(F::kGpuPcieRxUtil, g, pcie_rx_rate / gpu.peak.rx);
  }
  if (!p.lost && gpu.peak.rx > 0) {
    f.set(F::kGpuPciePeak, g, gpu.peak_rx_extra, gpu.peak.rx);
    f.set(F::kGpuPciePeak, g, gpu.peak_tx_extra, gpu.peak.tx);
  }
  if (!p.lost && gpu.cal_gen > 0) f.set(F::kGpuPcieLinkGenCalibrated, g, gpu.cal_gen);
  if (!p.lost && gpu.cal_width > 0) f.set(F::kGpuPcieLinkWidthCalibrated, g, gpu.cal_width);
  if (!p.lost && nvl_tx_rate >= 0) {
    f.set(F::kGpuNvlinkTxRate, g, nvl_tx_rate);
    f.set(F::kGpuNvlinkRxRate, g, nvl_rx_rate);
    double peak = 0;
    for (const NvLink& l : gpu.links) peak += l.up ? l.speed : 0;
    if (peak > 0) f.set(F::kGpuNvlinkUtil, g, std::max(nvl_tx_rate, nvl_rx_rate) / peak);
  }
  gpu.lost = p.lost;
  gpu.last_ms = ctx.now_ms;
  f.set(F::kGpuUp, g, p.lost ? 0 : 1);
}

}  // namespace gpulens
