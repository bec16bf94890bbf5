// Spool, on-disk counting sort and OpenMetrics assembly of a recording.
#include "export/recording.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "export/exposition.h"
#include "model/series.h"

namespace gpulens {
namespace {

constexpr size_t kBufferRecords = 4096;

// An unlinked scratch file in `dir`: nothing is left behind, whatever stops us.
int scratch_fd(const std::string& dir) {
  std::string path = (dir.empty() ? std::string(".") : dir) + "/.gpulens-record-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd >= 0) unlink(path.c_str());
  return fd;
}

// A read-only or writable mapping that unmaps itself.
struct Mapping {
  void* data = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (data != MAP_FAILED && size) munmap(data, size);
  }
};

}  // namespace

RecordingWriter::~RecordingWriter() { close(); }

void RecordingWriter::close() {
  if (spool_) std::fclose(spool_);
  spool_ = nullptr;
}

Status RecordingWriter::open(const std::string& dir) {
  dir_ = dir;
  const int fd = scratch_fd(dir);
  if (fd < 0) return unavailable("cannot create a spool file in " + (dir.empty() ? "." : dir) + ": " + std::strerror(errno));
  spool_ = fdopen(fd, "w+b");
  if (!spool_) {
    ::close(fd);
    return unavailable("cannot open the spool file");
  }
  in_memory_ = false;
  buf_.reserve(kBufferRecords);
  return Status::ok();
}

uint32_t RecordingWriter::family(std::string_view name, std::string_view type, std::string_view help) {
  auto [it, inserted] = family_index_.try_emplace(std::string(name), static_cast<uint32_t>(families_.size()));
  if (inserted) families_.push_back({std::string(name), std::string(type), std::string(help), {}});
  return it->second;
}

uint32_t RecordingWriter::series(uint32_t family, std::string_view text) {
  auto [it, inserted] = series_index_.try_emplace(std::string(text), static_cast<uint32_t>(series_.size()));
  if (inserted) {
    series_.push_back({family, std::string(text), 0});
    families_[family].series.push_back(it->second);
  }
  return it->second;
}

Status RecordingWriter::add(uint32_t series, int64_t t_ms, double value) {
  buf_.push_back({series, 0, t_ms, value});
  ++series_[series].count;
  ++samples_;
  if (!in_memory_ && buf_.size() >= kBufferRecords) return flush();
  return Status::ok();
}

Status RecordingWriter::flush() {
  if (in_memory_) return Status::ok();
  if (!spool_) return unavailable("the spool is not open");
  if (!buf_.empty() && std::fwrite(buf_.data(), sizeof(Record), buf_.size(), spool_) != buf_.size()) {
    return unavailable(std::string("cannot write the spool: ") + std::strerror(errno));
  }
  buf_.clear();
  return Status::ok();
}

