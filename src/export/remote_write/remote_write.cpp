// The remote_write queue, its sender thread and the HTTP sender.
#include "export/remote_write/remote_write.h"

#include <snappy.h>

#include <algorithm>
#include <cctype>
#include <chrono>

#include "export/remote_write/labels.h"
#include "export/remote_write/prompb.h"
#include "util/http_client.h"
#include "util/log.h"

namespace gpulens {
namespace {

int64_t unix_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class HttpSender final : public RemoteSender {
 public:
  explicit HttpSender(const RemoteWriteOptions& o)
      : url_(o.url),
        // A batch is safe to send twice (the receiver keeps one sample per
        // series and timestamp), so a kept-alive connection that died under it
        // is retried at once on a fresh one, not counted as a failed send.
        client_({.timeout_ms = o.timeout_ms, .max_body_bytes = 1u << 20, .cancel = &cancel_, .tls = o.tls,
                  .auth = o.auth, .resend_post = true}) {}

  SendResult send(const std::string& body) override {
    static const std::vector<std::pair<std::string, std::string>> kHeaders = {
        {"Content-Encoding", "snappy"},
        {"Content-Type", "application/x-protobuf"},
        {"User-Agent", "gpulens/" GPULENS_VERSION},
        {"X-Prometheus-Remote-Write-Version", "0.1.0"},
    };
    Result<HttpResponse> r = client_.post(url_, body, kHeaders);
    if (!r) return {SendResult::Outcome::kRetry, r.status().message()};
    if (r->status / 100 == 2) return {SendResult::Outcome::kOk, {}};
    std::string error = "HTTP " + std::to_string(r->status) + " from " + url_;
    if (r->status / 100 == 3) {
      std::string to(r->header("location"));
      return {SendResult::Outcome::kReject,
              error + ": a redirect" + (to.empty() ? std::string() : " to " + to) +
                  ", not followed (set remote_write.url to where it points)"};
    }
    if (!r->body.empty()) error += ": " + r->body.substr(0, 300);
    while (!error.empty() && (error.back() == '\n' || error.back() == '\r')) error.pop_back();
    // The spec: retry 5xx, may retry 429, never retry another 4xx.
    bool retry = r->status / 100 == 5 || r->status == 429;
    int64_t after = retry ? retry_after_ms(r->header("retry-after")) : -1;
    if (after >= 0) error += " (Retry-After " + std::to_string(after / 1000) + "s)";
    return {retry ? SendResult::Outcome::kRetry : SendResult::Outcome::kReject, std::move(error), after};
  }

  void cancel() override { cancel_.cancel(); }

 private:
  std::string url_;
  HttpCancel cancel_;
  HttpClient client_;
};

}  // namespace

std::unique_ptr<RemoteSender> make_http_sender(const RemoteWriteOptions& options) {
  return std::make_unique<HttpSender>(options);
}

RemoteWriter::RemoteWriter(RemoteWriteOptions options, const SeriesRegistry& registry, const LiveStore& live,
                           std::unique_ptr<RemoteSender> sender)
    : options_(std::move(options)), registry_(registry), live_(live), sender_(std::move(sender)) {
  if (!sender_) sender_ = make_http_sender(options_);
  stats_.capacity = options_.queue_max_samples;
}

RemoteWriter::~RemoteWriter() { stop(); }

Status RemoteWriter::check_options() const {
  const auto& o = options_;
  if (!o.url.starts_with("http://") && !o.url.starts_with("https://")) {
    return invalid_argument("remote_write URL \"" + o.url + "\" must start with http:// or https://");
  }
  if (Status s = check_http_client_options({.tls = o.tls, .auth = o.auth}, "remote_write"); !s) return s;
  if (o.max_samples_per_send == 0 || o.queue_max_samples < o.max_samples_per_send) {
    return invalid_argument("remote_write queue of " + std::to_string(o.queue_max_samples) +
                            " samples must hold at least one batch of " +
                            std::to_string(o.max_samples_per_send) + " (max samples per send, at least 1)");
  }
  if (o.timeout_ms <= 0 || o.min_backoff_ms <= 0 || o.max_backoff_ms < o.min_backoff_ms || o.interval_ms < 0) {
    return invalid_argument("remote_write timeout and backoff must be positive, max backoff >= min backoff");
  }
  auto valid_name = [](const std::string& k) {  // [a-zA-Z_][a-zA-Z0-9_]*, not reserved "__"
    auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
    return !k.empty() && !std::isdigit(static_cast<unsigned char>(k[0])) && std::all_of(k.begin(), k.end(), word) &&
           !k.starts_with("__");
  };
  for (const auto& [k, v] : o.external_labels) {
    if (!valid_name(k)) {
      return invalid_argument("remote_write external label name \"" + k + "\" is not a valid label name");
    }
  }
  return Status::ok();
}

Status RemoteWriter::start() {
  if (Status s = check_options(); !s.is_ok()) return s;
  {
    std::lock_guard lock(mu_);
    stopping_ = false;
    sender_done_ = false;
    stopped_ = false;
  }
  sender_thread_ = std::thread([this] { sender_loop(); });
  if (options_.interval_ms > 0) ticker_thread_ = std::thread([this] { ticker_loop(); });
  return Status::ok();
}

void RemoteWriter::stop() {
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t sent_before = 0;
  {
    std::lock_guard lock(mu_);
    if (stopped_ || !sender_thread_.joinable()) return;
    stopping_ = true;
    stop_deadline_ = t0 + std::chrono::milliseconds(options_.flush_timeout_ms);
    sent_before = stats_.sent;
  }
  cv_.notify_all();
  if (ticker_thread_.joinable()) ticker_thread_.join();
  bool cut = false;
  {
    // The sender flushes for flush_timeout_ms; a request still in flight
    // then (a receiver that accepts and never answers) is cut short.
    std::unique_lock lock(mu_);
    if (!cv_.wait_until(lock, stop_deadline_, [&] { return sender_done_; })) {
      cut = true;
      lock.unlock();
      sender_->cancel();
    }
  }
  sender_thread_.join();
  std::lock_guard lock(mu_);
  stopped_ = true;
  const size_t left = queue_.size() + inflight_.size();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  (left == 0 ? log::info : log::warn)(
      "remote_write_stopped",
      {{"url", options_.url}, {"flushed_samples", std::to_string(stats_.sent - sent_before)},
       {"unsent_samples", std::to_string(left)}, {"fate", left == 0 ? "all delivered" : "lost (not persisted)"},
       {"request_cut", cut ? "yes" : "no"}, {"took", std::to_string(ms.count()) + "ms"}});
}

void RemoteWriter::enqueue_snapshot(int64_t now_ms) {
  // Lock order: registry, live store, then our queue.
  std::lock_guard reg_lock(registry_.mutex());
  std::lock_guard live_lock(live_.mutex());
  std::lock_guard lock(mu_);
  const size_t n = registry_.count();
  if (labels_.size() < n) {
    labels_.resize(n);
    labels_built_.resize(n, 0);
    labels_gen_.resize(n, 0);
    last_ts_.resize(n, INT64_MIN);
    was_present_.resize(n, 0);
  }
  auto push = [&](Entry e) {
    while (queue_.size() + inflight_.size() >= options_.queue_max_samples && !queue_.empty()) {
      queue_.pop_front();
      ++stats_.dropped;
    }
    queue_.push_back(e);
  };
  for (uint32_t slot = 0; slot < n; ++slot) {
    const Series& s = registry_.series(slot);
    if (s.gpu == kFreedEntity) continue;
    if (labels_built_[slot] && labels_gen_[slot] != registry_.generation(slot)) {
      // The slot was freed (its series gone for a whole history window) and
      // now holds another series: what is still queued under the old labels
      // (older than the window: the receiver has been down that long) is
      // dropped, never sent under the new ones.
      stats_.dropped += std::erase_if(queue_, [slot](const Entry& e) { return e.slot == slot; });
      labels_built_[slot] = 0;
      labels_[slot].reset();
      last_ts_[slot] = INT64_MIN;
      was_present_[slot] = 0;
    }
    if (!labels_built_[slot]) {
      labels_built_[slot] = 1;
      labels_gen_[slot] = registry_.generation(slot);
      if (field(s.field).native) {
        Result<prompb::LabelPairs> l = remote_labels(registry_, slot, options_.external_labels);
        if (l) {
          labels_[slot] = std::make_shared<const std::string>(prompb::encode_labels(*l));
        } else {
          stats_.last_error = l.status().message();
        }
      }
    }
    if (!labels_[slot] || labels_[slot]->empty()) continue;
    if (live_.present(slot)) {
      int64_t ts = live_.time_ms(slot);
      if (ts > last_ts_[slot]) {
        push({slot, live_.value(slot), ts});
        last_ts_[slot] = ts;
      }
      was_present_[slot] = 1;
    } else if (was_present_[slot]) {
      was_present_[slot] = 0;
      if (now_ms > last_ts_[slot]) {
        push({slot, prompb::stale_nan(), now_ms});
        last_ts_[slot] = now_ms;
      }
    }
  }
  cv_.notify_all();
}

SendResult RemoteWriter::send_once() {
  std::vector<std::shared_ptr<const std::string>> labels;
  {
    std::lock_guard lock(mu_);
    if (inflight_.empty()) {
      if (queue_.empty()) return {SendResult::Outcome::kOk, {}};
      size_t k = std::min(queue_.size(), options_.max_samples_per_send);
      inflight_.assign(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(k));
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<ptrdiff_t>(k));
      inflight_body_.clear();
      // Same-series samples together, each series' samples in time order
      // (the queue is in time order per series, and the sort is stable).
      std::stable_sort(inflight_.begin(), inflight_.end(),
                       [](const Entry& a, const Entry& b) { return a.slot < b.slot; });
      // Shared, so the labels outlive the lock even if the slot is reused meanwhile.
      for (const Entry& e : inflight_) labels.push_back(labels_[e.slot]);
    }
  }
  if (inflight_body_.empty()) {
    std::string raw;
    std::vector<prompb::Sample> samples;
    for (size_t i = 0; i < inflight_.size();) {
      size_t j = i;
      samples.clear();
      for (; j < inflight_.size() && inflight_[j].slot == inflight_[i].slot; ++j) {
        samples.push_back({inflight_[j].value, inflight_[j].timestamp_ms});
      }
      prompb::append_timeseries(raw, *labels[i], samples);
      i = j;
    }
    snappy::Compress(raw.data(), raw.size(), &inflight_body_);
  }

