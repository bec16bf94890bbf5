// The server's bounding rules as values; http_server.cpp applies them.
#include "server/conn_policy.h"

#include <algorithm>

namespace gpulens {

HeadParse read_request_head(std::string_view buffered, const RequestLimits& limits, RequestHead& head) {
  HeadParse p = parse_request_head(buffered, limits, head);
  if (p.state != HeadParse::kComplete) return p;
  const std::string_view m = head.method;
  if (m != "GET" && m != "HEAD" && m != "POST" && m != "PUT" && m != "DELETE") {
    p.state = HeadParse::kRefused;
    p.status = 405;
    p.message = "method not allowed";
  }
  return p;
}

BodyRead read_request_body(const RequestHead& head, size_t buffered, size_t limit) {
  BodyRead r;
  if (head.content_length > limit) {
    r.state = BodyRead::kTooLarge;
    r.message = "request body of " + std::to_string(head.content_length) + " bytes is larger than the limit of " +
                std::to_string(limit) + " bytes for " + std::string(head.path);
    return r;
  }
  r.need = head.head_bytes + head.content_length;
  r.state = buffered < r.need ? BodyRead::kIncomplete : BodyRead::kComplete;
  return r;
}

ConnExpiry conn_expiry(const ConnView& c, int64_t now, const ConnTimeouts& t) {
  if (c.writing) return now - c.write_progress > t.write_ms ? ConnExpiry::kWriteStalled : ConnExpiry::kNone;
  if (c.working) return ConnExpiry::kNone;  // a worker answers it; the handler's work is bounded
  const int64_t age = now - c.since;
  switch (c.phase) {
    case ConnPhase::kIdle: return age > t.idle_ms ? ConnExpiry::kIdle : ConnExpiry::kNone;
    case ConnPhase::kHead: return age > t.header_ms ? ConnExpiry::kHeadLate : ConnExpiry::kNone;
    case ConnPhase::kBody: return age > t.body_ms ? ConnExpiry::kBodyLate : ConnExpiry::kNone;
    case ConnPhase::kLinger: return age > t.linger_ms ? ConnExpiry::kLingerOver : ConnExpiry::kNone;
  }
  return ConnExpiry::kNone;
}

int eviction_rank(const ConnView& c) {
  if (c.writing || c.working) return 0;
  if (c.phase == ConnPhase::kLinger) return 4;
  if (c.close_after) return 0;
  switch (c.phase) {
    case ConnPhase::kIdle: return c.served ? 1 : 3;
    case ConnPhase::kHead: return 2;
    default: return 0;
  }
}

void VictimPicker::offer(const ConnView& c, int key) {
  const int rank = eviction_rank(c);
  if (rank == 0) return;
  if (rank_ == 0 || rank > rank_ || (rank == rank_ && c.since < since_)) {
    rank_ = rank;
    since_ = c.since;
    key_ = key;
  }
}

BodyBudget::Verdict BodyBudget::reserve(size_t length) {
  if (uploads_ + reserved_connections_ >= max_connections_) return Verdict::kTooManyUploads;
  if (bytes_ + length > max_bytes_) return Verdict::kTooManyBytes;
  ++uploads_;
  bytes_ += length;
  return Verdict::kReserved;
}

void BodyBudget::release(size_t length) {
  --uploads_;
  bytes_ -= length;
}

bool RateBucket::take(int64_t now, int64_t burst_requests, int64_t interval_ms) {
  const double burst = static_cast<double>(burst_requests);
  if (tokens_ < 0) {
    tokens_ = burst;
    at_ = now;
  }
  tokens_ = std::min(burst, tokens_ + static_cast<double>(now - at_) / static_cast<double>(interval_ms));
  at_ = now;
  if (tokens_ < 1) return false;
  tokens_ -= 1;
  return true;
}

}  // namespace gpulens
