// Scrape source: one thread per target (HTTP get, parse, map), the latest
// result of each handed to the agent by sample().
#include "sources/scrape/scrape_source.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "expfmt/stream_parser.h"
#include "model/label_rules.h"
#include "model/series_budget.h"
#include "sources/scrape/catalog_targets.h"
#include "util/log.h"

namespace gpulens {
namespace {

using diagnose::LabelSpan;
using scrape::Exporter;

constexpr std::string_view kAccept =
    "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

// Why the HTTP client failed, in gpulens_source_down_reason's set: the
// deadline passed; the target refused the connection; its name or route is
// not there; TLS failed; the answer was larger than max_bytes; else error.
std::string_view client_reason(const Status& s) {
  const std::string& m = s.message();
  if (s.code() == Code::kDeadline) return "timeout";
  if (m.find("exceeds") != std::string::npos) return "too_large";
  if (m.find("refused") != std::string::npos) return "refused";
  if (m.starts_with("resolve ") || m.find("unreachable") != std::string::npos ||
      m.find("No route") != std::string::npos) {
    return "unreachable";
  }
  if (m.find("TLS") != std::string::npos) return "tls";
  return "error";
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string_view label_of(LabelSpan labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return {};
}

// The URL as shown in labels and logs: without user:password@.
std::string shown_url(const std::string& url) {
  const size_t scheme = url.find("://");
  const size_t at = url.find('@');
  const size_t slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (scheme == std::string::npos || at == std::string::npos || (slash != std::string::npos && at > slash)) {
    return url;
  }
  return url.substr(0, scheme + 3) + url.substr(at + 1);
}

// Whether a target's client must be rebuilt: its TLS or credentials changed.
bool same_client(const HttpClientOptions& a, const HttpClientOptions& b) { return a.tls == b.tls && a.auth == b.auth; }

// GPUs across targets: scraped UUIDs onto registry indices.
class GpuJoin {
 public:
  explicit GpuJoin(SeriesRegistry& registry) : registry_(registry) {}

  // The index of the GPU a series describes; -1 to drop it.
  int index(LabelSpan labels, const std::string& target) {
    std::string_view uuid = label_of(labels, "UUID");
    if (uuid.empty()) uuid = label_of(labels, "gpu_uuid");
    if (uuid.empty()) uuid = label_of(labels, "uuid");
    if (uuid.empty()) uuid = label_of(labels, "DCGM_FI_DEV_UUID");  // a label row of dcgm-exporter's CSV
    if (uuid.empty()) return -1;
    std::lock_guard lock(mu_);
    bool foreign = false;  // GPUs of another source (nvml, sim) are there
    std::set<int> used;
    {
      std::lock_guard reg(registry_.mutex());
      for (int i = 0; i < registry_.gpu_count(); ++i) {
        const GpuIdentity* g = registry_.gpu(i);
        if (g == nullptr || g->uuid.empty()) continue;
        if (g->uuid == uuid) return i;
        used.insert(i);
        foreign |= !ours_.contains(i);
      }
    }
    if (foreign) {
      if (dropped_.insert(std::string(uuid)).second) {
        log::warn("scrape_gpu_ignored", {{"target", target}, {"uuid", std::string(uuid)},
                                         {"reason", "not one of the GPUs the other sources found on this node"}});
      }
      return -1;
    }
    int idx = -1;
    const std::string_view gpu = label_of(labels, "gpu");
    if (!gpu.empty() && gpu.size() < 4 && gpu.find_first_not_of("0123456789") == std::string_view::npos) {
      idx = std::stoi(std::string(gpu));
    }
    if (idx < 0 || used.contains(idx)) {
      idx = 0;
      while (used.contains(idx)) ++idx;
    }
    GpuIdentity id;
    id.uuid = uuid;
    id.name = label_of(labels, "modelName");
    if (id.name.empty()) id.name = label_of(labels, "gpu_name");
    if (id.name.empty()) id.name = label_of(labels, "DCGM_FI_DEV_NAME");
    id.pci_bus_id = label_of(labels, "pci_bus_id");
    id.serial = label_of(labels, "DCGM_FI_DEV_SERIAL");
    id.driver = label_of(labels, "DCGM_FI_DRIVER_VERSION");
    if (id.driver.empty()) id.driver = label_of(labels, "DCGM_FI_SYSTEM_DRIVER_VERSION");  // dcgm-exporter 4.9
    if (const std::string_view dev = label_of(labels, "device"); dev.starts_with("nvidia") && dev.size() > 6 &&
                                                                  dev.size() < 10 &&
                                                                  dev.find_first_not_of("0123456789", 6) ==
                                                                      std::string_view::npos) {
      id.minor = std::stoi(std::string(dev.substr(6)));
    }
    registry_.set_gpu(idx, std::move(id));
    ours_.insert(idx);
    log::info("scrape_gpu", {{"target", target}, {"gpu", std::to_string(idx)}, {"uuid", std::string(uuid)}});
    return idx;
  }

  // True when the scrape registered GPU `index` (no other GPU source).
  bool ours(int index) {
    std::lock_guard lock(mu_);
    return ours_.contains(index);
  }

 private:
  SeriesRegistry& registry_;
  std::mutex mu_;
  std::set<int> ours_;
  std::set<std::string> dropped_;
};

// The series budget of all targets together: catalog series set within
// kHeldAfterRemovalMs (series_budget.h), summed over targets.
struct ScrapeBudget {
  std::atomic<size_t> held{0};
  std::atomic<size_t> max_total{0};
};

// What one target's parse produces: catalog values by slot, series of one
// family on one slot combined by their target's rule (summed CPU seconds
// over CPUs), another family landing on a taken slot ignored (two DCGM
// names of one field).
class TargetSink final : public expfmt::SeriesSink {
 public:
  TargetSink(SeriesRegistry& registry, GpuJoin& gpus, std::string target, const ScrapeOptions& o,
             ScrapeBudget& budget)
      : registry_(registry),
        gpus_(gpus),
        target_(std::move(target)),
        label_limits_{static_cast<size_t>(o.max_labels), static_cast<size_t>(o.max_label_length),
                      static_cast<size_t>(o.max_label_length)},
        max_series_(static_cast<size_t>(o.max_series)),
        budget_(budget) {}
  ~TargetSink() { budget_.held -= held_.size(); }

  // Starts a scrape attempt at `now_ms` (every attempt, failed ones too: a
  // series unused for more than one attempt looks its slots up again).
  void begin(int64_t now_ms) {
    values_.clear();
    ++round_;
    now_ms_ = now_ms;
    const size_t before = held_.size();
    std::erase_if(held_, [&](const auto& h) { return h.second + kHeldAfterRemovalMs <= now_ms; });
    budget_.held -= before - held_.size();
    pods_.clear();
    mig_pods_.clear();
    exporters_.clear();
    mapped_series_ = 0;
    bad_serving_.clear();
    ratio_parts_.clear();
  }
  // The first serving value of this scrape no engine can mean ("" none).
  const std::string& bad_serving() const { return bad_serving_; }

  int64_t on_series(std::string_view name, LabelSpan labels) override {
    const Exporter exporter = scrape::recognise(name);
    exporters_seen_.insert(exporter);
    if (name == "gpulens_simulated") simulated_ = true;  // another gpulens running its simulator
    std::vector<scrape::CatalogTarget> targets = scrape::catalog_targets(name, labels);
    if (targets.empty()) return -1;
    if (field(targets.front().field).layer == Layer::kServing) {
      if (auto info = scrape::engine_info(name, labels)) targets.push_back(std::move(*info));
    }
    // The one rule of outside labels (model/label_rules.h): a series that
    // breaks it is dropped, and counted at every scrape that gives it.
    if (LabelCheck c = check_labels(labels, label_limits_); !c) {
      Handle h;
      h.dropped = reason(c.problem);
      h.dropped_message = printable(name) + ": " + c.message;
      handles_.push_back(std::move(h));
      return static_cast<int64_t>(handles_.size() - 1);
    }
    int entity = kNodeEntity;
    if (field(targets.front().field).scope == Scope::kGpu) {
      entity = gpus_.index(labels, target_);
      if (entity < 0) return -1;
    }
    Handle h;
    h.last_round = round_;
    h.identity = identity_id(name, labels);
    h.family = family_id(name);
    h.entity = entity;
    h.exporter = exporter;
    if (entity >= 0) {
      h.pod = {std::string(label_of(labels, "container")), std::string(label_of(labels, "namespace")),
               std::string(label_of(labels, "pod"))};
      // A MIG instance of dcgm-exporter (GPU_I_ID): its own quantities go
      // to the instance's gpu_mig_* series, the device-wide ones (which
      // every instance repeats) to the parent GPU's.
      if (const std::string_view gi = label_of(labels, "GPU_I_ID"); !gi.empty()) {
        if (gi.size() > 3 || gi.find_first_not_of("0123456789") != std::string_view::npos) return -1;
        h.mig_gi = std::stoi(std::string(gi));
        h.mig_profile = label_of(labels, "GPU_I_PROFILE");
      }
    }
    for (const auto& t : targets) {
      // A serving engine's series carry the target they came from: two
      // engines on one node stay two (docs/serving.md).
      Out o{kNoSlot, t.scale, t.field,
            field(t.field).layer == Layer::kServing ? scrape::with_endpoint(t.extra, target_) : t.extra, t.combine};
      o.one = t.one;
      o.part = t.part;
      o.histogram = t.histogram;
      o.percent_or_ratio = t.percent_or_ratio;
      o.negative_is_unknown = t.negative_is_unknown;
      if (h.mig_gi >= 0) {
        FieldId own{};
        const MigRead read = mig_read(t.field, own);
        if (read == MigRead::kNone) continue;
        if (read == MigRead::kOwn) {
          o.field = own;
          o.own = true;
        } else {
          o.combine = scrape::Combine::kFirst;
        }
      }
      if (!registry_.collects(o.field)) continue;
      // The slot is taken at the first sample, once the budgets have room
      // for the series: one beyond them costs no slot.
      o.unresolved = !o.own;
      h.mig_own |= o.own;
      h.outs.push_back(std::move(o));
    }
    if (h.mig_gi >= 0 && gpus_.ours(entity) && registry_.collects(FieldId::kGpuMigInfo)) {
      // The scrape found this GPU: its instances are known through it alone.
      h.outs.push_back({kNoSlot, 0, FieldId::kGpuMigInfo, Labels{}, scrape::Combine::kFirst, true, true});
      h.mig_own = true;
    }
    if (h.outs.empty()) return -1;
    handles_.push_back(std::move(h));
    return static_cast<int64_t>(handles_.size() - 1);
  }

  void on_sample(int64_t handle, int64_t, double v) override {
    Handle& h = handles_[static_cast<size_t>(handle)];
    // A serving engine's value no engine can mean (NaN, negative, a KV-cache
    // usage above 1): the whole page is refused (docs/serving.md, "Bad pages").
    for (const Out& o : h.outs) {
      if (!bad_serving_.empty() || o.one || field(o.field).layer != Layer::kServing) continue;
      const double x = v * o.scale * (o.percent_or_ratio && v > 1 ? 0.01 : 1.0);
      if (std::string why = scrape::check_serving_value(o.field, x, o.part); !why.empty()) bad_serving_ = why;
    }
    if (std::isnan(v)) return;  // no value: absent
    if (!h.dropped.empty()) {
      drop(h.dropped, h.dropped_message);
      return;
    }
    // The same series twice in one page (byte for byte, or its labels in
    // another order): the first is kept, never the two added up.
    if (identity_round_[h.identity] == round_) {
      drop("duplicate", target_ + ": series given twice in one scrape");
      return;
    }
    identity_round_[h.identity] = round_;
    if (h.last_round + 1 < round_) {
      // Unused for a while: the history may have reclaimed the slots of its
      // series (absent for a whole window), so look them up again.
      for (Out& o : h.outs) {
        if (o.slot != kNoSlot) o.slot = registry_.slot(o.field, h.entity, o.extra, o.histogram);
      }
    }
    if (h.mig_own) resolve_mig(h);
    h.last_round = round_;
    exporters_.insert(h.exporter);
    ++mapped_series_;
    if (h.entity >= 0 && h.exporter == Exporter::kDcgmExporter) {
      // A GPU (instance) dcgm-exporter lists: its pod, or none.
      GpuPod& pod = h.mig_gi >= 0 ? mig_pods_[{h.entity, static_cast<unsigned>(h.mig_gi)}] : pods_[h.entity];
      if (pod.pod.empty()) pod = h.pod;
    }
    for (Out& o : h.outs) {
      if (o.part != scrape::CatalogTarget::Part::kNone) {
        // A counter of a ratio: summed here, the ratio set by finish_ratios().
        auto& [num, den] = ratio_parts_[o.extra];
        (o.part == scrape::CatalogTarget::Part::kNumerator ? num : den) += v * o.scale;
        continue;
      }
      if (o.unresolved) {
        if (!held_.contains(held_key(o, h.entity)) && !room()) {
          drop_limit();
          continue;
        }
        o.slot = registry_.slot(o.field, h.entity, o.extra, o.histogram);
        o.unresolved = false;
      }
      if (o.slot == kNoSlot) continue;  // a MIG instance not known yet
      if (o.negative_is_unknown && v < 0) continue;  // a link speed of -1 (unknown): absent
      // DCGM's _UTIL_RATIO names: percent in DCGM 4.6.x, a ratio from 4.7.
      const double x = o.one ? 1.0 : v * o.scale * (o.percent_or_ratio && v > 1 ? 0.01 : 1.0);
      const LabelKind kind =
          field(o.field).type == MetricType::kCounter ? LabelKind::kCounter : LabelKind::kGauge;
      if (LabelCheck c = check_value(x, kind); !c) {
        drop(reason(c.problem), target_ + ": " + std::string(field(o.field).name) + ": " + c.message);
        continue;
      }
      if (o.slot >= stamp_.size()) {
        stamp_.resize(o.slot + 1024, 0);
        pos_.resize(o.slot + 1024, 0);
        family_.resize(o.slot + 1024, 0);
      }
      if (stamp_[o.slot] != round_ && !admit(o, h.entity)) continue;
      if (stamp_[o.slot] == round_) {
        if (family_[o.slot] != h.family) continue;  // another name of the field came first
        double& have = values_[pos_[o.slot]].value;
        if (o.combine == scrape::Combine::kSum) have += x;
        if (o.combine == scrape::Combine::kMax) have = std::max(have, x);
        continue;
      }
      stamp_[o.slot] = round_;
      pos_[o.slot] = static_cast<uint32_t>(values_.size());
      family_[o.slot] = h.family;
      values_.push_back({o.slot, x});
    }
  }

  // After a page was read whole: the prefix-cache hit ratio of each engine
  // whose hits and queries counters it gave, from their increases since
  // the last page that gave them (catalog_targets.h ratio_of_increases).
  void finish_ratios() {
    for (const auto& [extra, now] : ratio_parts_) {
      std::optional<double> r;
      if (auto it = ratio_before_.find(extra); it != ratio_before_.end()) r = scrape::ratio_of_increases(it->second, now);
      ratio_before_[extra] = now;
      if (!r) continue;
      Out o{kNoSlot, 1.0, FieldId::kServingPrefixCacheHitRatio, extra, scrape::Combine::kMax};
      if (!held_.contains(held_key(o, kNodeEntity)) && !room()) {
        drop_limit();
        continue;
      }
      o.slot = registry_.slot(o.field, kNodeEntity, extra);
      if (o.slot >= stamp_.size()) {
        stamp_.resize(o.slot + 1024, 0);
        pos_.resize(o.slot + 1024, 0);
        family_.resize(o.slot + 1024, 0);
      }
      if (stamp_[o.slot] == round_ || !admit(o, kNodeEntity)) continue;  // the page gave the ratio itself
      stamp_[o.slot] = round_;
      pos_[o.slot] = static_cast<uint32_t>(values_.size());
      family_[o.slot] = 0;
      values_.push_back({o.slot, *r});
    }
    std::erase_if(ratio_before_, [&](const auto& kv) { return !ratio_parts_.contains(kv.first); });
  }

  std::vector<Frame::Value>& values() { return values_; }
  // The pods of the GPUs and GPU instances dcgm-exporter listed in this
  // scrape (empty: listed without one).
  const std::map<int, GpuPod>& pods() const { return pods_; }
  const std::map<std::pair<int, unsigned>, GpuPod>& mig_pods() const { return mig_pods_; }
  // Exporters recognised among the series mapped in this scrape, else among
  // all it saw; "unknown" when none.
  std::string exporters() const {
    auto names = [](const std::set<Exporter>& exporters) {
      std::string out;
      for (Exporter e : exporters) {
        if (e != Exporter::kUnknown) out += (out.empty() ? "" : ",") + std::string(scrape::exporter_name(e));
      }
      return out;
    };
    std::string out = names(exporters_);
    if (out.empty()) out = names(exporters_seen_);  // nothing mapped: say what it looked like
    return out.empty() ? "unknown" : out;
  }
  size_t mapped_series() const { return mapped_series_; }
  bool simulated() const { return simulated_; }
  // Series dropped so far, by reason (every scrape adds its own), and one
  // message of the latest scrape that dropped any ("" when none did).
  const std::map<std::string, uint64_t>& dropped() const { return dropped_; }
  const std::string& drop_message() const { return drop_message_; }
  uint64_t dropped_round() const { return dropped_round_; }
  uint64_t round() const { return round_; }
  // Takes over what `old` (the sink this one replaces) counted and holds.
  void carry_over(TargetSink& old) {
    dropped_ = old.dropped_;
    held_ = std::move(old.held_);
    old.held_.clear();
  }

 private:
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  struct Out {
    uint32_t slot;  // kNoSlot: a MIG instance's series, until its instance is known
    double scale;
    FieldId field;
    Labels extra;
    scrape::Combine combine;
    bool own = false;  // a gpu_mig_* series: `extra` is the instance's labels
    bool one = false;  // gpu_mig_info: 1 whatever the value
    scrape::CatalogTarget::Part part = scrape::CatalogTarget::Part::kNone;
    bool percent_or_ratio = false;
    bool negative_is_unknown = false;
    bool unresolved = false;  // no slot looked up yet (kNoSlot)
    HistogramPart histogram = HistogramPart::kNone;
  };
  struct Handle {
    std::vector<Out> outs;
    std::string_view dropped;     // a reason: the series breaks the label rules
    std::string dropped_message;  // what, for the log
    uint32_t identity = 0;        // the series' name and sorted labels (identity_id)
    uint64_t last_round = 0;  // the scrape attempt that last used it
    uint32_t family = 0;
    int entity = kNodeEntity;
    Exporter exporter = Exporter::kUnknown;
    GpuPod pod;
    int mig_gi = -1;          // GPU_I_ID of a MIG instance's series
    std::string mig_profile;  // its GPU_I_PROFILE
    bool mig_own = false;     // some outs are the instance's own series
    Labels mig_extra;         // their labels; empty while not known
  };

  // The extra labels of GPU instance `gi` of GPU `gpu`: the agent's own
  // (nvml's MIG devices) when another source found the GPU, so that the
  // scrape fills the very series it lacks; the scrape's when it found the
  // GPU. Looked up once per scrape per instance, so that the instance's
  // series follow when nvml lists it late or re-creates it under another
  // MIG UUID; none (no slot) while nvml lists no such instance, or splits
  // it into several compute instances (dcgm-exporter's value is the GPU
  // instance's, none of theirs).
  void resolve_mig(Handle& h) {
    const auto key = std::make_pair(h.entity, static_cast<unsigned>(h.mig_gi));
    auto [it, fresh] = mig_extra_.try_emplace(key);
    if (fresh || it->second.round != round_) {
      it->second = {round_, lookup_mig(h.entity, h.mig_gi, h.mig_profile)};
    }
    const MigLookup& found = it->second.found;
    const Labels extra = found.split ? Labels() : found.extra;
    if (extra == h.mig_extra) return;
    h.mig_extra = extra;
    for (Out& o : h.outs) {
      if (!o.own) continue;
      o.extra = extra;
      o.slot = extra.empty() ? kNoSlot : registry_.slot(o.field, h.entity, extra);
    }
  }
  struct MigLookup {
    Labels extra;
    bool split = false;
  };
  MigLookup lookup_mig(int gpu, int gi, const std::string& profile) {
    if (gpus_.ours(gpu)) return {Labels{{"mig_profile", profile}, {"gpu_instance_id", std::to_string(gi)}}};
    MigLookup out;
    const std::string want = std::to_string(gi);
    std::lock_guard lock(registry_.mutex());
    for (uint32_t s : registry_.slots_of(FieldId::kGpuMigInfo)) {
      const Series& series = registry_.series(s);
      if (series.gpu != gpu || series.extra.get("gpu_instance_id") != want) continue;
      if (!out.extra.empty() && out.extra != series.extra) return {Labels{}, true};
      out.extra = series.extra;
    }
    return out;
  }
  void drop(std::string_view why, std::string message) {
    ++dropped_[std::string(why)];
    if (dropped_round_ != round_) drop_message_ = std::move(message);
    dropped_round_ = round_;
  }
  static std::string held_key(const Out& o, int entity) {
    return std::to_string(static_cast<int>(o.field)) + "|" + std::to_string(entity) + "|" +
           std::to_string(static_cast<int>(o.histogram)) + "|" + o.extra.render();
  }
  bool room() const { return held_.size() < max_series_ && budget_.held.load() < budget_.max_total.load(); }
  void drop_limit() {
    const bool own = held_.size() >= max_series_;
    drop("limit", target_ + ": more than " + std::to_string(own ? max_series_ : budget_.max_total.load()) +
                      (own ? " catalog series from this target" : " catalog series from all targets") + " within " +
                      std::to_string(kHeldAfterRemovalMs / 1000) + " s (" +
                      (own ? "source.scrape.max_series" : "source.scrape.max_series_total") + ")");
  }
  // Whether the series of `o` (slot resolved, not set yet this scrape) may
  // be set: the target holds it already, or both budgets have room (the
  // target's and all targets').
  bool admit(const Out& o, int entity) {
    std::string key = held_key(o, entity);
    if (auto it = held_.find(key); it != held_.end()) {
      it->second = now_ms_;
      return true;
    }
    if (!room()) {
      drop_limit();
      return false;
    }
    held_.emplace(std::move(key), now_ms_);
    ++budget_.held;
    registry_.mark_short_lived(o.slot);
    return true;
  }
  // A number per distinct series: its name and its labels sorted, so that
  // one series written twice in another label order is one series.
  uint32_t identity_id(std::string_view name, LabelSpan labels) {
    std::vector<diagnose::LabelPair> sorted(labels.begin(), labels.end());
    std::sort(sorted.begin(), sorted.end());
    std::string key(name);
    for (const auto& [k, v] : sorted) {
      key += '\x1f';
      key += k;
      key += '\x1e';
      key += v;
    }
    auto [it, fresh] = identities_.try_emplace(std::move(key), static_cast<uint32_t>(identities_.size()));
    if (fresh) identity_round_.push_back(0);
    return it->second;
  }
  uint32_t family_id(std::string_view name) {
    auto it = families_.find(std::string(name));
    if (it != families_.end()) return it->second;
    const auto id = static_cast<uint32_t>(families_.size() + 1);
    families_.emplace(std::string(name), id);
    return id;
  }

  SeriesRegistry& registry_;
  GpuJoin& gpus_;
  std::string target_;
  std::vector<Handle> handles_;
  std::unordered_map<std::string, uint32_t> families_;
  std::vector<Frame::Value> values_;
  std::vector<uint64_t> stamp_;
  std::vector<uint32_t> pos_, family_;
  uint64_t round_ = 0;
  std::map<int, GpuPod> pods_;
  std::map<std::pair<int, unsigned>, GpuPod> mig_pods_;
  struct MigExtra {
    uint64_t round = 0;
    MigLookup found;
  };
  std::map<std::pair<int, unsigned>, MigExtra> mig_extra_;
  std::set<Exporter> exporters_, exporters_seen_;
  size_t mapped_series_ = 0;
  bool simulated_ = false;
  LabelLimits label_limits_;
  size_t max_series_;
  ScrapeBudget& budget_;
  int64_t now_ms_ = 0;
  std::unordered_map<std::string, int64_t> held_;  // series (held_key) -> the last scrape that set it
  std::unordered_map<std::string, uint32_t> identities_;
  std::vector<uint64_t> identity_round_;        // per identity: the round that last sampled it
  std::map<std::string, uint64_t> dropped_;
  std::string drop_message_;
  uint64_t dropped_round_ = 0;
  std::string bad_serving_;
  // Prefix-cache hits and queries by serving series (extra): this page's
  // sums, and those of the last page that gave them.
  std::map<Labels, std::pair<double, double>> ratio_parts_, ratio_before_;
};

// One target: its thread, client, parser and latest result.
class Target {
 public:
  Target(std::string url, const ScrapeOptions& o, SeriesRegistry& registry, GpuJoin& gpus, ScrapeBudget& budget)
      : url_(std::move(url)),
        shown_(shown_url(url_)),
        interval_ms_(o.interval_ms),
        options_(o),
        registry_(registry),
        gpus_(gpus),
        budget_(budget) {
    HttpClientOptions c = o.client;
    c.timeout_ms = o.timeout_ms;
    c.max_body_bytes = static_cast<size_t>(o.max_bytes);
    c.cancel = &cancel_;
    client_ = std::make_unique<HttpClient>(std::move(c));
    sink_ = std::make_unique<TargetSink>(registry, gpus, shown_, options_, budget_);
    parser_ = make_parser();
  }
  ~Target() { stop(); }

  void start() { thread_ = std::thread([this] { run(); }); }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    cancel_.cancel();
    if (thread_.joinable()) thread_.join();
  }
  // Waits (at most `ms`) for the first scrape to end.
  void wait_first(int64_t ms) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return attempted_ || stopping_; });
  }
  const std::string& url() const { return url_; }
  const std::string& shown() const { return shown_; }

  struct State {
    bool up = false;
    std::string error;
    std::string_view reason = "error";  // while down: gpulens_source_down_reason's label
    double duration = 0;
    int64_t last_ok_ms = 0;
    bool simulated = false;  // the target said gpulens_simulated: its values are made up
    std::map<std::string, uint64_t> dropped;  // series dropped so far, by reason
  };
  // Appends the latest values to `frame`, except series an earlier target
  // of this round set (`taken[slot] == round`); returns the state.
  State copy_into(Frame& frame, std::vector<uint64_t>& taken, uint64_t round) {
    std::lock_guard lock(mu_);
    for (const auto& v : values_) {
      if (v.slot >= taken.size()) taken.resize(v.slot + 1024, 0);
      if (taken[v.slot] == round) continue;
      taken[v.slot] = round;
      frame.set_slot(v.slot, v.value);
    }
    return state_;
  }

 private:
  std::unique_ptr<expfmt::StreamParser> make_parser() {
    expfmt::StreamLimits limits;
    limits.max_bytes = ~0ull;           // the client bounds the body
    // Mapped series remembered across scrapes (their handles): a few times
    // the series budget, so that a target rotating label values starts
    // afresh (one failed scrape) instead of growing.
    limits.max_series = std::max<uint64_t>(16 * static_cast<uint64_t>(options_.max_series), 20'000);
    limits.max_ignored_series = 100'000;
    parser_limit_ = limits.max_series;
    return std::make_unique<expfmt::StreamParser>(shown_, *sink_, limits);
  }

  // One scrape; `why` is the reason a failed one gives
  // (gpulens_source_down_reason, the catalog's set).
  Status scrape_once(int64_t t0, std::string_view& why) {
    sink_->begin(t0);
    auto r = client_->get(url_, {{"Accept", std::string(kAccept)}});
    if (!r) {
      why = client_reason(r.status());
      return r.status();
    }
    why = "http_status";
    if (r->status != 200) return unavailable("HTTP " + std::to_string(r->status));
    why = "parse_error";
    // A binary answer (compressed without Content-Encoding, not text at
    // all) is down, not "0 series".
    if (r->body.find('\0') != std::string::npos) {
      return invalid_argument("the answer is binary (a NUL byte), not the Prometheus text format");
    }
    if (!r->body.empty() && r->body.back() != '\n') {
      // Framed by Content-Length or chunked encoding, the answer is whole
      // (the client fails one that stops early): its last line only lacks
      // the newline, as real serving engines' pages may. Unframed, the body
      // ends with the connection, and a page cut there looks the same: down.
      if (r->header("content-length").empty() && r->header("transfer-encoding").empty()) {
        return invalid_argument(
            "the answer does not end with a newline and has no length: cut short, or not the Prometheus text format");
      }
      r->body.push_back('\n');
    }
    parser_->start_scrape(t0);
    Status s = parser_->feed(r->body);
    if (s) s = parser_->finish();
    if (s && sink_->bad_serving().empty()) sink_->finish_ratios();
    if (s && !sink_->bad_serving().empty()) {
      why = "bad_values";
      s = invalid_argument(sink_->bad_serving() + ": the engine's page is not read, its engine not judged");
    }
    if (!s && parser_->stats().series >= parser_limit_) {
      why = "too_many_series";
      // Series churn past the bound: start afresh next time (the counts of
      // dropped series carry over).
      auto fresh = std::make_unique<TargetSink>(registry_, gpus_, shown_, options_, budget_);
      fresh->carry_over(*sink_);
      sink_ = std::move(fresh);
      parser_ = make_parser();
    }
    return s;
  }

  void run() {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      const int64_t t0 = now_ms();
      const auto c0 = std::chrono::steady_clock::now();
      std::string_view why = "error";
      Status s = scrape_once(t0, why);
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      if (s) publish_pods();
      log_drops(t0);
      lock.lock();
      if (stopping_) break;
      state_.duration = took;
      state_.dropped = sink_->dropped();
      if (s) {
        values_.swap(sink_->values());
        state_.up = true;
        state_.error.clear();
        state_.last_ok_ms = t0;
        state_.simulated = sink_->simulated();
      } else {
        values_.clear();
        state_.up = false;
        state_.reason = why;
        state_.error = s.message().starts_with(shown_) ? s.message() : shown_ + ": " + s.message();
      }
      attempted_ = true;
      log_change(s);
      cv_.notify_all();
      const int64_t wait = std::max<int64_t>(0, t0 + interval_ms_ - now_ms());
      cv_.wait_for(lock, std::chrono::milliseconds(wait), [&] { return stopping_; });
    }
  }

  // The pods dcgm-exporter attached, as the scrape's attribution (the
  // agent's own wins where it has one): those of the GPUs (instances) it
  // listed, and none for those it listed before and no longer does. Kept
  // while the target is down: an assignment outlives a timeout.
  void publish_pods() {
    std::set<int> gpus;
    for (const auto& [gpu, pod] : sink_->pods()) {
      registry_.set_gpu_pod(gpu, pod, PodOrigin::kScrape);
      gpus.insert(gpu);
    }
    std::set<std::pair<int, unsigned>> instances;
    for (const auto& [key, pod] : sink_->mig_pods()) {
      registry_.set_mig_pod(key.first, key.second, pod, PodOrigin::kScrape);
      instances.insert(key);
    }
    forget_pods(gpus, instances);
    pod_gpus_ = std::move(gpus);
    pod_instances_ = std::move(instances);
    std::lock_guard lock(mu_);
    pods_ = sink_->pods();
  }

 public:
  // The pods of the GPUs dcgm-exporter listed in its last good scrape.
  std::map<int, GpuPod> pods() {
    std::lock_guard lock(mu_);
    return pods_;
  }

  // Clears the pods this target attached, except those in `keep`.
  void forget_pods(const std::set<int>& keep = {}, const std::set<std::pair<int, unsigned>>& keep_mig = {}) {
    for (int gpu : pod_gpus_) {
      if (!keep.contains(gpu)) registry_.set_gpu_pod(gpu, {}, PodOrigin::kScrape);
    }
    for (const auto& [gpu, gi] : pod_instances_) {
      if (!keep_mig.contains({gpu, gi})) registry_.set_mig_pod(gpu, gi, {}, PodOrigin::kScrape);
    }
  }

 private:
  // At most one line a minute while a target's series are being dropped.
  void log_drops(int64_t now) {
    if (sink_->dropped_round() != sink_->round() || now - last_drop_log_ms_ < 60'000) return;
    uint64_t n = 0;
    for (const auto& [why, count] : sink_->dropped()) n += count;
    log::warn("scrape_series_dropped", {{"target", shown_}, {"dropped_total", std::to_string(n)},
                                        {"example", sink_->drop_message()},
                                        {"note", "counted in gpulens_series_dropped_total; logged once a minute"}});
    last_drop_log_ms_ = now;
  }

  // One line per change of state, and of reason while down (under mu_).
  void log_change(const Status& s) {
    const int up = s ? 1 : 0;
    const std::string exporters = s ? sink_->exporters() : "";
    if (up == logged_up_ && (up ? exporters == logged_exporters_ : s.message() == logged_error_)) return;
    if (up) {
      log::info("scrape_target_up", {{"target", shown_}, {"recognised", exporters},
                                     {"mapped_series", std::to_string(sink_->mapped_series())}});
    } else {
      log::warn("scrape_target_down", {{"target", shown_}, {"reason", state_.error}});
    }
    logged_up_ = up;
    logged_error_ = up ? "" : s.message();
    logged_exporters_ = exporters;
  }

  std::string url_, shown_;
  int64_t interval_ms_;
  ScrapeOptions options_;
  SeriesRegistry& registry_;
  GpuJoin& gpus_;
  ScrapeBudget& budget_;
  uint64_t parser_limit_ = 0;
  int64_t last_drop_log_ms_ = 0;
  HttpCancel cancel_;
  std::unique_ptr<HttpClient> client_;
  std::unique_ptr<TargetSink> sink_;
  std::unique_ptr<expfmt::StreamParser> parser_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false, attempted_ = false;
  std::vector<Frame::Value> values_;
  State state_{false, "not scraped yet", "error", 0, 0};
  int logged_up_ = -1;
  std::string logged_error_, logged_exporters_;
  std::map<int, GpuPod> pods_;  // under mu_: the last good scrape's, for gpu_pod_info
  std::set<int> pod_gpus_;  // GPUs (instances) whose pod this target published
  std::set<std::pair<int, unsigned>> pod_instances_;
};