  SendResult r = sender_->send(inflight_body_);
  std::lock_guard lock(mu_);
  ++stats_.requests;
  switch (r.outcome) {
    case SendResult::Outcome::kOk:
      stats_.sent += inflight_.size();
      stats_.last_success_ms = unix_ms();
      if (failing_requests_ > 0) {
        log::info("remote_write_recovered", {{"url", options_.url},
                                             {"failed_requests", std::to_string(failing_requests_)},
                                             {"queued_samples", std::to_string(queue_.size())},
                                             {"dropped_total", std::to_string(stats_.dropped)}});
      }
      failing_requests_ = 0;
      break;
    case SendResult::Outcome::kRetry:
      ++stats_.retries;
      stats_.last_error = r.error;
      if (failing_requests_++ == 0) {
        log::warn("remote_write_retrying", {{"url", options_.url}, {"reason", r.error},
                                            {"samples", std::to_string(inflight_.size())},
                                            {"queued_samples", std::to_string(queue_.size())}});
      }
      return r;
    case SendResult::Outcome::kReject:
      stats_.failed += inflight_.size();
      stats_.last_error = r.error;
      log::warn("remote_write_rejected", {{"url", options_.url}, {"reason", r.error},
                                          {"samples", std::to_string(inflight_.size())},
                                          {"failed_total", std::to_string(stats_.failed)}});
      failing_requests_ = 0;
      break;
  }
  inflight_.clear();
  inflight_body_.clear();
  return r;
}

