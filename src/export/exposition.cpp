// Text and OpenMetrics rendering from dense live arrays.
#include "export/exposition.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <mutex>

#include "model/xid.h"

namespace gpulens {
namespace {

void append_help(std::string& out, std::string_view help, bool openmetrics) {
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && openmetrics) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

// dcgm-exporter prints DCGM_FT_INT64 with "%d" and DCGM_FT_DOUBLE with "%f".
void append_dcgm_value(std::string& out, DcgmValue kind, double v) {
  char buf[64];
  char* p = buf;
  if (!std::isfinite(v)) {
    append_value(out, v);
    return;
  }
  if (kind == DcgmValue::kInt) {
    p = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(std::trunc(v))).ptr;
  } else {
    p = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, 6).ptr;
  }
  out.append(buf, p);
}

// The GPU-instance profile of a MIG device's profile: a compute instance
// smaller than its GPU instance is named "1c.3g.71gb"; GPU_I_PROFILE is the
// GPU instance's, "3g.71gb".
std::string_view gpu_instance_profile(std::string_view profile) {
  const size_t c = profile.find("c.");
  if (c != std::string_view::npos && c > 0 && profile.find("g.") > c &&
      profile.substr(0, c).find_first_not_of("0123456789") == std::string_view::npos) {
    return profile.substr(c + 2);
  }
  return profile;
}

// Whether a series' own labels are exactly a DCGM row's one label (or none).
bool dcgm_row_matches(const Labels& extra, const DcgmLabel& row) {
  if (row.empty()) return extra.empty();
  return extra.size() == 1 && extra[0].name == row.name && extra[0].value == row.value;
}

}  // namespace

void Renderer::collect_mig(const SeriesRegistry& registry, const LiveStore& live) {
  mig_.clear();
  mig_gpus_.assign(static_cast<size_t>(std::max(registry.gpu_count(), 0)), 0);
  for (uint32_t s : registry.slots_of(FieldId::kGpuMigInfo)) {
    if (!live.present(s)) continue;
    const Series& series = registry.series(s);
    if (series.gpu < 0 || series.gpu >= registry.gpu_count()) continue;
    const std::string gi_text(series.extra.get("gpu_instance_id"));
    unsigned gi = 0;
    if (std::from_chars(gi_text.data(), gi_text.data() + gi_text.size(), gi).ec != std::errc()) continue;
    MigEntity* e = nullptr;
    for (MigEntity& m : mig_) {
      if (m.gpu == series.gpu && m.gi == gi) e = &m;
    }
    if (e == nullptr) {
      mig_.push_back({.gpu = series.gpu, .gi = gi, .gi_text = gi_text,
                      .profile = std::string(gpu_instance_profile(series.extra.get("mig_profile"))),
                      .extras = {}});
      e = &mig_.back();
    }
    e->extras.push_back(series.extra);
    mig_gpus_[static_cast<size_t>(series.gpu)] = 1;
  }
  // dcgm-exporter's order: GPU by GPU, each GPU's instances in turn.
  std::sort(mig_.begin(), mig_.end(),
            [](const MigEntity& a, const MigEntity& b) { return a.gpu != b.gpu ? a.gpu < b.gpu : a.gi < b.gi; });
}

