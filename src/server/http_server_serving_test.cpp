// The serving path: a cached page goes out without an allocation or a copy,
// and no request answered on a worker delays a scrape.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "agent/agent.h"
#include "server/http_server.h"
#include "server/out_queue.h"
#include "sources/sim/sim_source.h"

// Every allocation of this test binary is counted (all threads), and those of
// the calling thread apart.
namespace {
std::atomic<uint64_t> g_allocs{0};
thread_local uint64_t t_allocs = 0;
}  // namespace

// GCC pairs an inlined delete with the new expression it sees and does not
// know this new is malloc: the pairing is right, the warning is not.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

void* operator new(std::size_t n) {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  ++t_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
// Every other form of new and delete is replaced too, so that a library's
// `new (std::nothrow)` or `new[]` (simdjson's parser) is malloc'd like the
// delete that frees it: AddressSanitizer reports a mismatch otherwise.
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  ++t_allocs;
  return std::malloc(n == 0 ? 1 : n);
}
void* operator new[](std::size_t n) { return operator new(n); }
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace gpulens {
namespace {

std::string text_page(size_t bytes) {
  std::string page;
  for (int i = 0; page.size() < bytes; ++i) {
    page += "gpu_sm_occupancy_ratio{gpu=\"" + std::to_string(i % 8) + "\",gpu_uuid=\"GPU-" + std::to_string(i) +
            "\"} 0." + std::to_string(i * 7919 % 1000) + "\n";
  }
  return page;
}

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  timeval tv{10, 0};  // a failing test ends instead of hanging
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

// Reads one response (head + Content-Length bytes) into buf[0..cap) without
// allocating; returns its size, 0 on error. `head_len` gets the head's size.
size_t read_response(int fd, char* buf, size_t cap, size_t& head_len) {
  size_t got = 0;
  head_len = 0;
  size_t want = 0;
  for (;;) {
    if (head_len == 0) {
      const std::string_view v(buf, got);
      if (size_t e = v.find("\r\n\r\n"); e != std::string_view::npos) {
        head_len = e + 4;
        const size_t cl = v.find("Content-Length: ");
        if (cl == std::string_view::npos || cl > e) return 0;
        size_t n = 0;
        std::from_chars(v.data() + cl + 16, v.data() + e, n);
        want = head_len + n;
      }
    }
    if (head_len != 0 && got >= want) return got == want ? got : 0;
    if (got == cap) return 0;
    const ssize_t r = recv(fd, buf + got, cap - got, 0);
    if (r <= 0) return 0;
    got += static_cast<size_t>(r);
  }
}

std::string response(int fd) {
  std::vector<char> buf(1 << 20);
  size_t head_len = 0;
  const size_t n = read_response(fd, buf.data(), buf.size(), head_len);
  return std::string(buf.data(), n);
}

void send_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t w = send(fd, s.data(), s.size(), MSG_NOSIGNAL);
    if (w <= 0) return;
    s.remove_prefix(static_cast<size_t>(w));
  }
}

TEST(OutQueue, SendsOwnedBytesAndSharedPagesInOrder) {
  auto page = std::make_shared<const std::string>("PAGE-BYTES");
  OutQueue q;
  q.append("head1|");
  q.append_shared(page);
  q.append("head2|");
  q.append("more|");  // joins the owned run before it
  q.append_shared(page);
  EXPECT_EQ(q.pending(), 6u + 10 + 6 + 5 + 10);
  EXPECT_EQ(page.use_count(), 3);  // held, not copied
  std::string sent;
  while (!q.empty()) {
    iovec iov[2];
    const int n = q.gather(iov, 2);
    ASSERT_GT(n, 0);
    // Send in odd chunks: 7 bytes at a time across the pieces.
    size_t take = 7;
    size_t done = 0;
    for (int i = 0; i < n && take > 0; ++i) {
      const size_t k = std::min(take, iov[i].iov_len);
      sent.append(static_cast<const char*>(iov[i].iov_base), k);
      take -= k;
      done += k;
    }
    q.consume(done);
  }
  EXPECT_EQ(sent, "head1|PAGE-BYTEShead2|more|PAGE-BYTES");
  EXPECT_EQ(page.use_count(), 1);  // released once sent
  EXPECT_EQ(q.front(), "");
}

TEST(OutQueue, FrontIsTheFirstUnsentRun) {
  auto page = std::make_shared<const std::string>("0123456789");
  OutQueue q;
  q.append("HEAD");
  q.append_shared(page);
  EXPECT_EQ(q.front(), "HEAD");
  q.consume(2);
  EXPECT_EQ(q.front(), "AD");
  q.consume(2);
  EXPECT_EQ(q.front(), "0123456789");
  q.consume(4);
  EXPECT_EQ(q.front(), "456789");
  q.clear();
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(page.use_count(), 1);
}

