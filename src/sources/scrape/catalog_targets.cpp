// Scraped names onto catalog fields: the mapping table's bindings of the
// scraped name matched against those of each catalog field's own name.
#include "sources/scrape/catalog_targets.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <optional>

#include "expfmt/stream_parser.h"

#include "model/series.h"

namespace gpulens::scrape {
namespace {

using diagnose::Binding;

// Same binding up to the scale; `ratio` = scraped scale / native scale.
bool same_up_to_scale(const std::vector<Binding>& scraped, const std::vector<Binding>& native, double& ratio) {
  if (scraped.empty() || scraped.size() != native.size()) return false;
  ratio = 0;
  for (size_t i = 0; i < scraped.size(); ++i) {
    const Binding& a = scraped[i];
    const Binding& b = native[i];
    if (a.kind != b.kind || a.sig != b.sig || a.counter != b.counter || a.transform != b.transform ||
        a.mask != b.mask || a.code != b.code || a.le != b.le || b.scale == 0) {
      return false;
    }
    const double r = a.scale / b.scale;
    if (i > 0 && std::fabs(r - ratio) > 1e-12 * std::fabs(ratio)) return false;
    ratio = r;
  }
  return true;
}

// The labels a node-scoped catalog series carries as extra labels.
bool kept_node_label(std::string_view name) {
  return name == "mode" || name == "device" || name == "port" || name == "le";
}

Labels node_extra(diagnose::LabelSpan labels) {
  Labels out;
  for (const auto& [k, v] : labels) {
    if (kept_node_label(k)) out.set(k, v);
  }
  return out;
}

// The extra labels of the GPU fields that carry some: the catalog's name
// of the label, read as is from the catalog's own series (another gpulens)
// or under dcgm-exporter's name from its DCGM_EXP_* families.
struct GpuExtra {
  FieldId field;
  std::string_view name;  // the catalog's
  std::string_view dcgm;  // dcgm-exporter's ("" = the same)
};
constexpr GpuExtra kGpuExtras[] = {
    {FieldId::kGpuXidErrorsRecent, "xid", {}},
    {FieldId::kGpuClockEventsRecent, "reason", "clock_event"},
    {FieldId::kGpuHealthStatus, "watch", "health_watch"},
    {FieldId::kGpuHealthStatus, "error", "health_error_code"},
    {FieldId::kGpuP2pStatus, "peer_gpu", {}},
    {FieldId::kGpuP2pStatus, "status", "link_status"},
};

std::string_view label_of(diagnose::LabelSpan labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return {};
}

// The model an engine's series names: vLLM's and SGLang's model_name,
// Triton's model, the model label of serving_engine_info another gpulens
// wrote; "" none (TGI's series name none).
std::string_view model_of(diagnose::LabelSpan labels) {
  if (const std::string_view m = label_of(labels, "model_name"); !m.empty()) return m;
  return label_of(labels, "model");
}

// dcgm-exporter's clock_event names onto gpulens' reason names (clock_reasons()).
std::string_view clock_reason(std::string_view dcgm) {
  if (dcgm == "power_cap") return "sw_power_cap";
  if (dcgm == "clocks_setting") return "applications_clocks";
  return dcgm;
}

Labels gpu_extra(FieldId id, diagnose::LabelSpan labels) {
  Labels out;
  for (const GpuExtra& e : kGpuExtras) {
    if (e.field != id) continue;
    std::string_view v = label_of(labels, e.name);
    if (v.empty() && !e.dcgm.empty()) {
      v = label_of(labels, e.dcgm);
      if (e.dcgm == "clock_event") v = clock_reason(v);
    }
    if (!v.empty()) out.set(e.name, v);
  }
  return out;
}

// A GPU's identity (gpulens' gpu, gpu_uuid, gpu_name; dcgm-exporter's) or a
// Prometheus target label: never an extra label of a catalog series.
bool identity_label(std::string_view k) {
  // dcgm-exporter's label rows and its HPC job label (hpc_job: which job
  // holds the GPU, not a property of the value) are identity too.
  for (std::string_view id : {"gpu", "gpu_uuid", "gpu_name", "UUID", "uuid", "pci_bus_id", "device", "modelName",
                              "Hostname", "hostname", "DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION",
                              "DCGM_FI_DEV_NAME", "DCGM_FI_DEV_SERIAL", "DCGM_FI_DEV_UUID", "hpc_job", "instance",
                              "job"}) {
    if (k == id) return true;
  }
  return false;
}

// The extra labels of a GPU series another gpulens wrote under the
// catalog's own name (gpu_xid_errors_total{xid}, gpu_clock_event_active
// {reason}, ...): every label but the GPU's identity and the scrape's
// target labels, so that series of one field keep apart instead of adding
// up. (The scrape checked the page's labels against model/label_rules.h
// before mapping: no name twice.)
Labels own_extra(diagnose::LabelSpan labels) {
  Labels out;
  for (const auto& [k, v] : labels) {
    if (!identity_label(k)) out.set(k, v);
  }
  return out;
}

// How series of one family landing on one catalog series combine: a
// latency quantile over models is the worst model's, a KV-cache usage over
// an engine's data-parallel ranks the fullest's, never a sum.
Combine combine_of(FieldId id) {
  return id == FieldId::kServingLatencyP99 || id == FieldId::kServingKvCacheUsage ||
                 id == FieldId::kServingPrefixCacheHitRatio
             ? Combine::kMax
             : Combine::kSum;
}

// The engine kind of a serving engine's family ("" for gpulens' own names).
std::string_view engine_kind(Exporter e) {
  switch (e) {
    case Exporter::kVllm: return "vllm";
    case Exporter::kSglang: return "sglang";
    case Exporter::kTgi: return "tgi";
    case Exporter::kTriton: return "triton";
    default: return {};
  }
}

// The extra labels of a serving series: the engine it comes from (its kind
// from the family's name, or the engine and endpoint labels another gpulens
// wrote), then le. The engine's own labels (model_name, vLLM's
// data-parallel `engine` index, tp_rank) are dropped: the engine's series
// combine by the field's rule.
Labels serving_extra(std::string_view name, diagnose::LabelSpan labels, bool with_le) {
  Labels out;
  std::string_view kind = engine_kind(recognise(name));
  const bool own = kind.empty();
  if (own) kind = label_of(labels, "engine");
  if (!kind.empty()) out.set("engine", kind);
  if (const std::string_view ep = label_of(labels, "endpoint"); own && !kind.empty() && !ep.empty()) {
    out.set("endpoint", ep);
  }
  if (const std::string_view le = label_of(labels, "le"); with_le && !le.empty()) out.set("le", le);
  return out;
}

// Catalog fields whose own name the mapping table knows, with that name.
const std::vector<std::pair<FieldId, std::string>>& native_names() {
  static const std::vector<std::pair<FieldId, std::string>> names = [] {
    std::vector<std::pair<FieldId, std::string>> out;
    for (const FieldDef& f : catalog()) {
      std::string n(f.name);
      if (f.type == MetricType::kHistogram) n += "_bucket";
      if (diagnose::known_name(n)) out.emplace_back(f.id, std::move(n));
    }
    return out;
  }();
  return names;
}

std::vector<CatalogTarget> through_mapping(std::string_view name, diagnose::LabelSpan labels) {
  const std::vector<Binding> scraped = diagnose::map_series(name, labels);
  if (scraped.empty()) return {};
  for (const auto& [id, native] : native_names()) {
    double ratio = 1;
    if (!same_up_to_scale(scraped, diagnose::map_series(native, labels), ratio)) continue;
    const FieldDef& f = field(id);
    Labels extra;
    if (f.layer == Layer::kServing) {
      extra = serving_extra(name, labels, true);
      if (id == FieldId::kServingRequestsWaitingByReason) extra.set("reason", label_of(labels, "reason"));
    } else if (f.scope == Scope::kNode) {
      extra = node_extra(labels);
    } else if (name == native) {
      extra = own_extra(labels);  // another gpulens: the series' own labels, as it wrote them
    } else {
      extra = gpu_extra(id, labels);
    }
    CatalogTarget t{id, ratio, std::move(extra), combine_of(id)};
    t.negative_is_unknown = scraped.front().negative_is_unknown;
    if (id == FieldId::kServingEngineInfo) {
      // Another gpulens' serving_engine_info: its engine and model.
      const std::string_view model = model_of(labels);
      if (model.empty() || t.extra.empty()) return {};
      t.extra.set("model", model);
      t.one = true;
      t.combine = Combine::kFirst;
    }
    return {std::move(t)};
  }
  return {};
}

}  // namespace

std::vector<CatalogTarget> catalog_targets(std::string_view name, diagnose::LabelSpan labels) {
  // A histogram's _sum and _count go where its buckets go.
  for (std::string_view suffix : {std::string_view("_sum"), std::string_view("_count")}) {
    if (!name.ends_with(suffix)) continue;
    std::string bucket(name.substr(0, name.size() - suffix.size()));
    bucket += "_bucket";
    std::vector<diagnose::LabelPair> with_le(labels.begin(), labels.end());
    with_le.emplace_back("le", "+Inf");
    for (const CatalogTarget& t : through_mapping(bucket, with_le)) {
      if (field(t.field).type != MetricType::kHistogram) continue;
      CatalogTarget out{t.field, 1.0, serving_extra(name, labels, false)};
      out.histogram = suffix == "_sum" ? HistogramPart::kSum : HistogramPart::kCount;
      return {std::move(out)};
    }
  }
  if (auto t = through_mapping(name, labels); !t.empty()) return t;
  // vLLM's prefix-cache counters: the two parts of the hit ratio.
  if (const std::vector<Binding> b = diagnose::map_series(name, labels);
      b.size() == 1 && (b[0].kind == Binding::Kind::kPrefixHits || b[0].kind == Binding::Kind::kPrefixQueries)) {
    CatalogTarget t{FieldId::kServingPrefixCacheHitRatio, 1.0, serving_extra(name, labels, false), Combine::kSum};
    t.part = b[0].kind == Binding::Kind::kPrefixHits ? CatalogTarget::Part::kNumerator : CatalogTarget::Part::kDenominator;
    return {std::move(t)};
  }
  // DCGM names the catalog declares beside its fields (--dcgm-names), read
  // back: DCGM's unit * (1 / the row's scale) = the catalog's unit.
  if (const DcgmRow* row = find_dcgm_row(name); row != nullptr && row->value != DcgmValue::kLabel &&
                                                  row->field2 == FieldId::kCount && row->scale != 0) {
    CatalogTarget t{row->field, 1.0 / row->scale, {}};
    if (!row->extra.empty()) t.extra.set(row->extra.name, row->extra.value);
    t.percent_or_ratio = dcgm_percent_or_ratio(*row);
    return {std::move(t)};
  }
  return {};
}

std::optional<CatalogTarget> engine_info(std::string_view name, diagnose::LabelSpan labels) {
  if (engine_kind(recognise(name)).empty()) return std::nullopt;  // gpulens' own names carry their own info
  const std::string_view model = model_of(labels);
  Labels extra = serving_extra(name, labels, false);
  if (model.empty() || extra.empty()) return std::nullopt;
  extra.set("model", model);
  CatalogTarget t{FieldId::kServingEngineInfo, 1.0, std::move(extra), Combine::kFirst};
  t.one = true;
  return t;
}

Labels with_endpoint(const Labels& extra, std::string_view endpoint) {
  if (!extra.has("engine") || endpoint.empty() || extra.has("endpoint")) return extra;
  Labels out = extra;
  out.set("endpoint", endpoint);
  return out;
}

Exporter recognise(std::string_view f) {
  if (f.starts_with("DCGM_")) return Exporter::kDcgmExporter;
  if (f.starts_with("node_")) return Exporter::kNodeExporter;
  if (f.starts_with("vllm:")) return Exporter::kVllm;
  if (f.starts_with("sglang:")) return Exporter::kSglang;
  if (f.starts_with("tgi_")) return Exporter::kTgi;
  if (f.starts_with("nv_inference_") || f.starts_with("nv_gpu_") || f.starts_with("nv_energy_")) {
    return Exporter::kTriton;
  }
  if (f.starts_with("gpulens_")) return Exporter::kGpulens;
  return Exporter::kUnknown;
}

std::string_view exporter_name(Exporter e) {
  switch (e) {
    case Exporter::kDcgmExporter: return "dcgm-exporter";
    case Exporter::kNodeExporter: return "node_exporter";
    case Exporter::kVllm: return "vLLM";
    case Exporter::kSglang: return "SGLang";
    case Exporter::kTgi: return "TGI";
    case Exporter::kTriton: return "Triton";
    case Exporter::kGpulens: return "gpulens";
    case Exporter::kUnknown: break;
  }
  return "unknown";
}

}  // namespace gpulens::scrape

