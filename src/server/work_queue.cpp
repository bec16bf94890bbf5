// Worker threads behind a bounded queue.
#include "server/work_queue.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace gpulens {

WorkQueue::WorkQueue(size_t threads, size_t max_waiting) : max_waiting_(max_waiting) {
  for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    jobs_.clear();
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

bool WorkQueue::submit(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_ || jobs_.size() >= max_waiting_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

void WorkQueue::run() {
  // Linux: a thread's nice value is its own; best effort.
  [[maybe_unused]] int rc = setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5);
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace gpulens
