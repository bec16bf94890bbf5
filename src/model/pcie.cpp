// PCIe per-lane rates; see pcie.h.
#include "model/pcie.h"

namespace gpulens {

double pcie_lane_bytes_per_second(int gen) {
  switch (gen) {
    case 1: return 250e6;                   // 2.5 GT/s, 8b/10b
    case 2: return 500e6;                   // 5 GT/s, 8b/10b
    case 3: return 8e9 * 128 / 130 / 8;     // 984.6 MB/s
    case 4: return 16e9 * 128 / 130 / 8;    // 1969.2 MB/s
    case 5: return 32e9 * 128 / 130 / 8;    // 3938.5 MB/s
    case 6: return 64e9 * 242 / 256 / 8;    // 7562.5 MB/s, FLIT payload share; unverified
    default: return 0;
  }
}

double pcie_link_bytes_per_second(int gen, int width) {
  return width > 0 ? pcie_lane_bytes_per_second(gen) * width : 0;
}

}  // namespace gpulens
