// PCIe peak selection; see pcie_peak.h.
#include "sources/nvml/pcie_peak.h"

#include <simdjson.h>

#include <fstream>
#include <sstream>

namespace gpulens {

const PcieCalibration::Entry* PcieCalibration::find(std::string_view uuid, std::string_view name) const {
  for (const auto& e : entries) {
    if (!e.uuid.empty() && e.uuid == uuid) return &e;
  }
  for (const auto& e : entries) {
    if (e.uuid.empty() && !e.name.empty() && e.name == name) return &e;
  }
  return nullptr;
}

Result<PcieCalibration> parse_pcie_calibration(std::string_view json, std::string_view origin) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (auto err = parser.parse(padded).get(root)) {
    return invalid_argument(std::string(origin) + ": not valid JSON: " + simdjson::error_message(err));
  }
  simdjson::dom::array gpus;
  if (root["gpus"].get(gpus)) return invalid_argument(std::string(origin) + ": expected an array \"gpus\"");
  PcieCalibration cal;
  size_t i = 0;
  for (simdjson::dom::element g : gpus) {
    PcieCalibration::Entry e;
    std::string_view s;
    if (!g["uuid"].get(s)) e.uuid = std::string(s);
    if (!g["name"].get(s)) e.name = std::string(s);
    double rx = 0, tx = 0;
    bool has_rx = !g["pcie_rx_bytes_per_second"].get(rx);
    bool has_tx = !g["pcie_tx_bytes_per_second"].get(tx);
    const std::string where = std::string(origin) + ": gpus[" + std::to_string(i) + "]";
    if (e.uuid.empty() && e.name.empty()) return invalid_argument(where + ": needs \"uuid\" or \"name\"");
    if (!has_rx && !has_tx) return invalid_argument(where + ": needs pcie_rx_bytes_per_second or pcie_tx_bytes_per_second");
    if ((has_rx && !(rx > 0 && rx < 1e15)) || (has_tx && !(tx > 0 && tx < 1e15)))
      return invalid_argument(where + ": peaks must be positive bytes per second below 1e15");
    e.rx = has_rx ? rx : tx;
    e.tx = has_tx ? tx : rx;
    for (auto [k, out] : {std::pair{"link_gen", &e.link_gen}, std::pair{"link_width", &e.link_width}}) {
      simdjson::dom::element v;
      if (g[k].get(v)) continue;
      double d = 0;
      if (v.get(d) || d < 0 || d > 64 || d != static_cast<unsigned>(d))
        return invalid_argument(where + ": " + k + " must be a small whole number");
      *out = static_cast<unsigned>(d);
    }
    if (!g["date"].get(s)) e.date = std::string(s);
    else if (!root["date"].get(s)) e.date = std::string(s);
    if (!g["tool_version"].get(s)) e.tool_version = std::string(s);
    else if (!root["tool_version"].get(s)) e.tool_version = std::string(s);
    bool load = false;
    if (!g["under_load"].get(load)) e.under_load = load;
    cal.entries.push_back(std::move(e));
    ++i;
  }
  return cal;
}

Result<PcieCalibration> load_pcie_calibration(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("cannot read calibration file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_pcie_calibration(ss.str(), path);
}

PciePeak choose_pcie_peak(const PcieCalibration* cal, std::string_view uuid, std::string_view name,
                          unsigned gen_max, unsigned width_max) {
  if (cal != nullptr) {
    if (const auto* e = cal->find(uuid, name)) return {e->rx, e->tx, "calibrated"};
  }
  if (double lane = pcie_lane_bytes_per_second(gen_max); lane > 0 && width_max > 0) {
    return {lane * width_max, lane * width_max, "link"};
  }
  // Known models, all x16 parts: the generation they were built for.
  static constexpr struct {
    std::string_view needle;
    unsigned gen;
  } kModels[] = {{"B200", 5}, {"B100", 5}, {"GB200", 5}, {"H200", 5}, {"H100", 5}, {"H20", 5}, {"H800", 5},
                 {"L40", 4},  {"L4", 4},   {"A100", 4},  {"A800", 4}, {"A30", 4},  {"A10", 4}, {"V100", 3},
                 {"T4", 3}};
  for (const auto& m : kModels) {
    if (name.find(m.needle) != std::string_view::npos) {
      double peak = pcie_lane_bytes_per_second(m.gen) * 16;
      return {peak, peak, "model"};
    }
  }
  return {};
}

}  // namespace gpulens
