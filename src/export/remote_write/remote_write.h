// RemoteWriter: pushes the agent's live values to a Prometheus remote_write
// 1.0 receiver (VictoriaMetrics, Mimir, Prometheus, Thanos receive...).
//
// Each snapshot copies every present series whose value is newer than the
// one last queued into a bounded FIFO of samples; a series that disappeared
// gets a stale marker. A sender thread takes up to max_samples_per_send
// samples at a time, encodes them (protobuf + snappy block format) and POSTs
// them. A batch that meets a network error, a 5xx or a 429 is retried with
// exponential backoff until it is accepted (waiting at least the answer's
// Retry-After, up to kMaxRetryAfterMs), so a receiver restart loses
// nothing as long as the queue does not overflow; other 4xx answers mean the
// receiver will never take it, and the batch is counted as failed; so is a
// 3xx (redirects are not followed: the error names where it points). When the
// queue is full the oldest queued samples are dropped (and counted), so the
// newest data survives a long outage.
//
//   RemoteWriter w({.url = "http://vm:8428/api/v1/write", .interval_ms = 15000,
//                   .external_labels = {{"instance", "node7"}}},
//                  registry, live);
//   if (Status s = w.start(); !s) return s;   // snapshots every interval_ms
//   ...
//   w.fill(frame);                            // self-metrics, like a source
//   w.stop();                                 // flushes what it can, then joins
//
// Thread-safety: enqueue_snapshot(), stats() and fill() may be called from any
// thread; start() and stop() from the owning thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "model/frame.h"
#include "store/live.h"
#include "util/http_client.h"
#include "util/status.h"

namespace gpulens {

struct RemoteWriteOptions {
  std::string url = {};              // http://host:port/path of the receiver
  int64_t interval_ms = 15000;       // snapshot period; 0: the caller calls enqueue_snapshot()
  size_t queue_max_samples = 1'000'000;
  size_t max_samples_per_send = 2000;
  int64_t timeout_ms = 10000;        // per request
  int64_t min_backoff_ms = 50;       // first retry delay; doubles up to max_backoff_ms
  int64_t max_backoff_ms = 5000;
  int64_t flush_timeout_ms = 5000;   // how long stop() keeps sending what is queued
  std::vector<std::pair<std::string, std::string>> external_labels = {};  // e.g. {"instance", host}
  TlsClientOptions tls = {};   // for https:// receivers
  HttpAuthOptions auth = {};   // basic auth or Authorization, extra headers (X-Scope-OrgID)
};

struct RemoteWriteStats {
  uint64_t sent = 0;      // samples the receiver accepted
  uint64_t failed = 0;    // samples in batches rejected with a non-retryable 4xx
  uint64_t dropped = 0;   // samples pushed out of a full queue
  uint64_t retries = 0;   // requests repeated after a retryable failure
  uint64_t requests = 0;  // requests made, retries included
  size_t queued = 0;      // samples waiting, the batch in flight included
  size_t capacity = 0;
  int64_t last_success_ms = 0;  // Unix ms of the last accepted request; 0: never
  std::string last_error;       // of the last failed request; empty when none yet
};

// What a sender learned from one request.
struct SendResult {
  enum class Outcome { kOk, kRetry, kReject } outcome;
  std::string error;            // for kRetry and kReject
  int64_t retry_after_ms = -1;  // kRetry: the receiver's Retry-After; -1: none
};

// The longest Retry-After honoured; a longer one waits this long.
inline constexpr int64_t kMaxRetryAfterMs = 5 * 60'000;

// Delivers one encoded (snappy-compressed) WriteRequest. The HTTP sender is
// the default; tests substitute their own.
class RemoteSender {
 public:
  virtual ~RemoteSender() = default;
  virtual SendResult send(const std::string& body) = 0;
  // Cuts the send in flight (and every later one) short; called by stop()
  // from another thread once the flush time is up.
  virtual void cancel() {}
};
std::unique_ptr<RemoteSender> make_http_sender(const RemoteWriteOptions& options);

// Retry delays: min, 2*min, 4*min ... capped at max; reset after a success.
class Backoff {
 public:
  Backoff(int64_t min_ms, int64_t max_ms) : min_(min_ms), max_(max_ms), next_(min_ms) {}
  int64_t next() {
    int64_t d = next_;
    next_ = std::min(max_, next_ * 2);
    return d;
  }
  void reset() { next_ = min_; }

 private:
  int64_t min_, max_, next_;
};

class RemoteWriter {
 public:
  RemoteWriter(RemoteWriteOptions options, const SeriesRegistry& registry, const LiveStore& live,
               std::unique_ptr<RemoteSender> sender = nullptr);
  ~RemoteWriter();
  RemoteWriter(const RemoteWriter&) = delete;
  RemoteWriter& operator=(const RemoteWriter&) = delete;

  // Checks the options, then starts the sender (and, with interval_ms > 0,
  // the snapshot) threads.
  Status start();
  // Stops snapshots, keeps sending for up to flush_timeout_ms while the
  // receiver accepts, then cuts the request in flight short and joins, so it
  // returns within flush_timeout_ms (plus a few milliseconds) whatever the
  // receiver does. Logs what became of the queue (remote_write_stopped:
  // samples flushed, samples left unsent and lost). Idempotent.
  void stop();

  // Queues every present series with a value newer than its last queued one,
  // and a stale marker at `now_ms` for each series that vanished.
  void enqueue_snapshot(int64_t now_ms);

  // One send attempt of the head batch (used by the sender thread; tests call
  // it directly with no threads started). Returns kOk when there was nothing
  // to send.
  SendResult send_once();

  RemoteWriteStats stats() const;
  // The gpulens_remote_write_* self-metrics.
  void fill(Frame& frame) const;

 private:
  struct Entry {
    uint32_t slot;
    double value;
    int64_t timestamp_ms;
  };
  void sender_loop();
  void ticker_loop();
  Status check_options() const;

  RemoteWriteOptions options_;
  const SeriesRegistry& registry_;
  const LiveStore& live_;
  std::unique_ptr<RemoteSender> sender_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool sender_done_ = false;  // the sender thread has left its loop
  bool stopped_ = false;      // stop() has run
  std::chrono::steady_clock::time_point stop_deadline_;  // end of the flush, set by stop()
  std::deque<Entry> queue_;
  std::vector<Entry> inflight_;         // popped batch being sent (sender thread only)
  std::string inflight_body_;           // its encoded body, reused on retry
  // Per slot: encoded labels, null or empty = not exportable; shared with a
  // batch being encoded, so a reused slot's new labels never change it.
  std::vector<std::shared_ptr<const std::string>> labels_;
  std::vector<uint8_t> labels_built_;   // per slot
  std::vector<uint32_t> labels_gen_;    // per slot: the registry generation they were built for
  std::vector<int64_t> last_ts_;        // per slot: last queued timestamp
  std::vector<uint8_t> was_present_;    // per slot, at the last snapshot
  RemoteWriteStats stats_;
  uint64_t failing_requests_ = 0;  // retryable failures since the last success (logged once each way)

  std::thread sender_thread_;
  std::thread ticker_thread_;
};

}  // namespace gpulens
