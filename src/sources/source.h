// Source: where values come from. One implementation per file.
//
// The agent opens every enabled source once, then calls sample() on the
// source's own thread at each interval. A source fills only the fields it
// can; what it does not set is absent. Errors are values: open() may return
// kNotApplicable ("no NVIDIA driver: libnvidia-ml.so.1 not found") and the
// agent carries on with the other sources; sample() returning an error marks
// gpulens_source_up{source} 0 while the values it did set are still served.
//
//   class LoadavgSource : public Source {
//     std::string_view name() const override { return "loadavg"; }
//     Status open(SeriesRegistry&) override { return Status::ok(); }
//     Status sample(Frame& f) override { f.set_node(..., read()); return {}; }
//   };
//
// Thread-safety: open() runs before sampling starts; sample() is only ever
// called from one thread at a time; reconfigure() from any other thread.
#pragma once

#include <string_view>

#include "model/frame.h"
#include "model/series.h"
#include "sources/options.h"
#include "util/status.h"

namespace gpulens {

class Source {
 public:
  virtual ~Source() = default;
  virtual std::string_view name() const = 0;
  // Discover devices; register GPU identities with registry.set_gpu().
  virtual Status open(SeriesRegistry& registry) = 0;
  // Fill `frame` (already cleared, time set) with current values.
  virtual Status sample(Frame& frame) = 0;
  // True when the values are made up (the simulator).
  virtual bool simulated() const { return false; }
  // True when this source only fills gaps: a series another source also
  // sets keeps the other source's value (the scrape source, under nvml and
  // host; see store/live.h).
  virtual bool fills_gaps() const { return false; }
  // Applies options changed by a reload (SIGHUP) while sampling goes on;
  // most sources have nothing to change.
  virtual Status reconfigure(const SourceOptions&) { return Status::ok(); }
};

}  // namespace gpulens
