// Fuzz target: the calibration file the agent reads (source.nvml.calibration)
// and `gpulens calibrate --check` compares against, as parse_pcie_calibration
// (sources/nvml/pcie_peak.h) parses it; every entry it accepts is then looked
// up by UUID and by model name and chosen as a GPU's peak, as open() does.
// Bound: inputs are cut at 32 KiB (a file for 8 GPUs with its sweep is ~6 KiB).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "sources/nvml/pcie_peak.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto cal = gpulens::parse_pcie_calibration(text, "fuzz.json");
  if (!cal) {
    if (cal.status().message().empty()) std::abort();  // an error must say why
    return 0;
  }
  for (const auto& e : cal->entries) {
    const gpulens::PciePeak p = gpulens::choose_pcie_peak(&*cal, e.uuid, e.name, e.link_gen, e.link_width);
    // Whatever entry is found, its peaks are the bounded, positive ones the parser accepted.
    if (p.basis != "calibrated" || !(p.rx > 0 && p.rx < 1e15) || !(p.tx > 0 && p.tx < 1e15)) std::abort();
    if (e.link_gen > 64 || e.link_width > 64) std::abort();
  }
  return 0;
}
