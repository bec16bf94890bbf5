// `gpulens calibrate`: measure each GPU's host link with copy engines and
// write the calibration file the agent divides PCIe throughput by
// (source.nvml.calibration); `--check FILE` re-measures briefly and fails
// (exit 3) when a link lost bandwidth since.
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>

#include "calibrate/calibrate.h"
#include "calibrate/report.h"
#include "cli/command.h"

namespace gpulens::cli {

int run_calibrate(int argc, char** argv) {
  CLI::App app{"Measure every GPU's PCIe (and peer) bandwidth with copy-engine copies from pinned, NUMA-local "
               "host memory, and write the calibration file the agent reads (source.nvml.calibration).",
               "gpulens calibrate"};
  CalibrateOptions o;
  std::string output = "calibration.json", check;
  std::vector<size_t> sizes_mib;
  double tolerance = 0.1;
  bool no_peers = false, no_bidir = false;
  app.add_option("-o,--output", output, "calibration file to write")->capture_default_str();
  app.add_option("--check", check, "re-measure briefly and compare with this calibration file (exit 3 on a loss)");
  app.add_option("--tolerance", tolerance, "--check: fraction of the recorded peak a link may lose")
      ->check(CLI::Range(0.0, 0.9))
      ->capture_default_str();
  app.add_option("--gpus", o.gpus, "GPUs to calibrate: NVML indices, UUIDs or PCI bus ids (default: all)")
      ->delimiter(',');
  app.add_flag("--force", o.force, "measure even when other processes use a GPU (the result is marked under_load)");
  app.add_option("--sizes", sizes_mib, "copy sizes of the sweep, MiB (default 4,16,64,256)")
      ->delimiter(',')
      ->check(CLI::Range(size_t{1}, size_t{4096}));
  app.add_option("--copies", o.sweep.copies, "copies per timed sample")->check(CLI::Range(1, 1000))->capture_default_str();
  app.add_option("--samples", o.sweep.samples, "timed samples per size (the median is kept)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("--no-peers", no_peers, "skip GPU-to-GPU copies");
  app.add_flag("--no-bidirectional", no_bidir, "skip the bidirectional copies");
  app.add_option("--cuda-library", o.cuda_library, "CUDA driver library to load")->capture_default_str();
  app.add_option("--nvml-library", o.nvml_library, "NVML library to load")->capture_default_str();
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  o.peers = !no_peers;
  o.bidirectional = !no_bidir;
  if (!sizes_mib.empty()) {
    o.sweep.sizes.clear();
    for (size_t m : sizes_mib) o.sweep.sizes.push_back(m << 20);
  }

  PcieCalibration recorded;
  if (!check.empty()) {
    auto r = load_pcie_calibration(check);
    if (!r) {
      std::cerr << "gpulens calibrate: " << r.status().message() << "\n";
      return kExitUsage;
    }
    recorded = std::move(*r);
    // A short re-measurement: the largest size only, unless sizes were given.
    if (sizes_mib.empty()) o.sweep.sizes = {o.sweep.sizes.back()};
    if (o.sweep.samples > 3) o.sweep.samples = 3;
    o.peers = false;
    o.bidirectional = false;
  }
  if (isatty(STDERR_FILENO)) {
    o.progress = [](const std::string& line) { std::cerr << "gpulens calibrate: " << line << "\n"; };
  }
  auto run = run_calibration(o, GPULENS_VERSION);
  if (!run) {
    std::cerr << "gpulens calibrate: " << run.status().message() << "\n";
    return kExitFailure;
  }
  for (const auto& g : run->gpus) {
    if (g.under_load) {
      std::cerr << "gpulens calibrate: WARNING: GPU " << g.index << " (" << g.uuid
                << ") is used by other processes; measuring anyway (--force): the peak is likely too low and is "
                   "marked under_load in the file\n";
    }
  }
  std::cout << render_calibration_table(*run);
  if (!check.empty()) {
    auto problems = check_calibration(recorded, *run, tolerance);
    for (const auto& p : problems) std::cout << "LOST: " << p.what << "\n";
    if (!problems.empty()) return kExitFindings;
    if (run->any_failed()) return kExitFailure;
    std::cout << "every link carries what it did at calibration (within " << tolerance * 100 << " %)\n";
    return kExitOk;
  }
  const std::string tmp = output + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << render_calibration_json(*run);
    if (!out.flush()) {
      std::cerr << "gpulens calibrate: cannot write " << tmp << "\n";
      return kExitFailure;
    }
  }
  if (std::rename(tmp.c_str(), output.c_str()) != 0) {
    std::cerr << "gpulens calibrate: cannot write " << output << "\n";
    return kExitFailure;
  }
  std::cout << "wrote " << output << " (set source.nvml.calibration: " << output << ")\n";
  return run->any_failed() ? kExitFailure : kExitOk;
}

}  // namespace gpulens::cli