class ScrapeSource final : public Source {
 public:
  explicit ScrapeSource(ScrapeOptions o) : options_(std::move(o)) {
    budget_.max_total = static_cast<size_t>(options_.max_series_total);
  }
  ~ScrapeSource() override {
    std::lock_guard lock(mu_);
    targets_.clear();  // each stops and joins its thread, cancelling a scrape in flight
  }

  std::string_view name() const override { return "scrape"; }
  bool fills_gaps() const override { return true; }

  Status open(SeriesRegistry& registry) override {
    if (options_.targets.empty()) return invalid_argument("no targets (--scrape URL, source.scrape.targets)");
    registry_ = &registry;
    gpus_ = std::make_unique<GpuJoin>(registry);
    return Status::ok();
  }

  Status sample(Frame& frame) override {
    std::lock_guard lock(mu_);
    if (!started_) {
      // Threads start at the first sample, once every other source opened
      // (their GPUs are the ones scraped GPUs join); the agent's first
      // sample waits for the first answers, at most one timeout.
      started_ = true;
      start_targets(options_.targets);
      for (auto& t : targets_) t->wait_first(options_.timeout_ms + 500);
    }
    std::string down;
    size_t n_down = 0;
    const int64_t now = frame.time_ms();
    ++round_;
    for (auto& t : targets_) {
      const Target::State st = t->copy_into(frame, taken_, round_);
      const Labels src{{"source", "scrape"}, {"target", t->shown()}};
      frame.set_node(FieldId::kAgentSourceUp, src, st.up ? 1 : 0);
      frame.set_node(FieldId::kAgentCollectionDuration, src, st.duration);
      if (st.last_ok_ms > 0) {
        frame.set_node(FieldId::kAgentSourceAge, src, std::max<int64_t>(0, now - st.last_ok_ms) / 1000.0);
      }
      for (const auto& [why, n] : st.dropped) {
        Labels dropped = src;
        dropped.set("reason", why);
        frame.set_node(FieldId::kAgentSeriesDropped, dropped, static_cast<double>(n));
      }
      if (st.up && st.simulated) frame.set_node(FieldId::kAgentSimulated, Labels{{"scenario", "scrape " + t->shown()}}, 1);
      if (!st.up) {
        Labels down_reason = src;
        down_reason.set("reason", st.reason);
        frame.set_node(FieldId::kAgentSourceDownReason, down_reason, 1);
        ++n_down;
        down += (down.empty() ? "" : "; ") + st.error;
      }
    }
    publish_pod_info(frame);
    if (n_down == 0) return Status::ok();
    return unavailable(std::to_string(n_down) + " of " + std::to_string(targets_.size()) + " targets down: " + down);
  }

