// Field selection: which GPU fields the agent collects and exports.
//
// Two ways to choose, as dcgm-exporter users already do:
//   - a counters file in dcgm-exporter's CSV format (`--collectors FILE`):
//     one row per DCGM field, `name, type, help`, `#` comments, blank lines
//     skipped, every field space-trimmed, double quotes as in RFC 4180. The
//     listed DCGM names are exported under `--dcgm-names` with the file's
//     type and help (as dcgm-exporter exports its CSV), and the catalog
//     fields they read are the GPU fields collected;
//   - a named profile (`--profile`): `minimal` (the article's eight series
//     per GPU), `standard` (every signal the diagnosis and the alert rules
//     read), `full` (every field; the default).
// A selection restricts the GPU's device fields only: gpu_up and gpu_info
// (identity, the DCGM labels), pushed allocator series (bounded by push.*),
// host, serving and agent fields are always collected, and
// the sources still decide what a GPU can give.
//
// A name dcgm-exporter knows but gpulens cannot give (vGPU licence, clock
// violation times ...) is left out with a note, a DCGM_EXP_* row selects the
// gpulens field a scraped dcgm-exporter fills (with a note); an unknown name,
// a wrong type or a malformed row is an error naming file:line.
//
//   auto sel = parse_collectors(text, "counters.csv");
//   if (!sel) return sel.status();          // "counters.csv:4: unknown DCGM field ..."
//   registry.set_field_mask(sel->fields);
//
// Thread-safety: plain values; the functions are pure.
#pragma once

#include <bitset>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/catalog.h"
#include "util/status.h"

namespace gpulens {

using FieldMask = std::bitset<kFieldCount>;

// One exported DCGM name, with the type and help its CSV row gave.
struct DcgmPick {
  MetricType type = MetricType::kGauge;
  std::string help;
};
using DcgmPicks = std::map<std::string, DcgmPick, std::less<>>;

struct FieldSelection {
  std::string name;   // profile name, or the file it came from
  FieldMask fields;   // catalog fields collected (always-on fields included)
  // DCGM names exported under --dcgm-names; empty with all_dcgm: every row.
  DcgmPicks dcgm;
  bool all_dcgm = false;
  bool driver_label = true;        // the DCGM_FI_DRIVER_VERSION label row
  // A counters file: `dcgm` holds exactly its names, in whichever naming the
  // file uses (classic or dcgm-exporter 4.9's), exported as listed whatever
  // --dcgm-names says; `driver_row` is its label row's name. A profile
  // holds the rows of every naming: --dcgm-names picks one.
  bool from_file = false;
  std::string driver_row = "DCGM_FI_DRIVER_VERSION";
  std::vector<std::string> notes;  // rows left out, with their line
};

// Largest counters file accepted (dcgm-exporter's default is 4 KiB).
inline constexpr size_t kMaxCollectorsBytes = 1 << 20;

// Parses a counters file; `origin` names it in errors ("file:line: ...").
Result<FieldSelection> parse_collectors(std::string_view text, std::string_view origin);
// Reads and parses a counters file.
Result<FieldSelection> load_collectors(const std::string& path);

// The named profiles, in order of size.
std::span<const std::string_view> profile_names();
// A profile by name; an error lists the names.
Result<FieldSelection> profile(std::string_view name);

// Fields every selection keeps: gpu_up, gpu_info, the agent's own per-GPU
// series (findings, waste), pushed allocator series and every non-GPU field.
bool always_collected(FieldId id);

// dcgm-exporter's own families (DCGM_EXP_*): read from a scraped
// dcgm-exporter into these gpulens fields, never written back under their
// names (docs/scrape.md). A counters row names them; the alert rules for
// dcgm-exporter's names read them.
struct ExporterFamily {
  std::string_view name;  // "DCGM_EXP_GPU_HEALTH_STATUS"
  FieldId field;          // FieldId::kGpuHealthStatus
};
std::span<const ExporterFamily> exporter_families();

// The names a selection exports: native sample names of its fields (and,
// when dcgm is set, its DCGM names in `naming`, or the file's). For the
// alert rules and the docs.
std::vector<std::string> exported_names(const FieldSelection& sel, bool native, bool dcgm,
                                        DcgmGeneration naming = DcgmGeneration::kClassic);

}  // namespace gpulens
