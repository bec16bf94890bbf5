// The credential cache and the bcrypt worker.
#include "server/basic_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_set>

#include "server/bcrypt.h"
#include "util/base64.h"

namespace gpulens {
namespace {

constexpr size_t kGrantedEntries = 128;
constexpr size_t kDeniedEntries = 1024;
constexpr int kChecksPerUser = 2;  // one running, one waiting
// exporter-toolkit's hash of "fakepassword"; its cost digits are replaced by
// the highest configured cost (stand_in_hash).
constexpr std::string_view kFakeHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

void remember(std::unordered_set<std::string>& set, std::deque<std::string>& order, size_t cap, const std::string& key) {
  if (!set.insert(key).second) return;
  order.push_back(key);
  if (order.size() > cap) {
    set.erase(order.front());
    order.pop_front();
  }
}

// HMAC-SHA256 under the process's key of (user, stored hash, password).
std::string cache_key(const unsigned char (&secret)[32], std::string_view user, std::string_view hash,
                      std::string_view password) {
  std::string msg;
  msg.reserve(user.size() + hash.size() + password.size() + 2);
  msg.append(user).push_back('\0');
  msg.append(hash).push_back('\0');
  msg.append(password);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret, sizeof secret, reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), md, &len);
  OPENSSL_cleanse(msg.data(), msg.size());
  return std::string(reinterpret_cast<const char*>(md), len);
}

}  // namespace

bool parse_basic_credentials(std::string_view a, std::string& user, std::string& password) {
  while (!a.empty() && a.front() == ' ') a.remove_prefix(1);
  if (a.size() < 6) return false;
  for (size_t i = 0; i < 5; ++i) {
    if ((a[i] | 0x20) != "basic"[i]) return false;
  }
  if (a[5] != ' ') return false;
  a.remove_prefix(6);
  while (!a.empty() && a.front() == ' ') a.remove_prefix(1);
  while (!a.empty() && a.back() == ' ') a.remove_suffix(1);
  if (a.empty() || a.size() > 8192) return false;  // no credentials, or kilobytes that are none
  const Result<std::string> decoded = base64_decode(a);
  if (!decoded) return false;
  const size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  user = decoded->substr(0, colon);
  password = decoded->substr(colon + 1);
  return true;
}

struct BasicAuthVerifier::Shared {
  struct Job {
    uint64_t ticket;
    std::string user;
    std::string key;  // cache key
    std::string password, hash;
    bool known_user;
  };

  explicit Shared(size_t queue_cap) : max_queued(queue_cap) {}
  ~Shared() {
    if (notify_fd >= 0) close(notify_fd);
    OPENSSL_cleanse(secret, sizeof secret);
  }
  void run();

  const size_t max_queued;
  Matcher matcher;
  unsigned char secret[32] = {};
  int notify_fd = -1;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  std::vector<Done> done;
  std::map<std::string, int, std::less<>> per_user;  // checks queued or running, by user name
  std::set<std::string, std::less<>> running;        // user names with a check running
  std::unordered_set<std::string> granted, denied;
  std::deque<std::string> granted_order, denied_order;
  Stats stats;
  bool stopping = false;
};

BasicAuthVerifier::BasicAuthVerifier(size_t max_queued, size_t workers, Matcher matcher)
    : shared_(std::make_shared<Shared>(max_queued)) {
  Shared& s = *shared_;
  s.matcher = matcher ? std::move(matcher) : Matcher(bcrypt_matches);
  if (RAND_bytes(s.secret, sizeof s.secret) != 1) {
    // Without randomness the key is still unknown outside the process.
    const auto seed = reinterpret_cast<uintptr_t>(this) ^ static_cast<uintptr_t>(getpid());
    std::memcpy(s.secret, &seed, sizeof seed);
  }
  s.notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  // Detached: a worker in the middle of a slow hash keeps the shared state
  // alive and leaves when it is done; nobody waits for it.
  for (size_t i = 0; i < std::max<size_t>(workers, 1); ++i) {
    std::thread([shared = shared_] { shared->run(); }).detach();
  }
}

