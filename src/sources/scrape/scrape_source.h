// The scrape source: reads exporters that already run on the node —
// dcgm-exporter, node_exporter, vLLM, SGLang, TGI, Triton — over HTTP, in
// Prometheus text 0.0.4 or OpenMetrics, and fills the field catalog with
// what they give (catalog_targets.h: through the mapping table of
// `diagnose --replay`, units converted to the catalog's).
//
// Each target is scraped on its own thread every `interval`, each scrape
// bounded by `timeout` (connect, request and answer together) and
// `max_bytes`, so a dead, hung or flooding target costs only its own thread
// and never the others, the sampling of other sources or a scrape of the
// agent. sample() copies the latest result of every target into the frame
// (no I/O), plus per target gpulens_source_up / gpulens_sample_age_seconds /
// gpulens_collection_duration_seconds{source="scrape",target="<url>"}; it
// returns an error naming the targets that are down while the others'
// values are still served. A target that answers garbage is down with the
// parser's reason ("http://h:9400/metrics:3: expected a metric name"),
// logged once per change; so is a serving engine's page with a value no
// engine can mean (catalog_targets.h, check_serving_value()), refused whole.
//
// GPUs: a scraped GPU series (dcgm-exporter's UUID label, or gpu_uuid) joins
// the registry's GPU with that UUID (the nvml source's). When no other
// source registered GPUs, the scraped ones become the GPUs (index from the
// `gpu` label, identity from UUID, modelName, pci_bus_id, device,
// DCGM_FI_DRIVER_VERSION) and the pod labels dcgm-exporter attached
// (container, namespace, pod) are kept. With other GPUs present, a UUID
// that is none of them is dropped (logged once). MIG instance series
// (GPU_I_ID) are not read.
//
// Precedence: fills_gaps() — a series another source also sets (nvml,
// host, kubelet) keeps that source's value; the scrape fills what only it
// has (DCGM profiling fields on A100, serving latency, node_exporter
// series the host source does not read). Between targets, the one listed
// first keeps a series two of them give; a serving engine's series are the
// engine's own (labels engine and endpoint, the target's URL), so two
// engines on one node are both kept, never summed.
//
// Thread-safety: sample() from the agent's thread of this source;
// reconfigure() from any thread; the target threads only touch their own
// state and the registry (which locks).
#pragma once

#include <memory>

#include "sources/options.h"
#include "sources/source.h"

namespace gpulens {

std::unique_ptr<Source> make_scrape_source(const SourceOptions& options);

}  // namespace gpulens
