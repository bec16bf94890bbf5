// A bounded queue of jobs run by a few worker threads, for the requests whose
// cost grows with the history (findings over a range, history queries,
// exports), so that the listener's event loop never waits for one.
//
//   WorkQueue q(2, 16);              // 2 threads, at most 16 jobs waiting
//   if (!q.submit([] { ... })) ...;  // full: the caller answers 503
//
// Workers run at a lower scheduling priority (nice +5) than the event loop,
// so that on a busy node a scrape is not queued behind them for CPU.
// The destructor lets running jobs finish and drops the waiting ones.
//
// Thread-safety: submit() from any thread.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace gpulens {

class WorkQueue {
 public:
  WorkQueue(size_t threads, size_t max_waiting);
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `job`; false (and `job` not run) when max_waiting jobs wait already.
  bool submit(std::function<void()> job);

 private:
  void run();

  const size_t max_waiting_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gpulens
