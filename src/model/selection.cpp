// Counters files (dcgm-exporter's CSV) and the named profiles.
#include "model/selection.h"

#include <algorithm>
#include <array>
#include <fstream>

namespace gpulens {
namespace {

using F = FieldId;

// Names dcgm-exporter's CSVs use that gpulens does not give: accepted, left
// out with a note, so that its own default-counters.csv loads unchanged.
constexpr std::string_view kNotGiven[] = {
    "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
    "DCGM_FI_DEV_POWER_VIOLATION",
    "DCGM_FI_DEV_THERMAL_VIOLATION",
    "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
    "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
    "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
    "DCGM_FI_DEV_RELIABILITY_VIOLATION",
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "DCGM_FI_DEV_RETIRED_SBE",
    "DCGM_FI_DEV_RETIRED_DBE",
    "DCGM_FI_DEV_RETIRED_PENDING",
    "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
    "DCGM_FI_NVML_VERSION",
    "DCGM_FI_DEV_BRAND",
    "DCGM_FI_DEV_SERIAL",
    "DCGM_FI_DEV_OEM_INFOROM_VER",
    "DCGM_FI_DEV_ECC_INFOROM_VER",
    "DCGM_FI_DEV_POWER_INFOROM_VER",
    "DCGM_FI_DEV_INFOROM_IMAGE_VER",
    "DCGM_FI_DEV_VBIOS_VERSION",
};

constexpr ExporterFamily kExpRows[] = {
    {"DCGM_EXP_XID_ERRORS_COUNT", F::kGpuXidErrorsRecent},
    {"DCGM_EXP_CLOCK_EVENTS_COUNT", F::kGpuClockEventsRecent},
    {"DCGM_EXP_GPU_HEALTH_STATUS", F::kGpuHealthStatus},
    {"DCGM_EXP_P2P_STATUS", F::kGpuP2pStatus},
};

// The article's eight series per GPU: its six gauges (SM occupancy, tensor
// activity, memory bandwidth, fragmentation, PCIe TX/RX utilisation) plus
// the tutorial's two alert signals (GPU utilisation, temperature).
constexpr F kMinimal[] = {
    F::kGpuSmOccupancy, F::kGpuTensorActive,  F::kGpuDramActive, F::kGpuMemoryFragmentation,
    F::kGpuPcieTxUtil,  F::kGpuPcieRxUtil,    F::kGpuUtilization, F::kGpuTemperature,
};

// What the diagnosis and the alert rules read, beyond minimal: every cause
// can be assessed, and every alert of `gpulens rules` has its series.
constexpr F kStandard[] = {
    F::kGpuSmActive,         F::kGpuGraphicsEngineActive, F::kGpuSmClock,         F::kGpuSmClockMax,
    F::kGpuMemoryTotal,      F::kGpuMemoryUsed,           F::kGpuMemoryFree,      F::kGpuPcieTxRate,
    F::kGpuPcieRxRate,       F::kGpuPciePeak,             F::kGpuPcieLinkGen,     F::kGpuPcieLinkGenMax,
    F::kGpuPcieLinkWidth,    F::kGpuPcieLinkWidthMax,     F::kGpuPcieLinkGenCalibrated,
    F::kGpuPcieLinkWidthCalibrated, F::kGpuNvlinkTxRate,  F::kGpuNvlinkRxRate,    F::kGpuNvlinkUtil,
    F::kGpuTopology,         F::kGpuNumaNode,             F::kGpuCpuAffinity,     F::kGpuPower,
    F::kGpuPowerLimit,       F::kGpuClockEventActive,     F::kGpuClockEventReasons, F::kGpuXidErrors,
    F::kGpuLastXid,          F::kGpuEccErrors,            F::kGpuRowRemapFailure, F::kGpuXidErrorsRecent,
    F::kGpuHealthStatus,     F::kGpuRecoveryAction,       F::kGpuRowRemapPending,  F::kGpuJobInfo,
};

constexpr std::array<std::string_view, 3> kProfiles = {"minimal", "standard", "full"};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Splits one CSV record (RFC 4180 quotes, no embedded newlines); false on an
// unterminated quote.
bool split_csv(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  std::string cur;
  size_t i = 0;
  while (true) {
    // Leading space before an opening quote is allowed, as dcgm-exporter trims.
    size_t j = i;
    while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
    if (j < line.size() && line[j] == '"') {
      cur.clear();
      for (j = j + 1;; ++j) {
        if (j >= line.size()) return false;
        if (line[j] == '"') {
          if (j + 1 < line.size() && line[j + 1] == '"') {
            cur += '"';
            ++j;
            continue;
          }
          break;
        }
        cur += line[j];
      }
      size_t k = j + 1;
      while (k < line.size() && line[k] != ',') ++k;
      if (!trim(line.substr(j + 1, k - j - 1)).empty()) return false;  // text after the closing quote
      out.emplace_back(trim(cur));
      if (k >= line.size()) return true;
      i = k + 1;
    } else {
      const size_t k = line.find(',', i);
      out.emplace_back(trim(line.substr(i, k == std::string_view::npos ? std::string_view::npos : k - i)));
      if (k == std::string_view::npos) return true;
      i = k + 1;
    }
  }
}

void select_row(FieldSelection& sel, const DcgmRow& row) {
  sel.fields.set(static_cast<size_t>(row.field));
  if (row.field2 != FieldId::kCount) sel.fields.set(static_cast<size_t>(row.field2));
}

FieldSelection with_always_on(std::string name) {
  FieldSelection sel;
  sel.name = std::move(name);
  for (const FieldDef& f : catalog()) {
    if (always_collected(f.id)) sel.fields.set(static_cast<size_t>(f.id));
  }
  return sel;
}

std::string where(std::string_view origin, size_t line) {
  return std::string(origin) + ":" + std::to_string(line) + ": ";
}

}  // namespace

bool always_collected(FieldId id) {
  const FieldDef& f = field(id);
  // Pushed allocator series exist only while a process pushes them; the push
  // receiver bounds them (push.*), not the profile.
  const bool pushed = id >= F::kGpuAllocatorAllocated && id <= F::kGpuAllocatorSnapshotDuration;
  return f.scope != Scope::kGpu || f.layer == Layer::kAgent || pushed || id == F::kGpuUp || id == F::kGpuInfo;
}

Result<FieldSelection> parse_collectors(std::string_view text, std::string_view origin) {
  if (text.size() > kMaxCollectorsBytes) {
    return invalid_argument(std::string(origin) + ": counters file larger than " +
                            std::to_string(kMaxCollectorsBytes) + " bytes");
  }
  FieldSelection sel = with_always_on(std::string(origin));
  sel.driver_label = false;
  sel.from_file = true;
  std::map<std::string, size_t, std::less<>> first_line;
  std::vector<std::string> cols;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    const std::string_view t = trim(line);
    if (t.empty() || t.front() == '#') continue;
    if (t.find('\0') != std::string_view::npos) return invalid_argument(where(origin, line_no) + "NUL byte");
    if (!split_csv(t, cols)) return invalid_argument(where(origin, line_no) + "unterminated or misplaced quote");
    if (cols.size() != 3) {
      return invalid_argument(where(origin, line_no) + "expected 3 fields (DCGM field, type, help), got " +
                              std::to_string(cols.size()));
    }
    const std::string& name = cols[0];
    const std::string& type = cols[1];
    if (type != "gauge" && type != "counter" && type != "histogram" && type != "summary" && type != "label") {
      return invalid_argument(where(origin, line_no) + "unknown type \"" + type + "\" for " + name +
                              " (gauge, counter, histogram, summary, label)");
    }
    if (auto [it, fresh] = first_line.emplace(name, line_no); !fresh) {
      return invalid_argument(where(origin, line_no) + name + " is listed twice (first on line " +
                              std::to_string(it->second) + ")");
    }
    const DcgmRow* row = find_dcgm_row(name);
    if (const auto exp = std::find_if(std::begin(kExpRows), std::end(kExpRows),
                                      [&](const ExporterFamily& r) { return r.name == name; });
        exp != std::end(kExpRows)) {
      sel.fields.set(static_cast<size_t>(exp->field));
      sel.notes.push_back(where(origin, line_no) + name + " is read from a scraped dcgm-exporter as " +
                          std::string(field(exp->field).name) + ", not exported under its DCGM name");
      continue;
    }
    if (row == nullptr) {
      bool known = false;
      for (std::string_view n : kNotGiven) known = known || n == name;
      if (!known) return invalid_argument(where(origin, line_no) + "unknown DCGM field \"" + name + "\"");
      sel.notes.push_back(where(origin, line_no) + name + " is not given by gpulens; left out");
      continue;
    }
    if ((type == "label") != (row->value == DcgmValue::kLabel)) {
      return invalid_argument(where(origin, line_no) + name + " is " +
                              (row->value == DcgmValue::kLabel ? "a string field: its type must be label"
                                                               : "a numeric field: label is for string fields"));
    }
    if (type == "histogram" || type == "summary") {
      return invalid_argument(where(origin, line_no) + name + ": gpulens gives one value per GPU, not a " + type +
                              " (use gauge or counter)");
    }
    select_row(sel, *row);
    if (row->value == DcgmValue::kLabel) {
      sel.driver_label = true;  // DCGM_FI_DRIVER_VERSION: kGpuInfo is always on
      sel.driver_row = name;    // or DCGM_FI_SYSTEM_DRIVER_VERSION (dcgm-exporter 4.9)
      continue;
    }
    sel.dcgm.emplace(name, DcgmPick{type == "counter" ? MetricType::kCounter : MetricType::kGauge, cols[2]});
  }
  return sel;
}