void Renderer::render_dcgm(std::string& out, const SeriesRegistry& registry, const LiveStore& live,
                           const DcgmRow& row, const DcgmPick* pick, const RenderOptions& o) {
  const bool om = o.format == Format::kOpenMetrics;
  const int gpus = registry.gpu_count();
  // Per GPU: the value (summed over the field's series for link sums) and
  // the newest sample time; NaN marks "no value".
  values_.assign(static_cast<size_t>(std::max(gpus, 0)), std::nan(""));
  times_.assign(values_.size(), 0);
  auto take = [&](FieldId field, bool sum) {
    for (uint32_t s : registry.slots_of(field)) {
      if (!live.present(s)) continue;
      const Series& series = registry.series(s);
      if (series.gpu < 0 || series.gpu >= gpus) continue;
      if (!sum && !dcgm_row_matches(series.extra, row.extra)) continue;
      double& v = values_[series.gpu];
      v = std::isnan(v) || !sum ? live.value(s) : v + live.value(s);
      times_[series.gpu] = std::max(times_[series.gpu], live.time_ms(s));
    }
  };
  const bool sum = row.field2 != FieldId::kCount;
  take(row.field, sum);
  if (sum) take(row.field2, true);
  if (row.field == FieldId::kGpuLastXid) {
    // dcgm-exporter reports XID 0 on every GPU until one happens.
    for (uint32_t s : registry.slots_of(FieldId::kGpuUp)) {
      const Series& series = registry.series(s);
      if (!live.present(s) || series.gpu < 0 || series.gpu >= gpus || !std::isnan(values_[series.gpu])) continue;
      values_[series.gpu] = 0;
      times_[series.gpu] = live.time_ms(s);
    }
  }
  // Per MIG instance: its own value (the mean over its compute instances),
  // the parent's, or none.
  FieldId own = FieldId::kCount;
  const MigRead read = mig_.empty() ? MigRead::kDevice : mig_read(row.field, own);
  mig_values_.assign(mig_.size(), std::nan(""));
  mig_times_.assign(mig_.size(), 0);
  for (size_t i = 0; i < mig_.size(); ++i) {
    const MigEntity& e = mig_[i];
    if (read == MigRead::kDevice) {
      mig_values_[i] = values_[e.gpu];
      mig_times_[i] = times_[e.gpu];
    } else if (read == MigRead::kOwn) {
      double total = 0;
      int n = 0;
      for (uint32_t s : registry.slots_of(own)) {
        const Series& series = registry.series(s);
        if (!live.present(s) || series.gpu != e.gpu) continue;
        if (std::find(e.extras.begin(), e.extras.end(), series.extra) == e.extras.end()) continue;
        total += live.value(s);
        ++n;
        mig_times_[i] = std::max(mig_times_[i], live.time_ms(s));
      }
      if (n > 0) mig_values_[i] = total / n;
    }
  }
  bool any = false;
  for (int g = 0; g < gpus; ++g) any = any || (!std::isnan(values_[g]) && mig_gpus_[g] == 0);
  for (double v : mig_values_) any = any || !std::isnan(v);
  if (!any) return;
  // dcgm-exporter writes HELP before TYPE. Its counters have no _total, which
  // OpenMetrics requires of a counter's samples: there they are "unknown".
  // A counters file's row gives the type and help, as in dcgm-exporter.
  const MetricType mtype = pick != nullptr ? pick->type : row.type;
  std::string_view type = mtype == MetricType::kCounter ? (om ? "unknown" : "counter") : "gauge";
  out += "# HELP ";
  out += row.name;
  out += ' ';
  append_help(out, pick != nullptr ? std::string_view(pick->help) : row.help, om);
  out += "\n# TYPE ";
  out += row.name;
  out += ' ';
  out += type;
  out += '\n';
  const bool xid = row.field == FieldId::kGpuLastXid;
  auto line = [&](const SeriesRegistry::DcgmParts& p, const MigEntity* mig, double v, int64_t t) {
    out += row.name;
    out += '{';
    out += p.head;
    if (mig != nullptr) {
      out += ",GPU_I_PROFILE=\"";
      append_escaped(out, mig->profile);
      out += "\",GPU_I_ID=\"";
      out += mig->gi_text;
      out += '"';
    }
    out += p.mid;
    out += p.container;
    if (xid) {
      // dcgm-exporter's Attributes of an XID series, between container and
      // namespace in its sorted order.
      char code[24];
      const auto c = std::to_chars(code, code + sizeof code, static_cast<long long>(std::trunc(v))).ptr;
      out += ",err_code=\"";
      out.append(code, c);
      out += "\",err_msg=\"";
      append_escaped(out, xid_message(static_cast<long long>(std::trunc(v))));
      out += '"';
    }
    out += p.namespace_pod;
    out += "} ";
    append_dcgm_value(out, row.value, v * row.scale);
    if (om && o.timestamps) append_timestamp(out, t);
    out += '\n';
  };
  size_t m = 0;
  for (int g = 0; g < gpus; ++g) {
    if (mig_gpus_[g] != 0) {
      for (; m < mig_.size() && mig_[m].gpu <= g; ++m) {
        if (mig_[m].gpu < g || std::isnan(mig_values_[m])) continue;
        line(registry.dcgm_mig_parts(g, mig_[m].gi), &mig_[m], mig_values_[m], mig_times_[m]);
      }
      continue;
    }
    if (std::isnan(values_[g])) continue;
    line(registry.dcgm_parts(g), nullptr, values_[g], times_[g]);
  }
}

void append_timestamp(std::string& out, int64_t ms) {
  char buf[32];
  auto p = std::to_chars(buf, buf + sizeof buf, ms / 1000).ptr;
  *p++ = '.';
  const int frac = static_cast<int>(ms % 1000);
  *p++ = static_cast<char>('0' + frac / 100);
  *p++ = static_cast<char>('0' + frac / 10 % 10);
  *p++ = static_cast<char>('0' + frac % 10);
  out += ' ';
  out.append(buf, p);
}

