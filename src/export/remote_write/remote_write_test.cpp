// The remote_write queue: what a snapshot queues, retries, bounds, stale
// markers and self-metrics, against a fake sender that decodes each request.
#include "export/remote_write/remote_write.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <snappy.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <thread>

#include "export/remote_write/prompb.h"
#include "util/testing/http_test_server.h"
#include "util/testing/loopback.h"

namespace gpulens {
namespace {

using Outcome = SendResult::Outcome;

// Decodes every request; answers from a script, then kOk.
class FakeSender : public RemoteSender {
 public:
  struct Shared {
    std::mutex mu;
    std::vector<std::string> bodies;                 // raw bodies, as sent
    std::vector<prompb::TimeSeries> accepted;        // decoded, of accepted requests
    std::vector<Outcome> script;                     // answers to give first
  };
  explicit FakeSender(std::shared_ptr<Shared> s) : s_(std::move(s)) {}

  SendResult send(const std::string& body) override {
    std::lock_guard lock(s_->mu);
    s_->bodies.push_back(body);
    Outcome o = Outcome::kOk;
    if (!s_->script.empty()) {
      o = s_->script.front();
      s_->script.erase(s_->script.begin());
    }
    if (o != Outcome::kOk) return {o, o == Outcome::kRetry ? "HTTP 503" : "HTTP 400"};
    std::string raw;
    EXPECT_TRUE(snappy::Uncompress(body.data(), body.size(), &raw));
    auto ts = prompb::decode_write_request(raw);
    EXPECT_TRUE(ts.ok()) << ts.status().message();
    for (auto& t : *ts) s_->accepted.push_back(std::move(t));
    return {Outcome::kOk, {}};
  }

 private:
  std::shared_ptr<Shared> s_;
};

// A registry and live store with one source publishing gauges.
struct Fixture {
  SeriesRegistry reg;
  LiveStore live;
  int source = live.add_source("sim", true);
  std::shared_ptr<FakeSender::Shared> shared = std::make_shared<FakeSender::Shared>();

