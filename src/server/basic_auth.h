// Basic-auth checks of the HTTP server, arranged so that a failed login
// costs the attacker, not the agent.
//
// bcrypt is slow on purpose (~70 ms at cost 10), so it never runs on the
// event loop: a miss queues the check for ONE worker thread (at most
// `max_queued` waiting; beyond that the request gets 429 at once), and the
// connection waits without being read. Results are cached under an HMAC
// of (user, stored hash, password) with a key drawn at start, so no
// password is kept: a scraper with the right password pays bcrypt once,
// and a client repeating a wrong one is refused from the cache (positive
// entries: 128, negative: 1024, oldest dropped first). An unknown user is
// checked against a fixed bcrypt hash, so the answer takes as long as for
// a known one (no user enumeration by timing). Entries of a changed hash
// never match again (the hash is in the key).
//
//   BasicAuthVerifier v;
//   switch (v.check(users, req.authorization, ticket)) {
//     case kGranted: ...; case kDenied: 401; case kBusy: 429;
//     case kPending: wait for v.notify_fd(), then v.take_done() has {ticket, granted}
//   }
//
// Thread-safety: check(), take_done() and stats() from any thread (the
// event loop); the worker runs bcrypt. The destructor joins the worker.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <vector>

namespace gpulens {

// Splits "Basic base64(user:password)" (scheme case-insensitive); false
// when it is not that.
bool parse_basic_credentials(std::string_view authorization, std::string& user, std::string& password);

class BasicAuthVerifier {
 public:
  enum class Verdict { kGranted, kDenied, kPending, kBusy };
  struct Done {
    uint64_t ticket = 0;
    bool granted = false;
  };
  struct Stats {
    uint64_t bcrypt_runs = 0;   // hashes computed
    uint64_t cache_hits = 0;
    uint64_t refused_busy = 0;  // 429: the queue was full
  };
  using Users = std::map<std::string, std::string, std::less<>>;

  explicit BasicAuthVerifier(size_t max_queued = 8);
  ~BasicAuthVerifier();
  BasicAuthVerifier(const BasicAuthVerifier&) = delete;
  BasicAuthVerifier& operator=(const BasicAuthVerifier&) = delete;

  Verdict check(const Users& users, std::string_view authorization, uint64_t ticket);
  // An eventfd that becomes readable when checks finish (read it to reset).
  int notify_fd() const { return notify_fd_; }
  std::vector<Done> take_done();
  Stats stats() const;

 private:
  struct Job {
    uint64_t ticket;
    std::string key;  // cache key
    std::string password, hash;
    bool known_user;
  };
  void run();
  std::string cache_key(std::string_view user, std::string_view hash, std::string_view password) const;

  const size_t max_queued_;
  unsigned char secret_[32] = {};
  int notify_fd_ = -1;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  std::vector<Done> done_;
  std::unordered_set<std::string> granted_, denied_;
  std::deque<std::string> granted_order_, denied_order_;
  Stats stats_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace gpulens