// A kept-alive scrape of an unchanged shared page: no allocation anywhere in
// the process (the server thread included), and the bytes on the wire are
// the head and then exactly the page.
TEST(HttpServerServing, CachedPageIsServedWithoutAllocationAndUnchanged) {
  auto page = std::make_shared<const std::string>(text_page(150 * 1024));
  HttpServerOptions o{.listen = "127.0.0.1:0"};
  o.offload = [](std::string_view, std::string_view path) { return path == "/api/slow"; };
  HttpServer server(std::move(o), [page](const ServerRequest&, ServerResponse& res) {
    res.content_type = "text/plain; version=0.0.4; charset=utf-8";
    res.shared_body = page;
  });
  ASSERT_TRUE(server.start().is_ok());
  const int fd = connect_to(server.port());
  ASSERT_GE(fd, 0);
  std::vector<char> buf(1 << 20);
  const std::string_view request = "GET /metrics HTTP/1.1\r\nHost: a\r\nAccept-Encoding: identity\r\n\r\n";
  size_t head_len = 0, n = 0;
  for (int i = 0; i < 3; ++i) {  // warm-up: capacities grow, the head is built
    send_all(fd, request);
    n = read_response(fd, buf.data(), buf.size(), head_len);
    ASSERT_GT(n, 0u);
  }
  const uint64_t before = g_allocs.load();
  bool all_read = true;
  for (int i = 0; i < 50; ++i) {
    send_all(fd, request);
    n = read_response(fd, buf.data(), buf.size(), head_len);
    all_read = all_read && n > 0;
  }
  const uint64_t after = g_allocs.load();
  ASSERT_TRUE(all_read);
  EXPECT_EQ(after - before, 0u) << "allocations while serving 50 cached pages";
  const std::string_view head(buf.data(), head_len);
  const std::string_view body(buf.data() + head_len, n - head_len);
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200 OK\r\n")) << head;
  EXPECT_NE(head.find("Content-Length: " + std::to_string(page->size()) + "\r\n"), std::string_view::npos) << head;
  EXPECT_NE(head.find("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"), std::string_view::npos);
  EXPECT_EQ(body, *page);
  close(fd);
  server.stop();
  EXPECT_EQ(page.use_count(), 2);  // the handler's copy and ours: no connection keeps it
}

// The agent's /metrics: one rendered page per sample, handed to every scrape
// of that sample without a copy or an allocation; a page still held by a
// connection is never changed under it.
TEST(AgentServing, MetricsPageIsSharedUntilTheNextSample) {
  auto scenario = sim::load_scenario("healthy-training", std::string(GPULENS_SOURCE_DIR) + "/scenarios");
  ASSERT_TRUE(scenario.ok());
  std::vector<std::unique_ptr<Source>> sources;
  sources.push_back(make_sim_source(std::move(*scenario), 1, 1.0));
  Agent agent({.listen = "", .interval_ms = 1000, .history_ms = 10'000}, std::move(sources));
  std::vector<std::string> notes;
  ASSERT_TRUE(agent.open(notes).is_ok());
  const int64_t t0 = wall_ms();
  agent.collect_once(t0);
  ServerRequest req;
  req.method = "GET";
  req.path = "/metrics";
  ServerResponse first, again;
  agent.handle(req, first);
  ASSERT_TRUE(first.shared_body);
  const std::string page = *first.shared_body;
  EXPECT_NE(page.find("gpu_sm_occupancy_ratio{"), std::string::npos);
  const uint64_t before = t_allocs;
  agent.handle(req, again);
  const uint64_t allocs = t_allocs - before;
  EXPECT_EQ(allocs, 0u);
  EXPECT_EQ(again.shared_body.get(), first.shared_body.get());  // the same buffer, not a copy
  EXPECT_EQ(again.content_type, "text/plain; version=0.0.4; charset=utf-8");
  // A new sample while `first` still holds the page: rendered elsewhere.
  agent.collect_once(t0 + 1000);
  ServerResponse next;
  agent.handle(req, next);
  ASSERT_TRUE(next.shared_body);
  EXPECT_NE(next.shared_body.get(), first.shared_body.get());
  EXPECT_EQ(*first.shared_body, page);
  // Nobody holds the last page any more: the next sample reuses its buffer.
  const std::string* reused = next.shared_body.get();
  first.shared_body.reset();
  again.shared_body.reset();
  next.shared_body.reset();
  agent.collect_once(t0 + 2000);
  agent.handle(req, next);
  EXPECT_EQ(next.shared_body.get(), reused);
}

// A handler blocked until the test lets it go, and told when it started.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int entered = 0;
  void enter_and_wait() {
    std::unique_lock lock(mu);
    ++entered;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void wait_entered(int n) {
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return entered >= n; });
  }
  void release() {
    std::lock_guard lock(mu);
    open = true;
    cv.notify_all();
  }
};
// Opens the latch when a test ends early, so the server's workers can stop.
struct OpenAtExit {
  Latch& latch;
  ~OpenAtExit() { latch.release(); }
};

HttpServer::Handler slow_and_page(Latch& latch, std::shared_ptr<const std::string> page) {
  return [&latch, page](const ServerRequest& req, ServerResponse& res) {
    if (req.path == "/api/slow") {
      latch.enter_and_wait();
      res.body = "slow done\n";
      return;
    }
    res.shared_body = page;
  };
}