void RemoteWriter::sender_loop() {
  Backoff backoff(options_.min_backoff_ms, options_.max_backoff_ms);
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty() || !inflight_.empty(); });
    if (stopping_) break;
    lock.unlock();
    SendResult r = send_once();
    lock.lock();
    if (r.outcome == SendResult::Outcome::kRetry) {
      const int64_t delay = std::max(backoff.next(), std::min(r.retry_after_ms, kMaxRetryAfterMs));
      cv_.wait_for(lock, std::chrono::milliseconds(delay), [&] { return stopping_; });
    } else {
      backoff.reset();
    }
  }
  // Stopping: keep sending until stop()'s deadline while the receiver answers.
  const auto deadline = stop_deadline_;
  backoff.reset();
  while (!(queue_.empty() && inflight_.empty()) && std::chrono::steady_clock::now() < deadline) {
    lock.unlock();
    SendResult r = send_once();
    lock.lock();
    if (r.outcome == SendResult::Outcome::kRetry) {
      // stop() notifies when it cuts the flush short.
      cv_.wait_until(lock, std::min(deadline, std::chrono::steady_clock::now() +
                                                  std::chrono::milliseconds(backoff.next())));
    }
  }
  sender_done_ = true;
  cv_.notify_all();
}

void RemoteWriter::ticker_loop() {
  auto period = std::chrono::milliseconds(options_.interval_ms);
  auto next = std::chrono::steady_clock::now() + period;
  std::unique_lock lock(mu_);
  while (!cv_.wait_until(lock, next, [&] { return stopping_; })) {
    lock.unlock();
    enqueue_snapshot(unix_ms());
    lock.lock();
    next += period;
    if (next < std::chrono::steady_clock::now()) next = std::chrono::steady_clock::now() + period;
  }
}

RemoteWriteStats RemoteWriter::stats() const {
  std::lock_guard lock(mu_);
  RemoteWriteStats s = stats_;
  s.queued = queue_.size() + inflight_.size();
  return s;
}

void RemoteWriter::fill(Frame& frame) const {
  RemoteWriteStats s = stats();
  static const Labels kSent{{"result", "sent"}}, kFailed{{"result", "failed"}}, kDropped{{"result", "dropped"}};
  frame.set_node(FieldId::kAgentRemoteWriteSamples, kSent, static_cast<double>(s.sent));
  frame.set_node(FieldId::kAgentRemoteWriteSamples, kFailed, static_cast<double>(s.failed));
  frame.set_node(FieldId::kAgentRemoteWriteSamples, kDropped, static_cast<double>(s.dropped));
  frame.set_node(FieldId::kAgentRemoteWriteQueueSamples, static_cast<double>(s.queued));
  frame.set_node(FieldId::kAgentRemoteWriteQueueCapacity, static_cast<double>(s.capacity));
  frame.set_node(FieldId::kAgentRemoteWriteRetries, static_cast<double>(s.retries));
  if (s.last_success_ms > 0) {
    frame.set_node(FieldId::kAgentRemoteWriteLastSuccess, static_cast<double>(s.last_success_ms) / 1000.0);
  }
}

}  // namespace gpulens
