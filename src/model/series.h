// Series identity and the registry that numbers them.
//
// A series is a field plus the entity it describes (a GPU index, or the node)
// plus its extra labels as data (model/labels.h: {link="3"}, {mode="user"})
// plus, for a histogram, which part it is (a bucket, the sum, the count). The
// exposition text of its labels is rendered once, when the series is
// created, into Series::labels: the cache /metrics copies. The registry gives every distinct series a dense slot
// number, and keeps it until release_locked() frees it (the history does so
// for series gone longer than its window: processes and pushers come and go,
// and their slots must not pile up); a freed slot is reused by the next new
// series, with its generation() raised so per-slot caches can tell. It keeps
// the labels the GPU
// scope adds (gpu, gpu_uuid, gpu_name) and the per-GPU label set of
// dcgm-exporter's names. Frames, the exporter and the history
// index their arrays by slot, so the hot paths never hash strings.
//
//   SeriesRegistry reg;
//   reg.set_gpu(0, {.uuid = "GPU-1", .name = "NVIDIA H200"});
//   uint32_t s = reg.slot(FieldId::kGpuPower, 0);
//   uint32_t l = reg.slot(FieldId::kGpuNvlinkTxBytes, 0, Labels{{"link", "3"}});
//
// Thread-safety: slot() and set_gpu() take an internal lock to append; read
// accessors (series(), count()) are safe under lock() or from the thread that
// appends. Slots' metadata never moves in memory; it changes only when a freed
// slot is reused, under the lock. A slot number held across calls without a
// slot() lookup is valid while its series is present in the live store or was
// looked up since the previous release_locked().
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "model/catalog.h"
#include "model/labels.h"

namespace gpulens {

inline constexpr int kNodeEntity = -1;  // the "gpu" of node-scoped series
inline constexpr int kFreedEntity = -2; // the "gpu" of a freed slot (release_locked)

struct GpuIdentity {
  std::string uuid;
  std::string name;         // model name as the driver reports it
  std::string pci_bus_id;
  std::string serial;
  std::string driver;       // driver version (DCGM_FI_DRIVER_VERSION)
  int minor = -1;           // device minor number (/dev/nvidia<minor>); -1: use the index
  std::string cuda;         // CUDA version the driver supports ("12.4"); "" unknown
};

// The pod a GPU is assigned to (dcgm-exporter's container/namespace/pod).
struct GpuPod {
  std::string container;
  std::string namespace_;
  std::string pod;
};

// Who attributed a pod: the agent's own sources (the kubelet's allocation,
// the processes' cgroups) or a scraped dcgm-exporter. The agent's wins; a
// scraped pod labels a GPU or GPU instance the agent attributes to none.
enum class PodOrigin : uint8_t { kAgent, kScrape };

// How DCGM-named series label the host: dcgm-exporter up to 4.5.x writes
// `Hostname`, newer releases `hostname`; kNone leaves it out (its -n).
enum class DcgmHostLabel : uint8_t { kHostname, kLowercase, kNone };

// Which part of a histogram a series is. A histogram's buckets carry their
// `le` among the extra labels; its _sum and _count are parts of their own.
// kNone is every series of a field that is not a histogram (the registry
// turns kNone on a histogram field into kBucket).
enum class HistogramPart : uint8_t { kNone, kBucket, kSum, kCount };
// "_bucket", "_sum", "_count"; "" for kNone.
std::string_view histogram_suffix(HistogramPart part);

struct Series {
  FieldId field;
  int gpu;                  // GPU index, or kNodeEntity
  Labels extra;             // the series' own labels, e.g. {link="3"}
  HistogramPart part = HistogramPart::kNone;
  // The exposition text of the whole label set, without braces: the GPU
  // scope's gpu, gpu_uuid, gpu_name (in that order, as since the first
  // release) then `extra` rendered in name order. A cache for /metrics and
  // what needs exactly that text; read labels from `extra`.
  std::string labels;
};

class SeriesRegistry {
 public:
  SeriesRegistry() = default;
  SeriesRegistry(const SeriesRegistry&) = delete;
  SeriesRegistry& operator=(const SeriesRegistry&) = delete;