  // Publishes `n` series gpu_power_watts{gpu=i} = base + i at time t.
  void publish(int n, int64_t t, double base) {
    Frame f(reg);
    f.clear(t);
    for (int i = 0; i < n; ++i) f.set(FieldId::kGpuPower, i, base + i);
    live.publish(source, f);
  }
  std::unique_ptr<RemoteWriter> writer(RemoteWriteOptions o) {
    if (o.url.empty()) o.url = "http://127.0.0.1:1/api/v1/write";
    return std::make_unique<RemoteWriter>(o, reg, live, std::make_unique<FakeSender>(shared));
  }
  // Samples received per "gpu" label value.
  std::map<std::string, std::vector<prompb::Sample>> received() {
    std::lock_guard lock(shared->mu);
    std::map<std::string, std::vector<prompb::Sample>> out;
    for (const auto& ts : shared->accepted) {
      std::string gpu;
      for (const auto& [k, v] : ts.labels) {
        if (k == "gpu") gpu = v;
      }
      auto& v = out[gpu];
      v.insert(v.end(), ts.samples.begin(), ts.samples.end());
    }
    return out;
  }
};

TEST(RemoteWriter, SnapshotSendsEverySeriesWithLabels) {
  Fixture fx;
  fx.publish(3, 1000, 100);
  auto w = fx.writer({.external_labels = {{"instance", "node7"}}});
  w->enqueue_snapshot(1000);
  EXPECT_EQ(w->stats().queued, 3u);
  EXPECT_EQ(w->send_once().outcome, Outcome::kOk);

  ASSERT_EQ(fx.shared->accepted.size(), 3u);
  EXPECT_EQ(fx.shared->accepted[2].labels,
            (prompb::LabelPairs{{"__name__", "gpu_power_watts"}, {"gpu", "2"}, {"instance", "node7"}}));
  auto got = fx.received();
  EXPECT_EQ(got["1"][0].value, 101);
  EXPECT_EQ(got["1"][0].timestamp_ms, 1000);
  RemoteWriteStats s = w->stats();
  EXPECT_EQ(s.sent, 3u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.requests, 1u);
  EXPECT_GT(s.last_success_ms, 0);
}

TEST(RemoteWriter, OnlyNewerValuesAreQueued) {
  Fixture fx;
  auto w = fx.writer({});
  fx.publish(2, 1000, 0);
  w->enqueue_snapshot(1000);
  w->enqueue_snapshot(1500);  // nothing new published
  EXPECT_EQ(w->stats().queued, 2u);
  fx.publish(2, 2000, 10);
  w->enqueue_snapshot(2000);
  EXPECT_EQ(w->stats().queued, 4u);
}

TEST(RemoteWriter, BatchesGroupSamplesBySeriesInTimeOrder) {
  Fixture fx;
  auto w = fx.writer({.max_samples_per_send = 4});
  for (int k = 0; k < 3; ++k) {
    fx.publish(2, 1000 * (k + 1), 10 * k);
    w->enqueue_snapshot(1000 * (k + 1));
  }
  // 6 samples: a batch of 4 (two series, two samples each), then 2.
  EXPECT_EQ(w->send_once().outcome, Outcome::kOk);
  ASSERT_EQ(fx.shared->accepted.size(), 2u);
  EXPECT_EQ(fx.shared->accepted[0].samples.size(), 2u);
  EXPECT_EQ(w->send_once().outcome, Outcome::kOk);
  auto got = fx.received();
  ASSERT_EQ(got["0"].size(), 3u);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(got["0"][k].timestamp_ms, 1000 * (k + 1));
    EXPECT_EQ(got["1"][k].value, 10 * k + 1);
  }
}

TEST(RemoteWriter, RetryResendsTheSameBatchUntilAccepted) {
  Fixture fx;
  fx.shared->script = {Outcome::kRetry, Outcome::kRetry};
  auto w = fx.writer({});
  fx.publish(5, 1000, 0);
  w->enqueue_snapshot(1000);
  EXPECT_EQ(w->send_once().outcome, Outcome::kRetry);
  fx.publish(5, 2000, 0);
  w->enqueue_snapshot(2000);  // queued behind the batch in flight
  EXPECT_EQ(w->stats().queued, 10u);
  EXPECT_EQ(w->send_once().outcome, Outcome::kRetry);
  EXPECT_EQ(w->send_once().outcome, Outcome::kOk);
  EXPECT_EQ(w->send_once().outcome, Outcome::kOk);
  ASSERT_EQ(fx.shared->bodies.size(), 4u);
  EXPECT_EQ(fx.shared->bodies[0], fx.shared->bodies[2]);  // byte-identical retry
  RemoteWriteStats s = w->stats();
  EXPECT_EQ(s.sent, 10u);
  EXPECT_EQ(s.retries, 2u);
  EXPECT_EQ(s.requests, 4u);
  EXPECT_EQ(s.last_error, "HTTP 503");
  EXPECT_EQ(fx.received()["4"].size(), 2u);
}

TEST(RemoteWriter, RejectedBatchIsCountedAsFailedAndNotRetried) {
  Fixture fx;
  fx.shared->script = {Outcome::kReject};
  auto w = fx.writer({});
  fx.publish(3, 1000, 0);
  w->enqueue_snapshot(1000);
  EXPECT_EQ(w->send_once().outcome, Outcome::kReject);
  EXPECT_EQ(w->send_once().outcome, Outcome::kOk);  // nothing left
  RemoteWriteStats s = w->stats();
  EXPECT_EQ(s.failed, 3u);
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(fx.shared->bodies.size(), 1u);
}

TEST(RemoteWriter, FullQueueDropsTheOldest) {
  Fixture fx;
  auto w = fx.writer({.queue_max_samples = 10, .max_samples_per_send = 5});
  for (int k = 0; k < 3; ++k) {  // 18 samples into 10 places
    fx.publish(6, 1000 * (k + 1), 0);
    w->enqueue_snapshot(1000 * (k + 1));
  }
  RemoteWriteStats s = w->stats();
  EXPECT_EQ(s.queued, 10u);
  EXPECT_EQ(s.dropped, 8u);
  while (w->stats().queued > 0) ASSERT_EQ(w->send_once().outcome, Outcome::kOk);
  auto got = fx.received();
  // The newest 10: gpus 2..5 at t=2000, all six at t=3000.
  EXPECT_EQ(got["0"].size(), 1u);
  EXPECT_EQ(got["0"][0].timestamp_ms, 3000);
  EXPECT_EQ(got["5"].size(), 2u);
  EXPECT_EQ(w->stats().sent, 10u);
}

TEST(RemoteWriter, VanishedSeriesGetsAStaleMarker) {
  Fixture fx;
  auto w = fx.writer({});
  fx.publish(2, 1000, 0);
  w->enqueue_snapshot(1000);
  fx.publish(1, 2000, 0);  // gpu 1 no longer reported
  w->enqueue_snapshot(2100);
  w->enqueue_snapshot(3000);  // only once
  while (w->stats().queued > 0) ASSERT_EQ(w->send_once().outcome, Outcome::kOk);
  auto got = fx.received();
  ASSERT_EQ(got["1"].size(), 2u);
  EXPECT_TRUE(prompb::is_stale_nan(got["1"][1].value));
  EXPECT_EQ(got["1"][1].timestamp_ms, 2100);
  EXPECT_EQ(got["0"].size(), 2u);
}

TEST(RemoteWriter, SenderThreadBacksOffAndLosesNothing) {
  Fixture fx;
  fx.shared->script = {Outcome::kRetry, Outcome::kRetry, Outcome::kRetry};
  auto w = fx.writer({.interval_ms = 0, .max_samples_per_send = 3, .min_backoff_ms = 1, .max_backoff_ms = 4});
  ASSERT_TRUE(w->start().is_ok());
  for (int k = 0; k < 20; ++k) {
    fx.publish(4, 1000 * (k + 1), k);
    w->enqueue_snapshot(1000 * (k + 1));
  }
  w->stop();
  RemoteWriteStats s = w->stats();
  EXPECT_EQ(s.sent, 80u);
  EXPECT_EQ(s.retries, 3u);
  auto got = fx.received();
  for (int g = 0; g < 4; ++g) {
    ASSERT_EQ(got[std::to_string(g)].size(), 20u) << g;
    for (int k = 0; k < 20; ++k) EXPECT_EQ(got[std::to_string(g)][k].value, k + g);
  }
}

TEST(RemoteWriter, SelfMetrics) {
  Fixture fx;
  auto w = fx.writer({.queue_max_samples = 4, .max_samples_per_send = 2});
  fx.publish(6, 1000, 0);
  w->enqueue_snapshot(1000);
  Frame f(fx.reg);
  f.clear(2000);
  w->fill(f);
  std::map<std::string, double> values;
  for (const auto& v : f.values()) {
    const Series& s = fx.reg.series(v.slot);
    values[std::string(field(s.field).name) + "{" + s.labels + "}"] = v.value;
  }
  EXPECT_EQ(values["gpulens_remote_write_samples_total{result=\"dropped\"}"], 2);
  EXPECT_EQ(values["gpulens_remote_write_samples_total{result=\"sent\"}"], 0);
  EXPECT_EQ(values["gpulens_remote_write_queue_samples{}"], 4);
  EXPECT_EQ(values["gpulens_remote_write_queue_capacity_samples{}"], 4);
  EXPECT_EQ(values.count("gpulens_remote_write_last_success_timestamp_seconds{}"), 0u);  // never yet
}

TEST(RemoteWriter, StartRejectsBadOptions) {
  Fixture fx;
  Status s = fx.writer({.url = "ftp://vm/api/v1/write"})->start();
  EXPECT_EQ(s.message(), "remote_write URL \"ftp://vm/api/v1/write\" must start with http:// or https://");
  RemoteWriteOptions o{.url = "https://vm/api/v1/write"};
  o.tls.cert_file = "client.pem";
  s = fx.writer(o)->start();
  EXPECT_EQ(s.message(), "remote_write: tls_config.cert_file and tls_config.key_file go together (both or neither)");
  s = fx.writer({.queue_max_samples = 10, .max_samples_per_send = 100})->start();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  s = fx.writer({.external_labels = {{"__bad", "x"}}})->start();
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
}

TEST(Backoff, DoublesUpToTheCapAndResets) {
  Backoff b(50, 300);
  EXPECT_EQ(b.next(), 50);
  EXPECT_EQ(b.next(), 100);
  EXPECT_EQ(b.next(), 200);
  EXPECT_EQ(b.next(), 300);
  EXPECT_EQ(b.next(), 300);
  b.reset();
  EXPECT_EQ(b.next(), 50);
}

// A receiver that accepts and never answers: send() blocks until cancel().
class HungSender : public RemoteSender {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool cancelled = false;
    int sends = 0;
  };
  explicit HungSender(std::shared_ptr<Shared> s) : s_(std::move(s)) {}
  SendResult send(const std::string&) override {
    std::unique_lock lock(s_->mu);
    ++s_->sends;
    s_->cv.notify_all();
    s_->cv.wait(lock, [&] { return s_->cancelled; });
    return {Outcome::kRetry, "cancelled"};
  }
  void cancel() override {
    std::lock_guard lock(s_->mu);
    s_->cancelled = true;
    s_->cv.notify_all();
  }