  Status reconfigure(const SourceOptions& all) override {
    const ScrapeOptions& o = all.scrape;
    if (o.targets.empty()) return invalid_argument("no targets left: keeping the running ones");
    std::lock_guard lock(mu_);
    const bool same_settings = o.interval_ms == options_.interval_ms && o.timeout_ms == options_.timeout_ms &&
                               o.max_bytes == options_.max_bytes && o.max_series == options_.max_series &&
                               o.max_labels == options_.max_labels &&
                               o.max_label_length == options_.max_label_length &&
                               same_client(o.client, options_.client);
    std::vector<std::string> added, removed;
    for (const auto& u : o.targets) {
      if (std::find(options_.targets.begin(), options_.targets.end(), u) == options_.targets.end() ||
          !same_settings) {
        added.push_back(u);
      }
    }
    for (const auto& u : options_.targets) {
      if (std::find(o.targets.begin(), o.targets.end(), u) == o.targets.end() || !same_settings) {
        removed.push_back(shown_url(u));
      }
    }
    const int64_t interval = o.interval_ms, timeout = o.timeout_ms, max_bytes = o.max_bytes;
    options_.interval_ms = interval;
    options_.timeout_ms = timeout;
    options_.max_bytes = max_bytes;
    options_.max_series = o.max_series;
    options_.max_labels = o.max_labels;
    options_.max_label_length = o.max_label_length;
    options_.max_series_total = o.max_series_total;
    budget_.max_total = static_cast<size_t>(o.max_series_total);
    options_.client = o.client;
    if (!started_) {
      options_.targets = o.targets;
      return Status::ok();
    }
    // Stop the removed (or all, when settings changed), start the new.
    std::vector<std::unique_ptr<Target>> kept;
    for (auto& t : targets_) {
      if (std::find(o.targets.begin(), o.targets.end(), t->url()) != o.targets.end() && same_settings) {
        kept.push_back(std::move(t));
      } else {
        t->stop();
        t->forget_pods();  // a removed dcgm-exporter attributes nothing any more
      }
    }
    targets_.clear();  // the others stop here
    targets_ = std::move(kept);
    options_.targets = o.targets;
    start_targets(added);
    std::string a, r;
    for (const auto& u : added) a += (a.empty() ? "" : ",") + shown_url(u);
    for (const auto& u : removed) r += (r.empty() ? "" : ",") + u;
    log::info("scrape_targets", {{"added", a.empty() ? "none" : a}, {"removed", r.empty() ? "none" : r},
                                 {"targets", std::to_string(targets_.size())}});
    return Status::ok();
  }