  // Identity of GPU `index`; call before creating its series. `hostname`
  // fills DCGM's Hostname label.
  void set_gpu(int index, GpuIdentity id);
  void set_hostname(std::string hostname);
  std::string hostname() const;  // "" when no source set one
  void set_dcgm_host_label(DcgmHostLabel how);
  // Whether DCGM_FI_DRIVER_VERSION (a `label` row) is on DCGM series, and
  // under which name (dcgm-exporter 4.9: DCGM_FI_SYSTEM_DRIVER_VERSION).
  void set_dcgm_driver_label(bool on, std::string_view name = "DCGM_FI_DRIVER_VERSION");
  // The pod GPU `index` is assigned to as `origin` attributes it (empty: none).
  GpuPod gpu_pod(int index, PodOrigin origin) const;
  // The pod GPU `index` is assigned to, as `origin` attributes it; empty
  // fields: none. The labels carry the agent's pod, else the scraped one.
  void set_gpu_pod(int index, GpuPod pod, PodOrigin origin = PodOrigin::kAgent);
  // The pod GPU instance `gpu_instance` of MIG GPU `index` is assigned to
  // (dcgm-exporter keys MIG pods by GPU instance); empty fields: none.
  void set_mig_pod(int index, unsigned gpu_instance, GpuPod pod, PodOrigin origin = PodOrigin::kAgent);
  // dcgm-exporter's label set of GPU `index`, without braces, in its order:
  // gpu, UUID, pci_bus_id, device, modelName, Hostname, then its label rows
  // (DCGM_FI_DRIVER_VERSION), then container, namespace, pod. Call under
  // mutex(); empty for an unknown index.
  const std::string& dcgm_labels(int index) const;
  // The same label set in the parts between which a series inserts its own:
  //   head           gpu, UUID, pci_bus_id, device, modelName
  //   (MIG instance: GPU_I_PROFILE, GPU_I_ID)
  //   mid            ,Hostname and the label rows (DCGM_FI_DRIVER_VERSION)
  //   container      ,container="..."            (Attributes, sorted by key:)
  //   (XID series:   ,err_code, ,err_msg)
  //   namespace_pod  ,namespace="...",pod="..."
  // Each part but head starts with ',' or is empty. dcgm_mig_parts() gives
  // the GPU's head and mid with the pod of one of its GPU instances. Call
  // under mutex(); all empty for an unknown index.
  struct DcgmParts {
    std::string_view head, mid, container, namespace_pod;
  };
  DcgmParts dcgm_parts(int index) const;
  DcgmParts dcgm_mig_parts(int index, unsigned gpu_instance) const;
  const GpuIdentity* gpu(int index) const;
  int gpu_count() const;

  // GPU fields collected (a --collectors file or --profile); all by default.
  // Set before the sources start: collects() is read without the lock.
  void set_field_mask(const std::bitset<kFieldCount>& mask) { mask_ = mask; }
  bool collects(FieldId field) const { return mask_.test(static_cast<size_t>(field)); }

  // The slot of (field, gpu, extra, part), created on first use. The
  // lookup hashes the labels in place: nothing is built or copied unless the
  // series is new.
  uint32_t slot(FieldId field, int gpu, const Labels& extra = {}, HistogramPart part = HistogramPart::kNone);

  // Slots handed out so far, freed ones included (the bound of slot numbers).
  size_t count() const;
  // Slots in use: count() less the freed ones.
  size_t live_count() const;
  const Series& series(uint32_t slot) const { return series_[slot]; }
  // The whole label set of `slot` as data: a GPU-scoped field's gpu,
  // gpu_uuid and gpu_name with the series' own extra labels (what
  // Series::labels renders). Call under mutex().
  Labels all_labels(uint32_t slot) const;
  // Raised each time `slot` is reused for another series (0 at creation).
  // Call under mutex().
  uint32_t generation(uint32_t slot) const { return generation_[slot]; }
  // Frees those of `candidates` that no slot() call returned since the
  // previous release_locked() (a source may still be about to publish the
  // others), forgets every lookup mark, and returns the freed slots. Call
  // under mutex(). A freed slot is absent from slots_of() until reused.
  std::vector<uint32_t> release_locked(const std::vector<uint32_t>& candidates);
  // Marks `slot` as a series an outside writer (a pusher, a scrape target)
  // set: once absent, the history releases it after its short-lived bound
  // (History::set_short_lived_release) rather than a whole window. Reusing
  // the slot clears the mark.
  void mark_short_lived(uint32_t slot);
  // Call under mutex().
  bool short_lived(uint32_t slot) const { return slot < short_lived_.size() && short_lived_[slot] != 0; }
  // Slots of one field, in creation order.
  const std::vector<uint32_t>& slots_of(FieldId field) const {
    return by_field_[static_cast<size_t>(field)];
  }
  std::mutex& mutex() const { return mu_; }