Result<FieldSelection> load_collectors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read counters file " + path);
  std::string text;
  text.resize(kMaxCollectorsBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_collectors(text, path);
}

std::span<const std::string_view> profile_names() { return kProfiles; }

Result<FieldSelection> profile(std::string_view name) {
  if (name != "minimal" && name != "standard" && name != "full") {
    return invalid_argument("unknown profile \"" + std::string(name) + "\" (minimal, standard, full)");
  }
  FieldSelection sel = with_always_on(std::string(name));
  if (name == "full") {
    sel.fields.set();
    sel.all_dcgm = true;
    return sel;
  }
  for (F f : kMinimal) sel.fields.set(static_cast<size_t>(f));
  if (name == "standard") {
    for (F f : kStandard) sel.fields.set(static_cast<size_t>(f));
  }
  // A DCGM name is exported when every field it reads is collected.
  for (const DcgmRow& row : dcgm_rows()) {
    if (row.value == DcgmValue::kLabel) continue;
    const bool both = sel.fields.test(static_cast<size_t>(row.field)) &&
                      (row.field2 == FieldId::kCount || sel.fields.test(static_cast<size_t>(row.field2)));
    if (both) sel.dcgm.emplace(std::string(row.name), DcgmPick{row.type, std::string(row.help)});
  }
  return sel;
}

std::span<const ExporterFamily> exporter_families() { return kExpRows; }

std::vector<std::string> exported_names(const FieldSelection& sel, bool native, bool dcgm, DcgmGeneration naming) {
  std::vector<std::string> out;
  if (native) {
    for (const FieldDef& f : catalog()) {
      if (!f.native || !sel.fields.test(static_cast<size_t>(f.id))) continue;
      out.emplace_back(f.name);
    }
  }
  if (dcgm) {
    for (const DcgmRow& row : dcgm_rows()) {
      if (row.value == DcgmValue::kLabel) continue;
      if (!sel.from_file && !dcgm_written(row, naming)) continue;
      if (sel.all_dcgm || sel.dcgm.contains(row.name)) out.emplace_back(row.name);
    }
  }
  return out;
}

}  // namespace gpulens
