// Series numbering and label rendering.
#include "model/series.h"

#include <algorithm>
#include <charconv>

namespace gpulens {

std::string label(std::string_view name, std::string_view value) {
  std::string out;
  out.reserve(name.size() + value.size() + 3);
  out.append(name).append("=\"");
  append_escaped(out, value);
  out += '"';
  return out;
}

Labels mig_labels(const MigIdentity& mig) {
  return Labels{{"mig_uuid", mig.uuid},
                {"mig_profile", mig.profile},
                {"gpu_instance_id", std::to_string(mig.gpu_instance)},
                {"compute_instance_id", std::to_string(mig.compute_instance)}};
}

std::string_view histogram_suffix(HistogramPart part) {
  switch (part) {
    case HistogramPart::kBucket: return "_bucket";
    case HistogramPart::kSum: return "_sum";
    case HistogramPart::kCount: return "_count";
    case HistogramPart::kNone: break;
  }
  return {};
}

KeyText key_from_text(std::string_view key) {
  KeyText out;
  const size_t open = key.find('{');
  out.name = std::string(key.substr(0, open));
  if (open == std::string_view::npos) return out;
  std::string_view text = key.substr(open + 1);
  if (text.ends_with('}')) text.remove_suffix(1);
  size_t i = 0;
  while (i < text.size()) {
    const size_t stop = text.find_first_of("=,", i);
    if (stop == std::string_view::npos || text[stop] == ',') {  // a bare word: the histogram part
      const std::string_view word = text.substr(i, stop == std::string_view::npos ? std::string_view::npos : stop - i);
      if (word == "sum") out.part = HistogramPart::kSum;
      if (word == "count") out.part = HistogramPart::kCount;
      i = stop == std::string_view::npos ? text.size() : stop + 1;
      continue;
    }
    if (stop + 1 >= text.size() || text[stop + 1] != '"') break;  // not a key this API writes
    std::string value;
    size_t j = stop + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value += text[j] == 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    out.labels.set(text.substr(i, stop - i), value);
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  if (out.part == HistogramPart::kNone && out.labels.has("le")) out.part = HistogramPart::kBucket;
  return out;
}

void SeriesRegistry::set_gpu(int index, GpuIdentity id) {
  std::lock_guard lock(mu_);
  if (index >= static_cast<int>(gpus_.size())) gpus_.resize(index + 1);
  gpus_[index] = std::move(id);
  rebuild_dcgm_labels_locked();
}

void SeriesRegistry::set_hostname(std::string hostname) {
  std::lock_guard lock(mu_);
  hostname_ = std::move(hostname);
  rebuild_dcgm_labels_locked();
}

void SeriesRegistry::set_dcgm_host_label(DcgmHostLabel how) {
  std::lock_guard lock(mu_);
  dcgm_host_ = how;
  rebuild_dcgm_labels_locked();
}

void SeriesRegistry::set_dcgm_driver_label(bool on, std::string_view name) {
  std::lock_guard lock(mu_);
  dcgm_driver_ = on;
  dcgm_driver_name_ = name;
  rebuild_dcgm_labels_locked();
}

void SeriesRegistry::set_gpu_pod(int index, GpuPod pod, PodOrigin origin) {
  std::lock_guard lock(mu_);
  if (index < 0) return;
  if (index >= static_cast<int>(pods_.size())) pods_.resize(index + 1);
  auto& p = pods_[index][static_cast<size_t>(origin)];
  if (p.container == pod.container && p.namespace_ == pod.namespace_ && p.pod == pod.pod) return;
  p = std::move(pod);
  rebuild_dcgm_labels_locked();
}

GpuPod SeriesRegistry::gpu_pod(int index, PodOrigin origin) const {
  std::lock_guard lock(mu_);
  if (index < 0 || index >= static_cast<int>(pods_.size())) return {};
  return pods_[index][static_cast<size_t>(origin)];
}

void SeriesRegistry::set_pod_strings(DcgmStrings& s, const GpuPod& pod) {
  s.container = ',' + label("container", pod.container);
  s.namespace_pod = ',' + label("namespace", pod.namespace_) + ',' + label("pod", pod.pod);
}

void SeriesRegistry::set_mig_pod(int index, unsigned gpu_instance, GpuPod pod, PodOrigin origin) {
  std::lock_guard lock(mu_);
  if (index < 0) return;
  auto& pods = mig_pods_[static_cast<size_t>(origin)];
  const auto key = std::make_pair(index, gpu_instance);
  if (pod.pod.empty()) {
    pods.erase(key);
    return;
  }
  DcgmStrings s;
  set_pod_strings(s, pod);
  pods.insert_or_assign(key, std::move(s));
}

SeriesRegistry::DcgmParts SeriesRegistry::dcgm_parts(int index) const {
  if (index < 0 || index >= static_cast<int>(dcgm_parts_.size())) return {};
  const DcgmStrings& p = dcgm_parts_[index];
  return {p.head, p.mid, p.container, p.namespace_pod};
}

SeriesRegistry::DcgmParts SeriesRegistry::dcgm_mig_parts(int index, unsigned gpu_instance) const {
  if (index < 0 || index >= static_cast<int>(dcgm_parts_.size())) return {};
  const DcgmStrings& p = dcgm_parts_[index];
  DcgmParts out{p.head, p.mid, {}, {}};
  for (const auto& pods : mig_pods_) {  // the agent's, else the scraped
    if (auto it = pods.find({index, gpu_instance}); it != pods.end()) {
      out.container = it->second.container;
      out.namespace_pod = it->second.namespace_pod;
      break;
    }
  }
  return out;
}

const std::string& SeriesRegistry::dcgm_labels(int index) const {
  static const std::string kNone;
  if (index < 0 || index >= static_cast<int>(dcgm_labels_.size())) return kNone;
  return dcgm_labels_[index];
}

void SeriesRegistry::rebuild_dcgm_labels_locked() {
  // dcgm-exporter's template: the entity labels in fixed order, then its
  // Labels map and then its Attributes map, each in sorted key order (Go's
  // text/template ranges maps sorted), so uppercase DCGM_* label rows come
  // before the lowercase pod attributes.
  dcgm_labels_.assign(gpus_.size(), {});
  dcgm_parts_.assign(gpus_.size(), {});
  for (size_t g = 0; g < gpus_.size(); ++g) {
    const GpuIdentity& id = gpus_[g];
    const std::string idx = std::to_string(g);
    DcgmStrings& p = dcgm_parts_[g];
    p.head = label("gpu", idx);
    p.head += ',' + label("UUID", id.uuid);
    p.head += ',' + label("pci_bus_id", id.pci_bus_id);
    p.head += ',' + label("device", "nvidia" + (id.minor >= 0 ? std::to_string(id.minor) : idx));
    p.head += ',' + label("modelName", id.name);
    if (!hostname_.empty() && dcgm_host_ != DcgmHostLabel::kNone) {
      p.mid += ',' + label(dcgm_host_ == DcgmHostLabel::kHostname ? "Hostname" : "hostname", hostname_);
    }
    if (dcgm_driver_ && !id.driver.empty()) p.mid += ',' + label(dcgm_driver_name_, id.driver);
    if (g < pods_.size()) {
      for (const GpuPod& pod : pods_[g]) {  // the agent's, else the scraped
        if (pod.pod.empty()) continue;
        set_pod_strings(p, pod);
        break;
      }
    }
    dcgm_labels_[g] = p.head + p.mid + p.container + p.namespace_pod;
  }
}

std::string SeriesRegistry::hostname() const {
  std::lock_guard lock(mu_);
  return hostname_;
}

const GpuIdentity* SeriesRegistry::gpu(int index) const {
  if (index < 0 || index >= static_cast<int>(gpus_.size())) return nullptr;
  return &gpus_[index];
}

int SeriesRegistry::gpu_count() const { return static_cast<int>(gpus_.size()); }

size_t SeriesRegistry::count() const { return series_.size(); }

size_t SeriesRegistry::live_count() const { return series_.size() - free_.size(); }

std::vector<uint32_t> SeriesRegistry::release_locked(const std::vector<uint32_t>& candidates) {
  std::vector<uint32_t> freed;
  for (uint32_t slot : candidates) {
    if (slot >= series_.size() || looked_up_[slot]) continue;
    Series& s = series_[slot];
    if (s.gpu == kFreedEntity) continue;  // already free
    index_.erase(slot);  // before the series changes: the index hashes it
    auto& of = by_field_[static_cast<size_t>(s.field)];
    std::erase(of, slot);
    s = Series{s.field, kFreedEntity, {}, HistogramPart::kNone, {}};
    free_.push_back(slot);
    freed.push_back(slot);
  }
  std::fill(looked_up_.begin(), looked_up_.end(), uint8_t{0});
  return freed;
}

void SeriesRegistry::mark_short_lived(uint32_t slot) {
  std::lock_guard lock(mu_);
  if (slot < short_lived_.size() && series_[slot].gpu != kFreedEntity) short_lived_[slot] = 1;
}

Labels SeriesRegistry::all_labels(uint32_t slot) const {
  const Series& s = series_[slot];
  Labels out = s.extra;
  if (s.gpu != kFreedEntity && gpulens::field(s.field).scope == Scope::kGpu) {
    const GpuIdentity* id = gpu(s.gpu);
    out.set("gpu", std::to_string(s.gpu));
    out.set("gpu_uuid", id ? std::string_view(id->uuid) : std::string_view());
    out.set("gpu_name", id ? std::string_view(id->name) : std::string_view());
  }
  return out;
}

size_t SeriesRegistry::key_hash(FieldId field, int gpu, HistogramPart part, const Labels& extra) {
  size_t h = extra.hash();
  h ^= (static_cast<size_t>(field) << 20 | static_cast<size_t>(part) << 16 | static_cast<uint16_t>(gpu)) +
       0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

size_t SeriesRegistry::SlotHash::operator()(uint32_t slot) const {
  const Series& s = (*series)[slot];
  return key_hash(s.field, s.gpu, s.part, s.extra);
}

bool SeriesRegistry::SlotEq::operator()(const KeyRef& k, uint32_t slot) const {
  const Series& s = (*series)[slot];
  return s.field == k.field && s.gpu == k.gpu && s.part == k.part && s.extra == *k.extra;
}

uint32_t SeriesRegistry::slot(FieldId field, int gpu, const Labels& extra, HistogramPart part) {
  const FieldDef& def = gpulens::field(field);
  if (def.type == MetricType::kHistogram && part == HistogramPart::kNone) part = HistogramPart::kBucket;
  // Lookups come from the collecting threads: one uncontended lock per value.
  std::lock_guard lock(mu_);
  if (auto it = index_.find(KeyRef{field, gpu, part, &extra}); it != index_.end()) {
    looked_up_[*it] = 1;
    return *it;
  }

  Series s{field, gpu, extra, part, {}};
  const GpuIdentity* id =
      gpu >= 0 && gpu < static_cast<int>(gpus_.size()) ? &gpus_[gpu] : nullptr;
  if (def.scope == Scope::kGpu) {
    s.labels = label("gpu", std::to_string(gpu));
    s.labels += ',' + label("gpu_uuid", id ? id->uuid : "");
    s.labels += ',' + label("gpu_name", id ? id->name : "");
  }
  if (!extra.empty()) {
    if (!s.labels.empty()) s.labels += ',';
    extra.render(s.labels);
  }
  uint32_t slot;
  if (!free_.empty()) {
    slot = free_.back();
    free_.pop_back();
    series_[slot] = std::move(s);
    ++generation_[slot];
    short_lived_[slot] = 0;
  } else {
    slot = static_cast<uint32_t>(series_.size());
    series_.push_back(std::move(s));
    looked_up_.push_back(0);
    generation_.push_back(0);
    short_lived_.push_back(0);
  }
  looked_up_[slot] = 1;
  by_field_[static_cast<size_t>(field)].push_back(slot);
  index_.insert(slot);
  return slot;
}

}  // namespace gpulens
