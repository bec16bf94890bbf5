// On-demand captures inside processes that run gpulens_client: the agent's
// table of requests, their state and their results (docs/profiling.md).
//
//   ProfileTable t;
//   auto id = t.request({.pid = 4242, .kind = "stacks", .duration_s = 10}, now_ms);  // a user asks
//   auto job = t.take(4242, now_ms);            // the client's poll: pending -> running
//   t.finish(job->id, true, result, "application/json", now_ms);   // the client's upload
//   auto e = t.get(*id, now_ms);                // done, with the result
//
// Bounded: at most max_entries captures (finished ones are dropped first,
// oldest first), one open capture per process, results within the request's
// max_bytes. A request nobody took within pickup_ms, or a running one whose
// result did not come within duration + grace_ms, expires; finished ones are
// forgotten keep_ms after they finished. The pids whose client polled are
// remembered for client_ms (at most max_clients of them), so that a GPU's
// processes can be matched to the clients that can capture in them.
//
// Thread-safety: every method locks; call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/status.h"

namespace gpulens::push {

struct ProfileRequest {
  std::string id;
  int64_t pid = 0;
  std::string kind = "stacks";  // stacks | torch
  double duration_s = 10;        // the window, or its time limit with steps
  uint64_t max_bytes = 16 << 20;
  uint64_t steps = 0;             // > 0: the window ends after this many optimizer steps
};

// What the client says its window was (the result's query parameters).
struct ProfileWindow {
  double seconds = -1;            // -1: not said
  int64_t steps = -1;             // optimizer steps counted; -1: not counted
};

enum class ProfileState { kPending, kRunning, kDone, kFailed, kExpired };
std::string_view state_name(ProfileState s);

struct ProfileEntry {
  ProfileRequest request;
  ProfileState state = ProfileState::kPending;
  std::string error;         // kFailed, kExpired: why
  std::string result;        // kDone: the client's upload
  std::string content_type;  // of the result
  ProfileWindow window;      // kDone: as the client said
  int64_t created_ms = 0, taken_ms = 0, finished_ms = 0;
};

struct ProfileLimits {
  size_t max_entries = 16;
  int64_t pickup_ms = 30'000;
  int64_t grace_ms = 30'000;
  int64_t keep_ms = 600'000;
  double max_duration_s = 300;
  uint64_t max_steps = 1'000'000;
  uint64_t max_result_bytes = 64 << 20;  // cap of a request's max_bytes
  int64_t client_ms = 60'000;   // a pid that polled this recently runs a client
  size_t max_clients = 4096;    // pids remembered (the oldest poll is forgotten first)
};

// Why a call failed, with the HTTP status the routes answer.
struct ProfileError {
  int http = 400;
  std::string message;
};

class ProfileTable {
 public:
  explicit ProfileTable(ProfileLimits limits = {}) : limits_(limits) {}

  // A new capture; its id. Errors: bad kind/duration/max_bytes (400), an
  // open capture of the same pid (409), the table full of open ones (503).
  std::optional<ProfileError> request(ProfileRequest r, int64_t now_ms, std::string& id);
  // The client's poll: the oldest pending request of `pid`, now running.
  // Every poll also marks `pid` as running a client (clients()).
  std::optional<ProfileRequest> take(int64_t pid, int64_t now_ms);
  // The pids that polled within limits().client_ms: processes running
  // gpulens_client pointed at this agent. Sorted.
  std::vector<int64_t> clients(int64_t now_ms);
  // The client's answer: a result (ok) or the reason it failed. Errors:
  // unknown id (404), not running (409), result beyond max_bytes (413; the
  // capture fails with that reason).
  std::optional<ProfileError> finish(std::string_view id, bool ok, std::string payload, std::string content_type,
                                     int64_t now_ms, ProfileWindow window = {});
  std::optional<ProfileEntry> get(std::string_view id, int64_t now_ms);
  // The body limit of an upload for `id` (its max_bytes), or 0 when none is running.
  uint64_t upload_limit(std::string_view id);
  const ProfileLimits& limits() const { return limits_; }

 private:
  void expire(int64_t now_ms);  // with mu_ held

  const ProfileLimits limits_;
  std::mutex mu_;
  std::map<std::string, ProfileEntry, std::less<>> entries_;
  std::map<int64_t, int64_t> polled_;  // pid -> its last poll, ms
  uint64_t next_ = 1;
};

}  // namespace gpulens::push
