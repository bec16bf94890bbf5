// Series numbering and label rendering.
#include "model/series.h"

#include <charconv>

namespace gpulens {

void append_escaped(std::string& out, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
}

std::string label(std::string_view name, std::string_view value) {
  std::string out;
  out.reserve(name.size() + value.size() + 3);
  out.append(name).append("=\"");
  append_escaped(out, value);
  out += '"';
  return out;
}

void SeriesRegistry::set_gpu(int index, GpuIdentity id) {
  std::lock_guard lock(mu_);
  if (index >= static_cast<int>(gpus_.size())) gpus_.resize(index + 1);
  gpus_[index] = std::move(id);
}

void SeriesRegistry::set_hostname(std::string hostname) {
  std::lock_guard lock(mu_);
  hostname_ = std::move(hostname);
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

void SeriesRegistry::key_into(std::string& out, FieldId field, int gpu, std::string_view extra) {
  out.clear();
  char buf[16];
  auto f = std::to_chars(buf, buf + sizeof buf, static_cast<int>(field)).ptr;
  out.append(buf, f);
  out += '/';
  f = std::to_chars(buf, buf + sizeof buf, gpu).ptr;
  out.append(buf, f);
  out += '/';
  out.append(extra);
}

uint32_t SeriesRegistry::slot(FieldId field, int gpu, std::string_view extra) {
  // Lookups come from the collecting threads; the key buffer is reused, so
  // take the lock for the whole call (uncontended: one lock per value).
  std::lock_guard lock(mu_);
  key_into(key_buf_, field, gpu, extra);
  if (auto it = index_.find(std::string_view(key_buf_)); it != index_.end()) return it->second;

  Series s{field, gpu, std::string(extra), {}, {}};
  const FieldDef& def = gpulens::field(field);
  const GpuIdentity* id =
      gpu >= 0 && gpu < static_cast<int>(gpus_.size()) ? &gpus_[gpu] : nullptr;
  std::string idx = std::to_string(gpu);
  if (def.scope == Scope::kGpu) {
    s.labels = label("gpu", idx);
    s.labels += ',' + label("gpu_uuid", id ? id->uuid : "");
    s.labels += ',' + label("gpu_name", id ? id->name : "");
  }
  if (!extra.empty()) {
    if (!s.labels.empty()) s.labels += ',';
    s.labels += extra;
  }
  if (!def.dcgm_name.empty() && def.scope == Scope::kGpu) {
    s.dcgm_labels = label("gpu", idx);
    s.dcgm_labels += ',' + label("UUID", id ? id->uuid : "");
    s.dcgm_labels += ',' + label("device", "nvidia" + idx);
    s.dcgm_labels += ',' + label("modelName", id ? id->name : "");
    if (id && !id->pci_bus_id.empty()) s.dcgm_labels += ',' + label("pci_bus_id", id->pci_bus_id);
    if (!hostname_.empty()) s.dcgm_labels += ',' + label("Hostname", hostname_);
    if (!extra.empty()) s.dcgm_labels += ',' + std::string(extra);
  }
  uint32_t slot = static_cast<uint32_t>(series_.size());
  series_.push_back(std::move(s));
  by_field_[static_cast<size_t>(field)].push_back(slot);
  index_.emplace(key_buf_, slot);
  return slot;
}

}  // namespace gpulens
