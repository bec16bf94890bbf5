// Basic-auth checks of the HTTP server, arranged so that a failed login
// costs the attacker, not the agent.
//
// bcrypt is slow on purpose (~70 ms at cost 10), so it never runs on the
// event loop: a miss queues the check for a small pool of worker threads
// (`workers`, default 4; at most `max_queued` checks waiting, beyond that
// the request gets 429 at once), and the connection waits without being
// read. One user name has at most one check running and one waiting (a
// third gets 429), so a user with a slow hash, or a client hammering one
// name, holds one worker at most and every other login goes on. Results are
// cached under an HMAC of (user, stored hash, password) with a key drawn at
// start, so no password is kept: a scraper with the right password pays
// bcrypt once, and a client repeating a wrong one is refused from the cache
// (positive entries: 128, negative: 1024, oldest dropped first). An unknown
// user is checked against a stand-in hash of the highest cost among the
// configured users, so the answer takes as long as for the slowest known
// one (no user enumeration by timing). Entries of a changed hash never
// match again (the hash is in the key).
//
//   BasicAuthVerifier v;
//   switch (v.check(users, req.authorization, ticket)) {
//     case kGranted: ...; case kDenied: 401; case kBusy: 429;
//     case kPending: wait for v.notify_fd(), then v.take_done() has {ticket, granted}
//   }
//
// Thread-safety: check(), take_done() and stats() from any thread (the
// event loop); the workers run bcrypt. The destructor does not wait for a
// bcrypt run in progress (a stop never hangs on one): the workers share
// their state and exit when their current hash is done.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
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
    uint64_t refused_busy = 0;  // 429: the queue was full, or that user had a check running and one waiting
  };
  using Users = std::map<std::string, std::string, std::less<>>;

  // How a password is checked against a stored hash: bcrypt_matches; tests
  // pass one they can hold.
  using Matcher = std::function<bool(std::string_view password, std::string_view hash)>;

  explicit BasicAuthVerifier(size_t max_queued = 8, size_t workers = 4, Matcher matcher = {});
  ~BasicAuthVerifier();
  BasicAuthVerifier(const BasicAuthVerifier&) = delete;
  BasicAuthVerifier& operator=(const BasicAuthVerifier&) = delete;

  Verdict check(const Users& users, std::string_view authorization, uint64_t ticket);
  // An eventfd that becomes readable when checks finish (read it to reset).
  int notify_fd() const;
  std::vector<Done> take_done();
  Stats stats() const;

  // The hash an unknown user is checked against: a stand-in of the highest
  // cost among `users`' bcrypt hashes (10 when there is none).
  static std::string stand_in_hash(const Users& users);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace gpulens