Status RecordingWriter::finish(std::ostream& out) {
  if (Status s = flush(); !s) return s;
  if (!in_memory_ && std::fflush(spool_) != 0) return unavailable(std::string("cannot write the spool: ") + std::strerror(errno));

  // Where each series' points go in the sorted copy: families in order,
  // series in order, points in arrival (= time) order.
  std::vector<uint64_t> offset(series_.size(), 0);
  uint64_t next = 0;
  for (const Family& f : families_) {
    for (uint32_t s : f.series) {
      offset[s] = next;
      next += series_[s].count;
    }
  }
  const std::vector<uint64_t> begin = offset;

  Mapping spool, sorted;
  std::vector<Point> memory_points;
  int sorted_fd = -1;
  if (in_memory_) {
    memory_points.resize(samples_);
    for (const Record& r : buf_) memory_points[offset[r.series]++] = {r.t_ms, r.value};
    buf_.clear();
  } else if (samples_ > 0) {
    spool.size = samples_ * sizeof(Record);
    spool.data = mmap(nullptr, spool.size, PROT_READ, MAP_PRIVATE, fileno(spool_), 0);
    if (spool.data == MAP_FAILED) return unavailable(std::string("cannot map the spool: ") + std::strerror(errno));
    sorted_fd = scratch_fd(dir_);
    if (sorted_fd < 0) return unavailable(std::string("cannot create the sorted spool: ") + std::strerror(errno));
    sorted.size = samples_ * sizeof(Point);
    if (ftruncate(sorted_fd, static_cast<off_t>(sorted.size)) != 0) {
      ::close(sorted_fd);
      return unavailable(std::string("cannot size the sorted spool: ") + std::strerror(errno));
    }
    sorted.data = mmap(nullptr, sorted.size, PROT_READ | PROT_WRITE, MAP_SHARED, sorted_fd, 0);
    ::close(sorted_fd);
    if (sorted.data == MAP_FAILED) return unavailable(std::string("cannot map the sorted spool: ") + std::strerror(errno));
    const auto* rec = static_cast<const Record*>(spool.data);
    auto* pts = static_cast<Point*>(sorted.data);
    for (uint64_t i = 0; i < samples_; ++i) pts[offset[rec[i].series]++] = {rec[i].t_ms, rec[i].value};
  }
  const auto* pts = in_memory_ ? memory_points.data() : static_cast<const Point*>(sorted.data);

  std::string buf;
  buf.reserve(1 << 16);
  auto line = [&](uint32_t s, const Point& p) {
    buf += series_[s].text;
    buf += ' ';
    append_value(buf, p.value);
    append_timestamp(buf, p.t_ms);
    buf += '\n';
    if (buf.size() > (1 << 16) - 512) {
      out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
      buf.clear();
    }
  };
  for (const Family& f : families_) {
    uint64_t total = 0;
    for (uint32_t s : f.series) total += series_[s].count;
    if (total == 0) continue;
    append_family_header(buf, f.name, f.type, f.help, true);
    if (f.type != "histogram") {
      for (uint32_t s : f.series) {
        for (uint64_t i = begin[s]; i < begin[s] + series_[s].count; ++i) line(s, pts[i]);
      }
      continue;
    }
    // Histograms: one metric point per timestamp, its samples in declaration
    // order (buckets, _sum, _count), merging the series' cursors by time.
    std::vector<uint64_t> cur(f.series.size());
    for (size_t k = 0; k < f.series.size(); ++k) cur[k] = begin[f.series[k]];
    for (;;) {
      int64_t t = INT64_MAX;
      for (size_t k = 0; k < f.series.size(); ++k) {
        const uint32_t s = f.series[k];
        if (cur[k] < begin[s] + series_[s].count) t = std::min(t, pts[cur[k]].t_ms);
      }
      if (t == INT64_MAX) break;
      for (size_t k = 0; k < f.series.size(); ++k) {
        const uint32_t s = f.series[k];
        if (cur[k] < begin[s] + series_[s].count && pts[cur[k]].t_ms == t) line(s, pts[cur[k]++]);
      }
    }
  }
  buf += "# EOF\n";
  out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
  out.flush();
  close();
  if (!out) return unavailable("cannot write the recording");
  return Status::ok();
}

std::vector<uint32_t> recording_slots(const SeriesRegistry& registry, const FieldDef& f) {
  const auto& slots = registry.slots_of(f.id);
  if (f.type != MetricType::kHistogram) return slots;
  std::vector<uint32_t> out;
  for (uint32_t s : slots) {
    if (registry.series(s).part == HistogramPart::kBucket) out.push_back(s);
  }
  for (HistogramPart part : {HistogramPart::kSum, HistogramPart::kCount}) {
    for (uint32_t s : slots) {
      if (registry.series(s).part == part) out.push_back(s);
    }
  }
  return out;
}

std::string recording_series_text(const SeriesRegistry& registry, uint32_t slot) {
  const Series& series = registry.series(slot);
  const FieldDef& f = field(series.field);
  std::string text(f.name);
  text += histogram_suffix(series.part);
  if (!series.labels.empty()) {
    text += '{';
    text += series.labels;
    text += '}';
  }
  return text;
}

}  // namespace gpulens
