// Exposition: renders the live values in Prometheus text 0.0.4 or
// OpenMetrics 1.0, optionally with dcgm-exporter's DCGM_FI_* names beside the
// native ones.
//
// DCGM names follow dcgm-exporter exactly: the names, types and help of
// dcgm_rows(), one series per GPU with the registry's dcgm_labels(), integer
// fields as integers and double fields with six decimals, HELP before TYPE,
// DCGM_FI_DEV_XID_ERRORS 0 on a GPU without an XID, with dcgm-exporter's
// err_code and err_msg labels. A GPU with MIG instances (gpu_mig_info) is
// replaced by one series per GPU instance, labelled GPU_I_PROFILE and
// GPU_I_ID after modelName (the parent's gpu, UUID, device kept): the
// instance's own memory and engine activity, the parent's device-wide values
// (clocks, temperatures, power, errors), none of the rest. They come after
// every native family.
//
// Families come out in catalog order, each with HELP and TYPE, series in
// creation order. Every label set was rendered once when the series was
// created, values are printed with std::to_chars, and the output buffer is
// reused: in steady state a render allocates nothing.
//
//   Renderer r;
//   std::string_view body = r.render(registry, live, {.format = Format::kOpenMetrics});
//
// Thread-safety: a Renderer is used by one thread; render() takes the
// registry and live-store locks for its duration.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/selection.h"
#include "model/series.h"
#include "store/live.h"

namespace gpulens {

enum class Format { kText004, kOpenMetrics };

struct RenderOptions {
  Format format = Format::kText004;
  bool native_names = true;
  bool dcgm_names = false;
  // With dcgm_names: the generation of names written (classic: dcgm-exporter
  // up to 4.8; kDcgm49: 4.9's), unless dcgm_rows comes from a counters file.
  DcgmGeneration dcgm_naming = DcgmGeneration::kClassic;
  // With dcgm_names: only these DCGM names, each with the type and help of
  // its counters-file row (a --collectors file or profile); null: every row
  // of dcgm_rows() with its own.
  const DcgmPicks* dcgm_rows = nullptr;
  bool dcgm_file_rows = false;  // dcgm_rows lists a counters file's names: exactly those
  bool timestamps = false;  // OpenMetrics only: a timestamp on every sample (recordings)
  bool eof = true;          // OpenMetrics only: end with "# EOF"
};

// Picks the format from an Accept header: OpenMetrics when it is offered
// with a weight at least that of text/plain, else text 0.0.4.
Format negotiate(std::string_view accept);
std::string_view content_type(Format f);

class Renderer {
 public:
  std::string_view render(const SeriesRegistry& registry, const LiveStore& live, const RenderOptions& options);
  // Same, but appends to `out` (for recordings that concatenate renders).
  void render_into(std::string& out, const SeriesRegistry& registry, const LiveStore& live,
                   const RenderOptions& options);

 private:
  void render_dcgm(std::string& out, const SeriesRegistry& registry, const LiveStore& live, const DcgmRow& row,
                   const DcgmPick* pick, const RenderOptions& options);

  // The MIG GPU instances present, for DCGM names (one entity each).
  struct MigEntity {
    int gpu;
    unsigned gi;
    std::string gi_text;              // GPU_I_ID
    std::string profile;              // GPU_I_PROFILE
    std::vector<Labels> extras;       // mig_labels() of its compute instances
  };
  void collect_mig(const SeriesRegistry& registry, const LiveStore& live);

  std::string buf_;
  std::vector<double> values_;
  std::vector<int64_t> times_;
  std::vector<MigEntity> mig_;
  std::vector<uint8_t> mig_gpus_;  // per GPU: 1 when its instances stand in for it
  std::vector<double> mig_values_;
  std::vector<int64_t> mig_times_;
};

// Appends a sample value as Prometheus parses it (NaN, +Inf, -Inf, whole
// numbers as integers, shortest round-trip decimal otherwise).
void append_value(std::string& out, double v);
// Appends " <seconds>.<milliseconds>", the OpenMetrics sample timestamp.
void append_timestamp(std::string& out, int64_t ms);
// Appends the "# TYPE" and "# HELP" lines of a family, HELP escaped for the
// format (OpenMetrics also escapes '"').
void append_family_header(std::string& out, std::string_view name, std::string_view type, std::string_view help,
                          bool openmetrics);

}  // namespace gpulens