 private:
  std::shared_ptr<Shared> s_;
};

TEST(RemoteWriter, StopCutsTheRequestInFlightToAHungReceiver) {
  Fixture fx;
  auto hung = std::make_shared<HungSender::Shared>();
  RemoteWriter w({.url = "http://127.0.0.1:1/api/v1/write", .interval_ms = 0, .flush_timeout_ms = 200}, fx.reg,
                 fx.live, std::make_unique<HungSender>(hung));
  ASSERT_TRUE(w.start().is_ok());
  fx.publish(5, 1000, 0);
  w.enqueue_snapshot(1000);
  {
    std::unique_lock lock(hung->mu);
    hung->cv.wait(lock, [&] { return hung->sends > 0; });  // the batch is in flight
  }
  w.stop();  // without the cancel this would never return
  EXPECT_TRUE(hung->cancelled);
  RemoteWriteStats s = w.stats();
  EXPECT_EQ(s.sent, 0u);
  EXPECT_EQ(s.queued, 5u);  // left unsent, and logged so
  w.stop();                 // idempotent
}

TEST(RemoteWriter, StopWithoutFlushTimeCutsAtOnce) {
  Fixture fx;
  auto hung = std::make_shared<HungSender::Shared>();
  RemoteWriter w({.url = "http://127.0.0.1:1/api/v1/write", .interval_ms = 0, .flush_timeout_ms = 0}, fx.reg,
                 fx.live, std::make_unique<HungSender>(hung));
  ASSERT_TRUE(w.start().is_ok());
  fx.publish(1, 1000, 0);
  w.enqueue_snapshot(1000);
  w.stop();
  EXPECT_EQ(w.stats().sent, 0u);
}