void append_family_header(std::string& out, std::string_view name, std::string_view type, std::string_view help,
                          bool openmetrics) {
  out += "# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += "\n# HELP ";
  out += name;
  out += ' ';
  append_help(out, help, openmetrics);
  out += '\n';
}

void append_value(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
  } else if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
  } else {
    char buf[32];
    // Whole numbers (counters, bytes) print as integers, not 1e+12.
    const bool whole = v == std::trunc(v) && std::fabs(v) < 9007199254740992.0;
    auto p = whole ? std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(v)).ptr
                   : std::to_chars(buf, buf + sizeof buf, v).ptr;
    out.append(buf, p);
  }
}

Format negotiate(std::string_view accept) {
  // Weighted media ranges; we only care whether OpenMetrics is acceptable and
  // preferred over (or equal to) text/plain.
  double om = -1, text = -1;
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view range = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view{} : accept.substr(comma + 1);
    double q = 1.0;
    if (size_t qp = range.find("q="); qp != std::string_view::npos) {
      std::string_view qs = range.substr(qp + 2);
      double parsed = 0;
      if (std::from_chars(qs.data(), qs.data() + qs.size(), parsed).ec == std::errc()) q = parsed;
    }
    while (!range.empty() && range.front() == ' ') range.remove_prefix(1);
    if (range.starts_with("application/openmetrics-text")) {
      // Only 1.0.0 (or unversioned) is what we write.
      const bool v1 = range.find("version=") == std::string_view::npos || range.find("version=1.0.0") != std::string_view::npos;
      if (v1) om = std::max(om, q);
    } else if (range.starts_with("text/plain") || range.starts_with("*/*")) {
      text = std::max(text, q);
    }
  }
  return om > 0 && om >= text ? Format::kOpenMetrics : Format::kText004;
}

std::string_view content_type(Format f) {
  return f == Format::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                   : "text/plain; version=0.0.4; charset=utf-8";
}

std::string_view Renderer::render(const SeriesRegistry& registry, const LiveStore& live,
                                  const RenderOptions& options) {
  buf_.clear();
  render_into(buf_, registry, live, options);
  return buf_;
}

void Renderer::render_into(std::string& out, const SeriesRegistry& registry, const LiveStore& live,
                           const RenderOptions& o) {
  const bool om = o.format == Format::kOpenMetrics;
  std::scoped_lock lock(registry.mutex(), live.mutex());

  auto family = [&](const FieldDef& f, std::string_view name, std::string_view help) {
    // Skip families with no present series: no dangling HELP/TYPE.
    bool any = false;
    for (uint32_t s : registry.slots_of(f.id)) {
      if (live.present(s)) {
        any = true;
        break;
      }
    }
    if (!any) return;
    std::string_view type = type_name(f.type);
    if (!om && f.type == MetricType::kInfo) type = "gauge";
    append_family_header(out, name, type, help, om);
  };

  for (const FieldDef& f : catalog()) {
    if (!o.native_names || !f.native) continue;
    const std::string_view fam = family_name(f, om);
    family(f, fam, f.help);
    for (uint32_t s : registry.slots_of(f.id)) {
      if (!live.present(s)) continue;
      const Series& series = registry.series(s);
      out += f.name;
      if (f.type == MetricType::kHistogram) out += histogram_suffix(series.part);
      if (!series.labels.empty()) {  // rendered once, when the series was created
        out += '{';
        out += series.labels;
        out += '}';
      }
      out += ' ';
      append_value(out, live.value(s));
      if (om && o.timestamps) append_timestamp(out, live.time_ms(s));
      out += '\n';
    }
  }
  if (o.dcgm_names) {
    collect_mig(registry, live);
    for (const DcgmRow& row : dcgm_rows()) {
      if (row.value == DcgmValue::kLabel) continue;
      const DcgmPick* pick = nullptr;
      if (!o.dcgm_file_rows && !dcgm_written(row, o.dcgm_naming)) continue;
      if (o.dcgm_rows != nullptr) {
        auto it = o.dcgm_rows->find(row.name);
        if (it == o.dcgm_rows->end()) continue;
        pick = &it->second;
      }
      render_dcgm(out, registry, live, row, pick, o);
    }
  }
  if (om && o.eof) out += "# EOF\n";
}

}  // namespace gpulens
