// The fleet summary: waste per root cause across hosts, with who is affected.
#include <algorithm>
#include <map>
#include <set>

#include "diagnose/report.h"

namespace gpulens::diagnose {

std::vector<FleetCause> fleet_summary(const Report& r) {
  struct Acc {
    double seconds = 0;
    std::set<std::string> hosts;
    size_t gpus = 0;
  };
  std::map<std::string, Acc> by;
  for (const auto& [cause, s] : r.waste_by_cause) by[cause].seconds = s;
  for (const HostReport& h : r.hosts) {
    for (const GpuReport& g : h.gpus) {
      std::set<std::string> mine;  // root causes firing on this GPU
      for (const Finding& f : g.findings) {
        if (f.state != State::kFiring || f.severity == Severity::kInfo) continue;
        mine.insert(f.explained_by.cause.empty() ? f.cause : f.explained_by.cause);
      }
      for (const std::string& c : mine) {
        by[c].hosts.insert(h.host);
        ++by[c].gpus;
      }
    }
  }
  const double covered = r.covered_seconds();
  std::vector<FleetCause> out;
  for (auto& [cause, a] : by) {
    if (a.seconds <= 0 && a.gpus == 0) continue;
    out.push_back({cause, a.seconds, covered > 0 ? a.seconds / covered : 0,
                   std::vector<std::string>(a.hosts.begin(), a.hosts.end()), a.gpus});
  }
  std::stable_sort(out.begin(), out.end(), [](const FleetCause& a, const FleetCause& b) {
    return a.waste_gpu_seconds > b.waste_gpu_seconds;
  });
  return out;
}

}  // namespace gpulens::diagnose
