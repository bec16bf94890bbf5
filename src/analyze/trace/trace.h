// The in-memory form of one rank's PyTorch profiler (Kineto) trace.
//
// A Chrome-trace JSON file holds tens of thousands to millions of events; the
// analyses need only the complete ("X") events and a handful of their
// fields, so a Trace keeps one compact Event per complete event, in file
// order, with names and categories interned into small integer ids:
//
//   Result<Trace> t = read_trace_file("rank-0.pt.trace.json.gz");
//   for (const Event& e : t->events)
//     if (e.kind == EventKind::kKernel) total += e.dur;
//
// Times are microseconds as written in the file (doubles, so the
// nanosecond fractions of newer traces are kept exactly; HTA rounds them).
// Thread-safety: a plain value; share it read-only.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace gpulens::trace {

// What an event is, from its category (modern and 2021-era names).
enum class EventKind : uint8_t {
  kKernel,             // "kernel", "Kernel"
  kMemcpy,             // "gpu_memcpy", "Memcpy"
  kMemset,             // "gpu_memset", "Memset"
  kCudaSync,           // "cuda_sync": stream/event waits drawn on the GPU rows
  kGpuUserAnnotation,  // "gpu_user_annotation"
  kRuntime,            // "cuda_runtime", "Runtime", "cuda_driver"
  kCpuOp,              // "cpu_op", "Operator", "user_annotation", "python_function", ...
};

inline constexpr int32_t kNoStream = -1;
inline constexpr int32_t kAllStreams = INT32_MAX;
inline constexpr int64_t kNoCorrelation = -1;

struct Event {
  double ts = 0;                 // start, us
  double dur = 0;                // duration, us
  int64_t correlation = kNoCorrelation;  // links a launch to what it launched
  int64_t bytes = -1;            // args.bytes of memcpy/memset, -1 when absent
  int32_t stream = kNoStream;    // args.stream; -1 on the CPU, kAllStreams for
                                 // device-wide syncs (written as 2^32-1)
  uint32_t name = 0;             // id into Trace::names
  uint32_t thread = 0;           // dense id of the event's (pid, tid) pair
  uint16_t cat = 0;              // id into Trace::cats
  EventKind kind = EventKind::kCpuOp;

  double end() const { return ts + dur; }
  bool on_gpu() const { return stream != kNoStream; }
};

// What reading skipped, so that nothing is dropped silently.
struct SkipCounts {
  uint64_t non_complete = 0;     // events without dur (instant, flow, counter, metadata)
  uint64_t missing_fields = 0;   // complete events lacking ts or name
  uint64_t bad_values = 0;       // ts/dur not numbers, negative or non-finite dur
  uint64_t trace_span = 0;       // the "Trace" category span Kineto adds
};

struct Trace {
  std::string path;               // where it came from (for messages)
  std::optional<int> rank;        // distributedInfo.rank
  std::optional<int> world_size;  // distributedInfo.world_size
  uint64_t input_bytes = 0;       // uncompressed JSON size
  std::vector<Event> events;      // complete events, in file order
  // Complete events without a "cat", read as CPU operators (category ""):
  // the autograd profiler's own export (torch builds without Kineto, e.g.
  // Debian's CPU torch 1.13) writes only name/ph/ts/dur/tid and
  // "pid": "CPU functions", and never a GPU event.
  uint64_t uncategorised = 0;
  bool first_is_event = false;    // events[0] is traceEvents[0] (HTA's row 0)
  std::vector<std::string> names;
  std::vector<std::string> cats;
  SkipCounts skipped;

  std::string_view name_of(const Event& e) const { return names[e.name]; }
  std::string_view cat_of(const Event& e) const { return cats[e.cat]; }
};

// Interns strings into dense ids appended to `table`. Not thread-safe.
class Interner {
 public:
  explicit Interner(std::vector<std::string>& table) : table_(table) {}
  uint32_t id(std::string_view s);

 private:
  std::vector<std::string>& table_;
  std::deque<std::string> keys_;  // stable addresses for the map's views
  std::unordered_map<std::string_view, uint32_t> index_;
};

}  // namespace gpulens::trace
