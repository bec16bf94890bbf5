// Scraped names onto the field catalog, through the one mapping table of
// foreign names (diagnose/mapping.cpp) that `diagnose --replay` uses.
//
// A scraped series (dcgm-exporter's DCGM_FI_*, node_exporter's node_*,
// vLLM's vllm:*, SGLang's sglang:*, TGI's tgi_*, Triton's nv_inference_*, or
// another gpulens) is looked up in the mapping table; its bindings (signal,
// rate or gauge, bitmask, latency bound) are then matched against the
// bindings of every catalog field's own name, and the field whose bindings
// agree is the one it fills, with the ratio of the two scales as the unit
// conversion (DCGM percent -> ratio 0.01, MiB -> bytes 2^20, MHz -> hertz
// 1e6, Triton microseconds -> seconds 1e-6). No second table of names: a
// name the mapping table does not know maps to nothing here either, except
// the DCGM names the catalog itself declares for --dcgm-names (energy in mJ,
// memory clock, encoder/decoder, ...), read back through that row's scale.
//
// A histogram's _sum and _count follow its _bucket; of a summary (Triton's
// nv_inference_request_summary_us) only the quantile="0.99" series is read,
// the worst model's, its _sum and _count not at all. Extra labels kept: the
// ones the catalog's series carry (mode, device, port, le on host and
// serving series, whose engine is named by the label engine (vllm, sglang,
// tgi, triton) and by the scrape target's endpoint (with_endpoint()); the
// DCGM row's own on GPU series, and those of
// dcgm-exporter's DCGM_EXP_* families under the catalog's names: xid,
// reason from clock_event, watch, error, peer_gpu, status; all but the GPU
// identity on a GPU series another gpulens wrote under the catalog's own
// name: xid, reason, link, ...); the rest (cpu,
// model_name, vLLM's data-parallel engine index, pod identity) is dropped, and series of one family
// that land on one catalog series combine by the target's Combine rule.
//
//   auto t = catalog_targets("DCGM_FI_DEV_FB_USED", labels);
//   // t[0].field == FieldId::kGpuMemoryUsed, t[0].scale == 1048576
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "diagnose/mapping.h"
#include "model/catalog.h"
#include "model/series.h"
#include "util/status.h"

namespace gpulens::scrape {

// How several scraped series of one family that land on one catalog series
// combine in one scrape: summed (CPU seconds over CPUs, running requests
// over models), the largest (a latency quantile over models), or the first
// (a device-wide value every MIG instance of a GPU repeats).
enum class Combine : uint8_t { kSum, kMax, kFirst };

struct CatalogTarget {
  FieldId field;
  double scale = 1.0;  // scraped value * scale = the catalog's unit
  Labels extra;        // extra labels of the catalog series
  Combine combine = Combine::kSum;
  // A DCGM _UTIL_RATIO name (percent in DCGM 4.6.x, a ratio from 4.7): a
  // value above 1 is percent, scaled by 0.01 (model/catalog.h).
  bool percent_or_ratio = false;
  bool negative_is_unknown = false;  // a link speed below 0: unknown, absent
  bool one = false;  // serving_engine_info: 1 whatever the value
  // A counter of a ratio made of two (vLLM's prefix-cache hits and
  // queries, each summed over the engine's series): not a value itself;
  // the field is the ratio of their increases between two scrapes.
  enum class Part : uint8_t { kNone, kNumerator, kDenominator };
  Part part = Part::kNone;
  // A histogram's _sum or _count (kNone: a bucket, or not a histogram).
  HistogramPart histogram = HistogramPart::kNone;
  bool operator==(const CatalogTarget&) const = default;
};

std::vector<CatalogTarget> catalog_targets(std::string_view name, diagnose::LabelSpan labels);

// serving_engine_info{engine="vllm",model="..."} 1 for an engine's own
// series that names its model (vLLM and SGLang model_name, Triton model),
// beside what catalog_targets() maps it onto; nullopt for a series that
// names none (TGI) and for gpulens' own names (their serving_engine_info
// maps through catalog_targets(), its model kept). Endpoint and pid follow
// as on every serving series, so the model reaches /metrics, recordings
// and the diagnosis' engine entity.
std::optional<CatalogTarget> engine_info(std::string_view name, diagnose::LabelSpan labels);

// The extra labels of a serving engine's series ({engine="vllm"}, with le
// on a bucket) with `endpoint` (the scrape target it came from), so that two
// engines of one kind on a node are two series, never one summed or one
// lost. Unchanged when the series names no engine or already carries an
// endpoint.
//   with_endpoint(Labels{{"engine", "vllm"}, {"le", "0.1"}}, "http://h:8000/metrics")
//   == Labels{{"endpoint", "http://h:8000/metrics"}, {"engine", "vllm"}, {"le", "0.1"}}
Labels with_endpoint(const Labels& extra, std::string_view endpoint);

// "" when `value` (in the catalog's unit) is one a serving engine can say
// for `field`, else what is wrong with it: not a number, negative, a
// KV-cache usage or prefix-cache hit ratio above 1, a request count or
// counter beyond 1e12 (`part`: one of the counters a ratio is made of,
// checked as a count). An engine
// page with such a value is not read at all (docs/serving.md, "Bad pages"):
// the scrape marks its target down with this reason, so its engine is not
// judged on numbers it cannot mean.
//   check_serving_value(FieldId::kServingKvCacheUsage, 1.7)
//   == "serving_kv_cache_usage_ratio is 1.7, above 1 (a ratio)"
std::string check_serving_value(FieldId field, double value, CatalogTarget::Part part = CatalogTarget::Part::kNone);

// The ratio of two counters' increases between two scrapes (`before` and
// `now`, numerator then denominator): the prefix-cache hit ratio from
// vLLM's hits and queries. nullopt when nothing was looked up in between,
// a counter went back (the engine restarted) or more was found than looked
// up: the field is absent for that scrape.
//   ratio_of_increases({10, 100}, {40, 200}) == 0.3
std::optional<double> ratio_of_increases(std::pair<double, double> before, std::pair<double, double> now);

// One page an exporter answered, read as the scrape source reads it: each
// series through catalog_targets(), a serving engine's with `endpoint` (and
// `pid` where known, after the endpoint), series of one catalog series
// combined by their Combine rule, units converted (a ratio of two counters'
// increases needs two pages: none from one). The simulator publishes
// its engines' pages through this. An error names the line that does not
// parse or the serving value check_serving_value() refuses.
struct PageValue {
  FieldId field;
  HistogramPart part;
  Labels extra;
  double value;
};
Result<std::vector<PageValue>> map_page(std::string_view page, std::string_view endpoint, std::string_view pid = {});

// Who exposes a family, recognised by its name.
enum class Exporter : uint8_t { kUnknown, kDcgmExporter, kNodeExporter, kVllm, kSglang, kTgi, kTriton, kGpulens };
Exporter recognise(std::string_view family);
std::string_view exporter_name(Exporter e);

}  // namespace gpulens::scrape