// Answers one request on 127.0.0.1 with `reply`, then closes.
class OneReply {
 public:
  explicit OneReply(std::string reply) : reply_(std::move(reply)) {
    fd_ = testing::listen_loopback(1, port_);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      std::string req;
      char buf[4096];
      for (ssize_t n; (n = ::recv(c, buf, sizeof buf, 0)) > 0;) {
        req.append(buf, static_cast<size_t>(n));
        size_t head = req.find("\r\n\r\n"), cl = req.find("Content-Length: ");
        if (head != std::string::npos && cl != std::string::npos &&
            req.size() >= head + 4 + std::stoul(req.substr(cl + 16))) {
          break;
        }
      }
      ::send(c, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      ::close(c);
    });
  }
  ~OneReply() {
    thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }

 private:
  std::string reply_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

TEST(HttpSender, RetryAfterOn429IsHonoured) {
  OneReply srv("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 7\r\nContent-Length: 0\r\n\r\n");
  SendResult r = make_http_sender({.url = srv.url(), .timeout_ms = 5000})->send("x");
  EXPECT_EQ(r.outcome, Outcome::kRetry);
  EXPECT_EQ(r.retry_after_ms, 7000);
  EXPECT_NE(r.error.find("HTTP 429 from " + srv.url() + " (Retry-After 7s)"), std::string::npos) << r.error;
}

TEST(HttpSender, ARedirectIsARejectionNamingWhereItPoints) {
  OneReply srv("HTTP/1.1 301 Moved Permanently\r\nLocation: https://vm:8428/api/v1/write\r\nContent-Length: 0\r\n\r\n");
  SendResult r = make_http_sender({.url = srv.url(), .timeout_ms = 5000})->send("x");
  EXPECT_EQ(r.outcome, Outcome::kReject);
  EXPECT_NE(r.error.find("HTTP 301 from " + srv.url() + ": a redirect to https://vm:8428/api/v1/write, not followed"),
            std::string::npos)
      << r.error;
}