 private:
  // The index holds slot numbers and hashes/compares the series they name;
  // a lookup passes a KeyRef to the labels the caller holds.
  struct KeyRef {
    FieldId field;
    int gpu;
    HistogramPart part;
    const Labels* extra;
  };
  static size_t key_hash(FieldId field, int gpu, HistogramPart part, const Labels& extra);
  struct SlotHash {
    using is_transparent = void;
    const std::deque<Series>* series;
    size_t operator()(uint32_t slot) const;
    size_t operator()(const KeyRef& k) const { return key_hash(k.field, k.gpu, k.part, *k.extra); }
  };
  struct SlotEq {
    using is_transparent = void;
    const std::deque<Series>* series;
    bool operator()(uint32_t a, uint32_t b) const { return a == b; }
    bool operator()(const KeyRef& k, uint32_t slot) const;
    bool operator()(uint32_t slot, const KeyRef& k) const { return (*this)(k, slot); }
  };

  mutable std::mutex mu_;
  std::deque<Series> series_;
  std::vector<uint32_t> by_field_[kFieldCount];
  std::unordered_set<uint32_t, SlotHash, SlotEq> index_{16, SlotHash{&series_}, SlotEq{&series_}};
  std::vector<uint32_t> free_;           // freed slots, reused last in first out
  std::vector<uint8_t> looked_up_;       // per slot: returned by slot() since the last release
  std::vector<uint32_t> generation_;     // per slot
  std::vector<uint8_t> short_lived_;     // per slot: mark_short_lived()
  void rebuild_dcgm_labels_locked();

  std::vector<GpuIdentity> gpus_;
  std::vector<std::array<GpuPod, 2>> pods_;  // per GPU, by PodOrigin
  std::vector<std::string> dcgm_labels_;
  struct DcgmStrings {
    std::string head, mid, container, namespace_pod;
  };
  // The pod's `,container=…` and `,namespace=…,pod=…` parts of a DCGM label set.
  static void set_pod_strings(DcgmStrings& s, const GpuPod& pod);
  std::vector<DcgmStrings> dcgm_parts_;
  // container, namespace_pod per GPU instance, by PodOrigin
  std::map<std::pair<int, unsigned>, DcgmStrings> mig_pods_[2];
  std::string hostname_;
  DcgmHostLabel dcgm_host_ = DcgmHostLabel::kHostname;
  bool dcgm_driver_ = true;
  std::string dcgm_driver_name_ = "DCGM_FI_DRIVER_VERSION";
  std::bitset<kFieldCount> mask_ = std::bitset<kFieldCount>().set();
};

// A MIG instance: GPU instance `gpu_instance` of its parent GPU, compute
// instance `compute_instance` inside it, with the driver's MIG device UUID
// and the profile its name carries ("1g.18gb", "3g.71gb", "1c.3g.71gb").
struct MigIdentity {
  std::string uuid;       // MIG-...
  std::string profile;
  unsigned gpu_instance = 0;
  unsigned compute_instance = 0;
};

// The extra labels of every series of a MIG instance (the gpu_mig_* fields,
// and the process series of a GPU in MIG mode beside their own labels); the
// series' gpu is the parent GPU's index:
//   compute_instance_id="0",gpu_instance_id="1",mig_profile="1g.18gb",mig_uuid="MIG-…"
// dcgm-exporter's GPU_I_PROFILE is mig_profile and GPU_I_ID gpu_instance_id.
Labels mig_labels(const MigIdentity& mig);

// The one reader of label text, for what comes from outside the process:
// a key of /api/v1/current's `fields` as agents of the previous release
// write them, `metric{a="x",b="y"}` (a histogram part's `metric{sum,a="x"}`).
// Nothing in-process parses label text; a series' labels are Series::extra.
// Its name, its labels as data and its histogram part (kBucket when it has an le).
struct KeyText {
  std::string name;
  Labels labels;
  HistogramPart part = HistogramPart::kNone;
};
KeyText key_from_text(std::string_view key);

// `name="value"` with the value escaped; join several with ','.
std::string label(std::string_view name, std::string_view value);

}  // namespace gpulens
