// Fuzz target: what a process pushes to the receiver. The input is read as a
// Prometheus text 0.0.4 body (parse_text_body), an OTLP/HTTP JSON body
// (parse_otlp_json) and a grouping path (parse_group_path), then pushed
// through a PushStore joined to one GPU (PUT, POST and OTLP) and collected
// into a frame, as the agent does. Checks: every refusal says why, accepted
// samples respect the limits, the store holds at most its limits.
// Bound: inputs are cut at 64 KiB; the limits are the defaults but smaller
// per-push and per-group counts, so that a body can reach them.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "model/frame.h"
#include "push/push_store.h"

namespace {

using namespace gpulens;

push::PushLimits limits() {
  push::PushLimits l;
  l.max_series_per_push = 64;
  l.max_series_per_group = 64;
  l.max_groups = 8;
  l.max_labels = 8;
  l.max_label_length = 64;
  return l;
}

void check_samples(const std::vector<push::PushedSample>& samples, const push::PushLimits& l) {
  if (samples.size() > l.max_series_per_push) std::abort();
  for (const auto& s : samples) {
    if (s.name.empty() || s.labels.size() > l.max_labels) std::abort();
    for (const auto& [n, v] : s.labels) {
      if (n.size() > l.max_label_length || v.size() > l.max_label_length) std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const push::PushLimits l = limits();

  auto text = push::parse_text_body(body, l);
  if (text) check_samples(*text, l);
  else if (text.status().message().empty()) std::abort();

  auto otlp = push::parse_otlp_json(body, l);
  if (otlp) {
    for (const auto& r : otlp->resources) check_samples(r.samples, l);
    if (otlp->rejected_points > 0 && otlp->rejected_message.empty()) std::abort();
  } else if (otlp.status().message().empty()) {
    std::abort();
  }

  auto path = push::parse_group_path(body.substr(0, body.find('\n')), l);
  if (!path && path.status().message().empty()) std::abort();

  // A fresh registry per input: pushed label sets add series, and a shared
  // one would grow over the run.
  SeriesRegistry registry;
  registry.set_gpu(0, {.uuid = "GPU-1", .name = "fuzz", .pci_bus_id = "00000000:01:00.0"});
  LiveStore live;
  push::PushStore store(push::PushOptions{.ttl_ms = 1000, .token = "", .proc_root = "/nonexistent",
                                          .check_pids = false, .self_metrics = true, .limits = l});
  store.attach(registry, live);
  for (std::string_view method : {"PUT", "POST"}) {
    const auto a = store.pushgateway(method, "/metrics/job/fuzz/instance/a", body, 1);
    if (a.status != 200 && a.body.empty()) std::abort();
  }
  const auto o = store.otlp_json(body, 2);
  if (o.status != 200 && o.body.empty()) std::abort();
  if (store.group_count() > l.max_groups) std::abort();
  Frame f(registry);
  f.clear(3);
  store.fill(f);
  return 0;
}
