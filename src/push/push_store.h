// PushStore: what processes pushed, joined to this node's GPUs, until it
// expires.
//
// A group is one Pushgateway grouping key (/metrics/job/<job>/...) or one
// OTLP resource. PUT replaces a group's metrics, POST (and every OTLP
// export) replaces only the metrics of the names it carries, DELETE drops the
// group: the Pushgateway's semantics. Every pushed series is joined to a GPU
// when it arrives, by its gpu_uuid label (with or without "GPU-"), else by its
// pid through the GPU process list the GPU source publishes; a series that
// names no GPU of this node is refused, so nothing unattributed is kept. The
// pid, and the pod/namespace/container the GPU source found for it, become
// labels. A series whose pid no longer exists under proc_root is dropped at
// the next collection; a group no push refreshed for `ttl_ms` is dropped too.
//
// Only the allocator fields of the catalog are accepted (pushable()); a push
// naming anything else is refused whole, with the line or JSON path.
//
//   PushStore store(options);
//   store.attach(registry, live);                        // the agent does this
//   auto a = store.pushgateway("PUT", "/metrics/job/x/pid/42", body, now_ms);  // a.status 200
//   store.fill(frame);                                   // the push source, each tick
//
// Thread-safety: every method may be called from any thread; pushes and
// fill() serialise on an internal mutex. The join reads the registry and the
// live store under their locks before taking that mutex, never inside it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/frame.h"
#include "model/series.h"
#include "push/push_body.h"
#include "sources/source.h"
#include "store/live.h"

namespace gpulens::push {

struct PushOptions {
  int64_t ttl_ms = 5 * 60 * 1000;  // push.ttl
  std::string token;               // from push.token_file; "" accepts any push
  std::string proc_root = "/proc"; // where pids are checked (--proc-root)
  bool check_pids = true;          // false: pids are not checked (the simulator's are made up)
  bool self_metrics = true;        // false: fill() sets no gpulens_push_* series (a private store)
  PushLimits limits;
};

// True for the catalog fields a process may push (the in-process allocator).
bool pushable(FieldId id);

struct PushAnswer {
  int status = 200;
  std::string body;
  std::string_view content_type = "text/plain; charset=utf-8";
};

class PushStore {
 public:
  explicit PushStore(PushOptions options) : options_(std::move(options)) {}

  void attach(SeriesRegistry& registry, LiveStore& live) {
    registry_ = &registry;
    live_ = &live;
  }
  // Joins by gpu_uuid only (no process list): the simulator's private store.
  void attach(SeriesRegistry& registry) {
    registry_ = &registry;
    live_ = nullptr;
  }
  const PushOptions& options() const { return options_; }

  // Pushgateway API: method PUT, POST or DELETE on /metrics/job/...
  PushAnswer pushgateway(std::string_view method, std::string_view path, std::string_view body, int64_t now_ms);
  // OTLP/HTTP JSON export request.
  PushAnswer otlp_json(std::string_view body, int64_t now_ms);
  // Counts a refusal made before the store saw the body (token, encoding).
  void count_rejected(std::string_view reason);

  // Drops what expired at frame.time_ms(), then sets every live series and
  // the receiver's own gpulens_push_* series.
  void fill(Frame& frame);
  size_t group_count() const;

  // The pids the agent sees on GPU `gpu` (an index): in the driver's process
  // list the GPU source publishes, or in pushed series joined to that GPU.
  // Sorted, each once. Empty for an index the node does not have.
  std::vector<int64_t> pids_on_gpu(int gpu) const;
  // How many GPUs the node has (0 before attach()).
  int gpu_count() const;

 private:
  struct Entry {
    std::string name;  // sample name as pushed (POST replaces by name)
    FieldId field;
    int gpu;
    Labels extra;  // checked at resolve(); the join's pid, namespace, pod, container and the sample's own
    int64_t pid;  // 0: none
    double value;
  };
  struct Group {
    int64_t last_push_ms = 0;
    std::string job;  // the pusher: the grouping key's job, an OTLP resource's service_name
    std::vector<Entry> entries;
  };
  // A series no group holds any more, which the history still keeps until
  // `until_ms` (series_budget.h): it counts toward its job's budget.
  struct Removed {
    std::string job;
    int64_t until_ms = 0;
  };
  static std::string series_id(const Entry& e);
  // Moves the entries of `g` (under mu_) to removed_, out of owners_.
  void drop_entries_locked(const std::string& key, const Group& g, int64_t now_ms);
  // Series held now (groups' and removed_ ones), in total and of `job`.
  size_t held_locked(const std::string& job, size_t& of_job, int64_t now_ms);
  // Marks the entries' series as short-lived (SeriesRegistry::mark_short_lived).
  void mark_short_lived(const std::vector<Entry>& entries);
  // Joins samples (labels already merged with the group's) into entries.
  Status resolve(const std::vector<PushedSample>& samples, const LabelPairs& group_labels, std::vector<Entry>& out,
                 std::string& reason);
  Status merge(const std::string& key, const std::string& job, std::vector<Entry> entries, bool replace_all,
               int64_t now_ms, std::string& reason);
  void count_dropped(std::string_view reason, size_t series);

  PushOptions options_;
  SeriesRegistry* registry_ = nullptr;
  LiveStore* live_ = nullptr;
  mutable std::mutex mu_;
  std::map<std::string, Group> groups_;
  std::map<std::string, uint64_t> rejected_;  // reason -> count
  std::map<std::string, uint64_t> dropped_;   // reason -> series refused (gpulens_series_dropped_total)
  std::unordered_map<std::string, std::string> owners_;  // series_id -> the group key holding it
  std::unordered_map<std::string, Removed> removed_;     // series_id -> held until
};

// The source that publishes a PushStore's series into the agent's live store
// (and so into history, diagnosis and remote_write).
std::unique_ptr<Source> make_push_source(std::shared_ptr<PushStore> store);

}  // namespace gpulens::push
