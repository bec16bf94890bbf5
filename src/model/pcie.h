// PCIe link bandwidth by generation: the one table of nominal per-lane rates
// behind the NVML source's nominal peak, the calibration report, the
// diagnosis' full-link comparisons and the HTML report (the web page keeps a
// copy, checked against this one by report_test).
//
//   pcie_link_bytes_per_second(5, 16);   // 63.015e9: Gen5 x16, per direction
//
// Units: bytes per second per direction, after line encoding (8b/10b up to
// Gen2, 128b/130b Gen3-5, FLIT payload share on Gen6). Thread-safety: pure.
#pragma once

namespace gpulens {

// One lane of generation `gen`; 0 for an unknown generation.
double pcie_lane_bytes_per_second(int gen);
// `width` lanes of generation `gen`; 0 when either is unknown.
double pcie_link_bytes_per_second(int gen, int width);

}  // namespace gpulens
