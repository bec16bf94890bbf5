// The HTTP server's bounding policy, apart from its sockets: how far the
// request at the front of a connection's buffer has arrived, which deadline
// a connection has passed, which connection makes room for a new one, the
// budget of request bodies in progress, and the rate limit's bucket.
//
// Pure values and small classes, so that each rule of http_server.h's
// header comment can be tested on its own; the event loop
// (http_server.cpp) applies them to its connections.
//
//   RequestHead head;
//   HeadParse p = read_request_head(buffered, limits, head);    // 405 beyond the five methods
//   if (p.state == HeadParse::kComplete) {
//     BodyRead b = read_request_body(head, buffered.size(), 1 << 20);
//     if (b.state == BodyRead::kTooLarge) ... answer 413 b.message;
//     if (b.state == BodyRead::kComplete) ... the request is buffered[0, b.need)
//   }
//
//   switch (conn_expiry(view, now_ms, timeouts)) { case ConnExpiry::kHeadLate: ... 408 }
//
//   VictimPicker picker;
//   for (...) picker.offer(view_of(conn), conn.fd);
//   if (picker.found()) ... drop picker.key();
//
// Times are steady-clock milliseconds. Thread-safety: none (the event
// loop's thread alone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/http_request.h"

namespace gpulens {

// What a connection is doing; each phase has its own deadline.
enum class ConnPhase {
  kIdle,    // between requests (or none yet): idle_timeout
  kHead,    // a request head arriving (or a TLS handshake): header_timeout
  kBody,    // a request body arriving: body_timeout
  kLinger,  // an error answered, reading and discarding before the close
};

// What the policy needs to know of a connection.
struct ConnView {
  ConnPhase phase = ConnPhase::kIdle;
  int64_t since = 0;           // start of the phase
  int64_t write_progress = 0;  // last time queued response bytes moved
  bool writing = false;        // response bytes queued
  bool working = false;        // a request of it is on a worker thread
  bool close_after = false;    // to be closed once its answer is written
  bool served = false;         // answered at least one request
};

// ---- Reading a request -------------------------------------------------

// parse_request_head(), and a method other than GET, HEAD, POST, PUT and
// DELETE refused with 405.
HeadParse read_request_head(std::string_view buffered, const RequestLimits& limits, RequestHead& head);

// Whether the body of a parsed head has arrived, `buffered` bytes being
// read (head included). A body over `limit` is refused (413) before any of
// it is read.
struct BodyRead {
  enum State { kTooLarge, kIncomplete, kComplete };
  State state = kIncomplete;
  size_t need = 0;      // head and body bytes: the request's length
  std::string message;  // for kTooLarge
};
BodyRead read_request_body(const RequestHead& head, size_t buffered, size_t limit);

// ---- Deadlines ---------------------------------------------------------

struct ConnTimeouts {
  int64_t idle_ms = 30000;
  int64_t header_ms = 10000;
  int64_t body_ms = 30000;
  int64_t write_ms = 30000;
  int64_t linger_ms = 2000;
};

// The deadline a connection has passed at `now`. A connection with bytes
// queued has only the write deadline (measured from the last progress); one
// with a request on a worker has none; otherwise its phase's deadline runs
// from the start of the phase, bytes arriving do not restart it.
enum class ConnExpiry {
  kNone,
  kWriteStalled,  // closed, counted as timed out
  kIdle,          // closed quietly, counted as timed out
  kHeadLate,      // 408, closed
  kBodyLate,      // 408, closed
  kLingerOver,    // closed, not a timeout
};
ConnExpiry conn_expiry(const ConnView& c, int64_t now, const ConnTimeouts& t);

// ---- Eviction ----------------------------------------------------------

// How readily a connection is dropped to make room for a new one; 0: never
// (its answer is being written, it is on a worker, it is uploading a body,
// or it is to close anyway). Highest first: lingering after an error (4), idle and
// never answered (3), its head arriving (2), kept alive between two
// requests it completed (1: a scraper's, which a flood of slow clients must
// not cost its connection).
int eviction_rank(const ConnView& c);

// The connection to drop, offered one at a time: the highest rank, and of
// equal ranks the one in its phase longest (the first offered on a tie).
class VictimPicker {
 public:
  void offer(const ConnView& c, int key);
  bool found() const { return rank_ > 0; }
  int key() const { return key_; }  // valid when found()

 private:
  int rank_ = 0;
  int64_t since_ = 0;
  int key_ = -1;
};

// ---- Bodies in progress ------------------------------------------------

// Connections uploading a body and the body bytes they announced, bounded:
// at most max_connections - reserved_connections uploads at once (the rest
// are kept for scrapes), at most max_bytes announced in all.
class BodyBudget {
 public:
  enum class Verdict { kReserved, kTooManyUploads, kTooManyBytes };
  BodyBudget(size_t max_connections, size_t reserved_connections, size_t max_bytes)
      : max_connections_(max_connections), reserved_connections_(reserved_connections), max_bytes_(max_bytes) {}

  // One more upload of `length` bytes; nothing is reserved unless kReserved.
  Verdict reserve(size_t length);
  // An upload of `length` reserved bytes ended (complete, refused or closed).
  void release(size_t length);

  size_t uploads() const { return uploads_; }
  size_t bytes() const { return bytes_; }

 private:
  size_t max_connections_, reserved_connections_, max_bytes_;
  size_t uploads_ = 0;
  size_t bytes_ = 0;
};

// ---- Rate limit --------------------------------------------------------

// exporter-toolkit's rate_limit: a bucket of `burst` requests (full at the
// first request) refilled by one every `interval_ms`, shared by all clients.
class RateBucket {
 public:
  // A request at `now`: true when it may go on (a token taken), false: 429.
  bool take(int64_t now, int64_t burst, int64_t interval_ms);

 private:
  double tokens_ = -1;  // < 0: not started
  int64_t at_ = 0;
};

}  // namespace gpulens
