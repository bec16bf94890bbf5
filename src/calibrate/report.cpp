// Calibration file, table and check; see report.h.
#include "calibrate/report.h"

#include <cstdio>

#include "util/json.h"

namespace gpulens {
namespace {

std::string gbps(double bps) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB/s", bps / 1e9);
  return buf;
}

void key(std::string& out, std::string_view k) {
  append_json_string(out, k);
  out += ':';
}

std::string who(int index, const std::string& uuid) { return "GPU " + std::to_string(index) + " (" + uuid + ")"; }

}  // namespace

std::string render_calibration_json(const CalibrationRun& run) {
  std::string out = "{";
  key(out, "tool");
  out += "\"gpulens calibrate\",";
  key(out, "tool_version");
  append_json_string(out, run.tool_version);
  out += ',';
  key(out, "date");
  append_json_string(out, run.date);
  out += ',';
  key(out, "driver");
  append_json_string(out, run.driver);
  out += ',';
  key(out, "cuda_driver");
  append_json_number(out, run.cuda_driver);
  out += ",\n ";
  key(out, "gpus");
  out += '[';
  bool first = true;
  for (const GpuCalibration& g : run.gpus) {
    if (!g.status) continue;  // no result: the agent falls back to the link for it
    if (!first) out += ',';
    first = false;
    out += "\n  {";
    key(out, "uuid");
    append_json_string(out, g.uuid);
    out += ',';
    key(out, "name");
    append_json_string(out, g.name);
    out += ',';
    key(out, "pci_bus_id");
    append_json_string(out, g.pci_bus_id);
    out += ',';
    key(out, "link_gen");
    append_json_number(out, g.link_gen);
    out += ',';
    key(out, "link_width");
    append_json_number(out, g.link_width);
    out += ",\n   ";
    key(out, "pcie_rx_bytes_per_second");
    append_json_number(out, g.h2d.peak);
    out += ',';
    key(out, "pcie_tx_bytes_per_second");
    append_json_number(out, g.d2h.peak);
    if (g.bidir_h2d.peak > 0) {
      out += ',';
      key(out, "bidir_rx_bytes_per_second");
      append_json_number(out, g.bidir_h2d.peak);
      out += ',';
      key(out, "bidir_tx_bytes_per_second");
      append_json_number(out, g.bidir_d2h.peak);
    }
    out += ",\n   ";
    key(out, "under_load");
    out += g.under_load ? "true" : "false";
    out += ',';
    key(out, "date");
    append_json_string(out, run.date);
    out += ',';
    key(out, "tool_version");
    append_json_string(out, run.tool_version);
    out += ",\n   ";
    key(out, "sweep");
    out += '[';
    for (size_t i = 0; i < g.h2d.points.size(); ++i) {
      if (i > 0) out += ',';
      out += '{';
      key(out, "bytes");
      append_json_number(out, static_cast<double>(g.h2d.points[i].bytes));
      out += ',';
      key(out, "rx");
      append_json_number(out, g.h2d.points[i].bytes_per_second);
      if (i < g.d2h.points.size()) {
        out += ',';
        key(out, "tx");
        append_json_number(out, g.d2h.points[i].bytes_per_second);
      }
      out += '}';
    }
    out += "],\n   ";
    key(out, "peers");
    out += '[';
    for (size_t i = 0; i < g.peers.size(); ++i) {
      if (i > 0) out += ',';
      out += '{';
      key(out, "uuid");
      append_json_string(out, g.peers[i].uuid);
      out += ',';
      key(out, "bytes_per_second");
      append_json_number(out, g.peers[i].bytes_per_second);
      out += '}';
    }
    out += "]}";
  }
  out += "\n ]}\n";
  return out;
}

std::string render_calibration_table(const CalibrationRun& run) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-4s %-30s %-12s %-30s %12s %12s %6s\n", "GPU", "model", "link", "direction",
                "measured", "nominal", "ratio");
  out += line;
  for (const GpuCalibration& g : run.gpus) {
    if (!g.status) continue;
    const double nominal = pcie_lane_bytes_per_second(g.link_gen_max) * g.link_width_max;
    const std::string link = "Gen" + std::to_string(g.link_gen) + " x" + std::to_string(g.link_width);
    auto row = [&](std::string_view dir, double v) {
      std::string ratio = nominal > 0 ? std::to_string(v / nominal).substr(0, 4) : "-";
      std::snprintf(line, sizeof line, "%-4d %-30.30s %-12s %-30s %12s %12s %6s\n", g.index, g.name.c_str(),
                    link.c_str(), std::string(dir).c_str(), gbps(v).c_str(), nominal > 0 ? gbps(nominal).c_str() : "-",
                    ratio.c_str());
      out += line;
    };
    row("host->device", g.h2d.peak);
    row("device->host", g.d2h.peak);
    if (g.bidir_h2d.peak > 0) {
      row("host->device (bidirectional)", g.bidir_h2d.peak);
      row("device->host (bidirectional)", g.bidir_d2h.peak);
    }
  }
  for (const GpuCalibration& g : run.gpus) {
    for (const PeerResult& p : g.peers) {
      std::snprintf(line, sizeof line, "peer GPU %d -> GPU %d: %s\n", g.index, p.index, gbps(p.bytes_per_second).c_str());
      out += line;
    }
  }
  for (const GpuCalibration& g : run.gpus) {
    if (g.under_load) {
      out += "WARNING: " + who(g.index, g.uuid) +
             " was measured while other processes used it (--force): its figures are marked under_load\n";
    }
    if (!g.status) out += "FAILED: " + g.status.message() + "\n";
  }
  return out;
}

std::vector<CheckProblem> check_calibration(const PcieCalibration& recorded, const CalibrationRun& now,
                                            double tolerance) {
  std::vector<CheckProblem> out;
  for (const GpuCalibration& g : now.gpus) {
    if (!g.status) continue;
    const PcieCalibration::Entry* e = nullptr;
    for (const auto& r : recorded.entries) {
      if (r.uuid == g.uuid) e = &r;
    }
    const std::string name = who(g.index, g.uuid);
    if (e == nullptr) {
      out.push_back({g.uuid, name + ": not in the calibration file; calibrate it"});
      continue;
    }
    const std::string when = e->date.empty() ? "at calibration" : "at calibration (" + e->date + ")";
    auto cmp = [&](std::string_view dir, double was, double is) {
      if (was > 0 && is < was * (1 - tolerance)) {
        out.push_back({g.uuid, name + " " + std::string(dir) + ": " + gbps(is) + " now, " + gbps(was) + " " + when});
      }
    };
    cmp("host->device", e->rx, g.h2d.peak);
    cmp("device->host", e->tx, g.d2h.peak);
    if ((e->link_gen > 0 && g.link_gen > 0 && g.link_gen < e->link_gen) ||
        (e->link_width > 0 && g.link_width > 0 && g.link_width < e->link_width)) {
      out.push_back({g.uuid, name + " link: Gen" + std::to_string(g.link_gen) + " x" + std::to_string(g.link_width) +
                                 " now, Gen" + std::to_string(e->link_gen) + " x" + std::to_string(e->link_width) +
                                 " " + when});
    }
  }
  return out;
}

}  // namespace gpulens