TEST(HttpSender, AnswerWithoutRetryAfterHasNone) {
  OneReply srv("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy");
  SendResult r = make_http_sender({.url = srv.url(), .timeout_ms = 5000})->send("x");
  EXPECT_EQ(r.outcome, Outcome::kRetry);
  EXPECT_EQ(r.retry_after_ms, -1);
  EXPECT_NE(r.error.find(": busy"), std::string::npos) << r.error;
}

TEST(HttpSender, BatchesShareOneKeptAliveConnection) {
  testing::KeepAliveServer srv({.reply = "HTTP/1.1 204 No Content\r\n\r\n"});
  auto sender = make_http_sender({.url = srv.url("/api/v1/write"), .timeout_ms = 5000});
  for (int i = 0; i < 5; ++i) EXPECT_EQ(sender->send("batch").outcome, Outcome::kOk) << i;
  EXPECT_EQ(srv.requests(), 5);
  EXPECT_EQ(srv.accepted(), 1);
}

// A receiver that closes a kept-alive connection as the next batch arrives
// (its idle timeout racing the send): the batch goes again at once on a new
// connection, not as a failed send to back off from.
TEST(HttpSender, ABatchOnAConnectionTheReceiverDroppedIsSentAgainAtOnce) {
  testing::KeepAliveServer srv({.reply = "HTTP/1.1 204 No Content\r\n\r\n", .answers_per_connection = 1});
  auto sender = make_http_sender({.url = srv.url("/api/v1/write"), .timeout_ms = 5000});
  for (int i = 0; i < 3; ++i) {
    SendResult r = sender->send("batch");
    EXPECT_EQ(r.outcome, Outcome::kOk) << i << ": " << r.error;
  }
  EXPECT_EQ(srv.accepted(), 3);
  EXPECT_EQ(srv.requests(), 5);  // 3 answered, 2 that met a dropped connection
}

}  // namespace
}  // namespace gpulens

namespace gpulens {
namespace {

// A slot the registry freed and gave to another series (a process that exited
// an hour ago, a new one now) is sent under the new series' labels; what was
// still queued for the old one is dropped, never relabelled.
TEST(RemoteWriter, ReusedSlotIsSentUnderItsNewLabels) {
  Fixture fx;
  auto w = fx.writer({});
  auto publish_pid = [&](int pid, int64_t t) {
    Frame f(fx.reg);
    f.clear(t);
    f.set(FieldId::kGpuProcessMemoryUsed, 0, Labels{{"pid", std::to_string(pid)}}, pid);
    fx.live.publish(fx.source, f);
  };
  publish_pid(1, 1000);
  w->enqueue_snapshot(1000);
  ASSERT_EQ(w->send_once().outcome, Outcome::kOk);
  publish_pid(1, 2000);
  w->enqueue_snapshot(2000);  // queued, not sent yet
  Frame none(fx.reg);
  none.clear(3000);
  fx.live.publish(fx.source, none);  // pid 1 exits
  {
    std::lock_guard lock(fx.reg.mutex());
    const uint32_t slot = 0;
    fx.reg.release_locked({slot});                   // looked up above: kept, marks cleared
    ASSERT_EQ(fx.reg.release_locked({slot}).size(), 1u);
  }
  publish_pid(2, 4000);
  ASSERT_EQ(fx.reg.slot(FieldId::kGpuProcessMemoryUsed, 0, Labels{{"pid", "2"}}), 0u);
  w->enqueue_snapshot(4000);
  while (w->stats().queued > 0) ASSERT_EQ(w->send_once().outcome, Outcome::kOk);
  std::map<std::string, std::vector<double>> by_pid;
  for (const auto& ts : fx.shared->accepted) {
    for (const auto& [k, v] : ts.labels) {
      if (k == "pid") {
        for (const auto& s : ts.samples) by_pid[v].push_back(s.value);
      }
    }
  }
  EXPECT_EQ(by_pid["1"], (std::vector<double>{1}));
  ASSERT_EQ(by_pid["2"].size(), 1u);  // pid 2's sample, under pid 2's labels
  EXPECT_EQ(by_pid["2"][0], 2);
  EXPECT_GE(w->stats().dropped, 1u);  // pid 1's queued sample
}

}  // namespace
}  // namespace gpulens