BasicAuthVerifier::~BasicAuthVerifier() {
  {
    std::lock_guard lock(shared_->mu);
    shared_->stopping = true;
    shared_->queue.clear();
  }
  shared_->cv.notify_all();
}

int BasicAuthVerifier::notify_fd() const { return shared_->notify_fd; }

std::string BasicAuthVerifier::stand_in_hash(const Users& users) {
  int cost = 0;
  for (const auto& [user, hash] : users) {
    if (is_bcrypt_hash(hash)) cost = std::max(cost, std::min(bcrypt_cost(hash), kMaxBcryptCost));
  }
  if (cost == 0) cost = 10;
  std::string h(kFakeHash);
  h[4] = static_cast<char>('0' + cost / 10);
  h[5] = static_cast<char>('0' + cost % 10);
  return h;
}

BasicAuthVerifier::Verdict BasicAuthVerifier::check(const Users& users, std::string_view authorization,
                                                    uint64_t ticket) {
  std::string user, password;
  if (!parse_basic_credentials(authorization, user, password)) return Verdict::kDenied;
  auto it = users.find(user);
  const bool known = it != users.end();
  const std::string hash = known ? it->second : stand_in_hash(users);
  Shared& s = *shared_;
  std::string key = cache_key(s.secret, user, hash, password);
  std::lock_guard lock(s.mu);
  if (known && s.granted.count(key)) {
    ++s.stats.cache_hits;
    return Verdict::kGranted;
  }
  if (s.denied.count(key)) {
    ++s.stats.cache_hits;
    return Verdict::kDenied;
  }
  int& mine = s.per_user[user];
  if (s.queue.size() >= s.max_queued || mine >= kChecksPerUser) {
    if (mine == 0) s.per_user.erase(user);
    ++s.stats.refused_busy;
    return Verdict::kBusy;
  }
  ++mine;
  s.queue.push_back({ticket, std::move(user), std::move(key), std::move(password), hash, known});
  s.cv.notify_one();
  return Verdict::kPending;
}

std::vector<BasicAuthVerifier::Done> BasicAuthVerifier::take_done() {
  uint64_t n = 0;
  [[maybe_unused]] ssize_t r = read(shared_->notify_fd, &n, sizeof n);
  std::lock_guard lock(shared_->mu);
  std::vector<Done> out;
  out.swap(shared_->done);
  return out;
}

BasicAuthVerifier::Stats BasicAuthVerifier::stats() const {
  std::lock_guard lock(shared_->mu);
  return shared_->stats;
}

void BasicAuthVerifier::Shared::run() {
  std::unique_lock lock(mu);
  for (;;) {
    // The oldest job whose user has no check running.
    auto next = queue.end();
    cv.wait(lock, [&] {
      if (stopping) return true;
      next = std::find_if(queue.begin(), queue.end(), [&](const Job& j) { return !running.count(j.user); });
      return next != queue.end();
    });
    if (stopping) return;
    Job job = std::move(*next);
    queue.erase(next);
    running.insert(job.user);
    lock.unlock();
    const bool ok = matcher(job.password, job.hash) && job.known_user;
    OPENSSL_cleanse(job.password.data(), job.password.size());
    lock.lock();
    running.erase(job.user);
    if (auto u = per_user.find(job.user); u != per_user.end() && --u->second <= 0) per_user.erase(u);
    if (stopping) return;
    ++stats.bcrypt_runs;
    if (ok) remember(granted, granted_order, kGrantedEntries, job.key);
    else remember(denied, denied_order, kDeniedEntries, job.key);
    done.push_back({job.ticket, ok});
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(notify_fd, &one, sizeof one);
    cv.notify_all();  // a job of this user may wait for this one
  }
}

}  // namespace gpulens