namespace gpulens::scrape {

std::string check_serving_value(FieldId f, double v, CatalogTarget::Part part) {
  const auto& row = field(f);
  if (row.layer != Layer::kServing) return "";
  char b[200];
  if (part != CatalogTarget::Part::kNone) {
    // A counter the ratio is made of: a count, named as the engine's.
    const char* what = part == CatalogTarget::Part::kNumerator ? "hits" : "queries";
    if (!std::isfinite(v) || v < 0 || v > 1e12) {
      std::snprintf(b, sizeof b, "%s's %s counter is %g, %s", std::string(row.name).c_str(), what, v,
                    !std::isfinite(v) ? "not a number an engine can mean" : v < 0 ? "negative" : "beyond any engine's count");
      return b;
    }
    return "";
  }
  if (!std::isfinite(v)) {
    std::snprintf(b, sizeof b, "%s is %g, not a number an engine can mean", std::string(row.name).c_str(), v);
    return b;
  }
  if (v < 0) {
    std::snprintf(b, sizeof b, "%s is %g, negative", std::string(row.name).c_str(), v);
    return b;
  }
  if ((f == FieldId::kServingKvCacheUsage || f == FieldId::kServingPrefixCacheHitRatio) && v > 1) {
    std::snprintf(b, sizeof b, "%s is %g, above 1 (a ratio)", std::string(row.name).c_str(), v);
    return b;
  }
  if (v > 1e12) {
    std::snprintf(b, sizeof b, "%s is %g, beyond any engine's count", std::string(row.name).c_str(), v);
    return b;
  }
  return "";
}

std::optional<double> ratio_of_increases(std::pair<double, double> before, std::pair<double, double> now) {
  const double found = now.first - before.first, looked_up = now.second - before.second;
  if (!(looked_up > 0) || found < 0 || found > looked_up) return std::nullopt;
  return found / looked_up;
}

namespace {

class PageSink final : public expfmt::SeriesSink {
 public:
  PageSink(std::string_view endpoint, std::string_view pid) : endpoint_(endpoint), pid_(pid) {}
  int64_t on_series(std::string_view name, diagnose::LabelSpan labels) override {
    std::vector<CatalogTarget> t = catalog_targets(name, labels);
    if (t.empty()) return -1;
    if (field(t.front().field).layer == Layer::kServing) {
      if (auto info = engine_info(name, labels)) t.push_back(std::move(*info));
    }
    for (CatalogTarget& x : t) {
      if (field(x.field).layer != Layer::kServing) continue;
      x.extra = with_endpoint(x.extra, endpoint_);
      if (!pid_.empty() && x.extra.has("endpoint")) x.extra.set("pid", pid_);
    }
    series_.push_back(std::move(t));
    return static_cast<int64_t>(series_.size() - 1);
  }
  void on_sample(int64_t handle, int64_t, double v) override {
    for (const CatalogTarget& t : series_[static_cast<size_t>(handle)]) {
      const double x = t.one ? 1.0 : v * t.scale * (t.percent_or_ratio && v > 1 ? 0.01 : 1.0);
      if (error_.empty() && !t.one) {
        if (std::string why = check_serving_value(t.field, x, t.part); !why.empty()) error_ = why;
      }
      if (std::isnan(x) || t.part != CatalogTarget::Part::kNone) continue;  // one page holds no increase
      auto [it, fresh] = values_.try_emplace({t.field, t.histogram, t.extra}, x);
      if (fresh) continue;
      if (t.combine == Combine::kSum) it->second += x;
      if (t.combine == Combine::kMax) it->second = std::max(it->second, x);
    }
  }
  std::string error_;
  std::map<std::tuple<FieldId, HistogramPart, Labels>, double> values_;

 private:
  std::string_view endpoint_, pid_;
  std::vector<std::vector<CatalogTarget>> series_;
};

}  // namespace

Result<std::vector<PageValue>> map_page(std::string_view page, std::string_view endpoint, std::string_view pid) {
  PageSink sink(endpoint, pid);
  expfmt::StreamParser parser(std::string(endpoint), sink);
  parser.start_scrape(0);
  Status s = parser.feed(page);
  if (s) s = parser.finish();
  if (!s) return s;
  if (!sink.error_.empty()) return invalid_argument(std::string(endpoint) + ": " + sink.error_);
  std::vector<PageValue> out;
  out.reserve(sink.values_.size());
  for (auto& [key, v] : sink.values_) out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), v});
  return out;
}

}  // namespace gpulens::scrape