TEST(HttpServerServing, ScrapeIsAnsweredWhileAnApiHandlerIsBlocked) {
  Latch latch;
  auto page = std::make_shared<const std::string>("page\n");
  HttpServerOptions o{.listen = "127.0.0.1:0"};
  o.offload = [](std::string_view, std::string_view path) { return path == "/api/slow"; };
  HttpServer server(std::move(o), slow_and_page(latch, page));
  OpenAtExit open_at_exit{latch};
  ASSERT_TRUE(server.start().is_ok());
  const int slow = connect_to(server.port());
  send_all(slow, "GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\n");
  latch.wait_entered(1);  // the slow request is held inside its handler
  for (int i = 0; i < 3; ++i) {
    const int scrape = connect_to(server.port());
    send_all(scrape, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
    const std::string r = response(scrape);
    EXPECT_TRUE(r.starts_with("HTTP/1.1 200 OK")) << r;
    EXPECT_TRUE(r.ends_with("\r\n\r\npage\n")) << r;
    close(scrape);
  }
  // The slow request has had no answer yet.
  char b;
  EXPECT_EQ(recv(slow, &b, 1, MSG_DONTWAIT), -1);
  latch.release();
  const std::string r = response(slow);
  EXPECT_TRUE(r.starts_with("HTTP/1.1 200 OK")) << r;
  EXPECT_TRUE(r.ends_with("slow done\n")) << r;
  close(slow);
}

TEST(HttpServerServing, PipelinedRequestsAreAnsweredInOrderAcrossAWorker) {
  Latch latch;
  auto page = std::make_shared<const std::string>("page\n");
  HttpServerOptions o{.listen = "127.0.0.1:0"};
  o.offload = [](std::string_view, std::string_view path) { return path == "/api/slow"; };
  HttpServer server(std::move(o), slow_and_page(latch, page));
  OpenAtExit open_at_exit{latch};
  ASSERT_TRUE(server.start().is_ok());
  const int fd = connect_to(server.port());
  send_all(fd, "GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\nGET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  latch.wait_entered(1);
  char b;
  EXPECT_EQ(recv(fd, &b, 1, MSG_DONTWAIT), -1);  // the scrape behind it waits for it
  latch.release();
  std::string both;
  char buf[4096];
  while (!both.ends_with("\r\n\r\npage\n")) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    both.append(buf, static_cast<size_t>(n));
  }
  const size_t slow_at = both.find("slow done\n"), page_at = both.find("\r\n\r\npage\n");
  ASSERT_NE(slow_at, std::string::npos) << both;
  ASSERT_NE(page_at, std::string::npos) << both;
  EXPECT_LT(slow_at, page_at) << both;
  EXPECT_TRUE(both.starts_with("HTTP/1.1 200 OK\r\n")) << both;
  close(fd);
}

TEST(HttpServerServing, FullWorkerQueueAnswers503AndKeepsServing) {
  Latch latch;
  auto page = std::make_shared<const std::string>("page\n");
  HttpServerOptions o{.listen = "127.0.0.1:0"};
  o.offload = [](std::string_view, std::string_view path) { return path == "/api/slow"; };
  o.worker_threads = 1;
  o.max_worker_queue = 1;
  HttpServer server(std::move(o), slow_and_page(latch, page));
  OpenAtExit open_at_exit{latch};
  ASSERT_TRUE(server.start().is_ok());
  const std::string slow_req = "GET /api/slow HTTP/1.1\r\nHost: a\r\n\r\n";
  const int running = connect_to(server.port());
  send_all(running, slow_req);
  latch.wait_entered(1);  // one runs; one more may wait, a third may not
  const int a = connect_to(server.port()), b = connect_to(server.port());
  send_all(a, slow_req);
  send_all(b, slow_req);
  // Exactly one of the two finds the queue full, at once, without the latch.
  pollfd p[2] = {{.fd = a, .events = POLLIN, .revents = 0}, {.fd = b, .events = POLLIN, .revents = 0}};
  ASSERT_EQ(poll(p, 2, 10000), 1);
  const int refused_fd = (p[0].revents & POLLIN) ? a : b;
  const int queued_fd = refused_fd == a ? b : a;
  const std::string refused = response(refused_fd);
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503 Service Unavailable")) << refused;
  EXPECT_NE(refused.find("Retry-After: 1\r\n"), std::string::npos) << refused;
  EXPECT_EQ(server.stats().workers_busy, 1u);
  // The listener itself still answers.
  const int scrape = connect_to(server.port());
  send_all(scrape, "GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_TRUE(response(scrape).ends_with("\r\n\r\npage\n"));
  close(scrape);
  // The refused connection is kept alive: it is answered once there is room.
  latch.release();
  EXPECT_TRUE(response(running).ends_with("slow done\n"));
  EXPECT_TRUE(response(queued_fd).ends_with("slow done\n"));
  send_all(refused_fd, slow_req);
  EXPECT_TRUE(response(refused_fd).ends_with("slow done\n"));
  for (int fd : {running, a, b}) close(fd);
}

}  // namespace
}  // namespace gpulens