 private:
  // gpu_pod_info{...,origin="dcgm-exporter"} 1 for each GPU a scraped
  // dcgm-exporter assigns to a pod and the agent's own attribution does
  // not: the pod labels its DCGM names carry, in the native names too. The
  // first target naming a GPU's pod wins.
  void publish_pod_info(Frame& frame) {
    std::set<int> done;
    for (auto& t : targets_) {
      for (const auto& [gpu, pod] : t->pods()) {
        if (pod.pod.empty() || !done.insert(gpu).second) continue;
        if (!registry_->gpu_pod(gpu, PodOrigin::kAgent).pod.empty()) continue;
        std::string uuid;
        {
          std::lock_guard lock(registry_->mutex());
          if (const GpuIdentity* id = registry_->gpu(gpu)) uuid = id->uuid;
        }
        if (uuid.empty()) continue;
        frame.set_node(FieldId::kGpuPodInfo,
                       Labels{{"resource", "nvidia.com/gpu"},
                              {"device", uuid},
                              {"gpu_uuid", uuid},
                              {"namespace", pod.namespace_},
                              {"pod", pod.pod},
                              {"container", pod.container},
                              {"origin", "dcgm-exporter"}},
                       1);
      }
    }
  }

  void start_targets(const std::vector<std::string>& urls) {
    for (const auto& u : urls) {
      auto t = std::make_unique<Target>(u, options_, *registry_, *gpus_, budget_);
      t->start();
      targets_.push_back(std::move(t));
    }
    // Keep the configured order (labels and the down message read it).
    std::vector<std::unique_ptr<Target>> ordered;
    for (const auto& u : options_.targets) {
      for (auto& t : targets_) {
        if (t && t->url() == u) ordered.push_back(std::move(t));
      }
    }
    for (auto& t : targets_) {
      if (t) ordered.push_back(std::move(t));
    }
    targets_ = std::move(ordered);
  }

  ScrapeOptions options_;
  SeriesRegistry* registry_ = nullptr;
  ScrapeBudget budget_;  // before targets_: they give their series back to it when destroyed
  std::unique_ptr<GpuJoin> gpus_;
  std::mutex mu_;
  bool started_ = false;
  std::vector<std::unique_ptr<Target>> targets_;
  std::vector<uint64_t> taken_;  // per slot: the round a target set it
  uint64_t round_ = 0;
};

}  // namespace

std::unique_ptr<Source> make_scrape_source(const SourceOptions& options) {
  return std::make_unique<ScrapeSource>(options.scrape);
}

}  // namespace gpulens
