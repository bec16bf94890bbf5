// The remote_write label set of a series, built from the catalog and the
// series' exposition-form labels.
//
// remote_write wants every label as a pair, sorted by name, without empty
// values and with __name__ among them. The registry keeps labels pre-escaped
// for the text exposition (`gpu="0",link="3"`), so this parses them back and
// adds the sample name and the writer's external labels:
//
//   gpu_power_watts{gpu="0",gpu_uuid="GPU-1",gpu_name="H200"}
//     -> __name__=gpu_power_watts, gpu=0, gpu_name=H200, gpu_uuid=GPU-1, instance=node7
//
// Histogram series carry the pseudo-extras `le="…"`, `sum` and `count`
// (see model/frame.h); they become <name>_bucket{le}, <name>_sum, <name>_count.
//
// Thread-safety: pure functions.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "export/remote_write/prompb.h"
#include "model/series.h"

namespace gpulens {

// Labels of series `slot` for remote_write, sorted by name in byte order
// (__name__ before lower-case names), empty values left out: read from the
// registry's labels as data (SeriesRegistry::all_labels), never from the
// exposition text. External labels fill names the series does not carry.
// Call under registry.mutex().
Result<prompb::LabelPairs> remote_labels(const SeriesRegistry& registry, uint32_t slot,
                                         std::span<const std::pair<std::string, std::string>> external);

}  // namespace gpulens
