// The credential cache and the bcrypt worker.
#include "server/basic_auth.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "server/bcrypt.h"

namespace gpulens {
namespace {

constexpr size_t kGrantedEntries = 128;
constexpr size_t kDeniedEntries = 1024;
// exporter-toolkit's hash of "fakepassword", cost 10: unknown users cost
// the same as known ones.
constexpr std::string_view kFakeHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

bool decode_base64(std::string_view in, std::string& out) {
  if (in.empty() || in.size() % 4 != 0 || in.size() > 8192) return false;
  out.assign(in.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return false;
  size_t pad = 0;
  if (in.back() == '=') ++pad;
  if (in.size() >= 2 && in[in.size() - 2] == '=') ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return true;
}

void remember(std::unordered_set<std::string>& set, std::deque<std::string>& order, size_t cap, const std::string& key) {
  if (!set.insert(key).second) return;
  order.push_back(key);
  if (order.size() > cap) {
    set.erase(order.front());
    order.pop_front();
  }
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
  std::string decoded;
  if (!decode_base64(a, decoded)) return false;
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  user = decoded.substr(0, colon);
  password = decoded.substr(colon + 1);
  return true;
}

BasicAuthVerifier::BasicAuthVerifier(size_t max_queued) : max_queued_(max_queued) {
  if (RAND_bytes(secret_, sizeof secret_) != 1) {
    // Without randomness the key is still unknown outside the process.
    const auto seed = reinterpret_cast<uintptr_t>(this) ^ static_cast<uintptr_t>(getpid());
    std::memcpy(secret_, &seed, sizeof seed);
  }
  notify_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  worker_ = std::thread([this] { run(); });
}

BasicAuthVerifier::~BasicAuthVerifier() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
  close(notify_fd_);
  OPENSSL_cleanse(secret_, sizeof secret_);
}

std::string BasicAuthVerifier::cache_key(std::string_view user, std::string_view hash, std::string_view password) const {
  std::string msg;
  msg.reserve(user.size() + hash.size() + password.size() + 2);
  msg.append(user).push_back('\0');
  msg.append(hash).push_back('\0');
  msg.append(password);
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret_, sizeof secret_, reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), md, &len);
  OPENSSL_cleanse(msg.data(), msg.size());
  return std::string(reinterpret_cast<const char*>(md), len);
}

BasicAuthVerifier::Verdict BasicAuthVerifier::check(const Users& users, std::string_view authorization,
                                                    uint64_t ticket) {
  std::string user, password;
  if (!parse_basic_credentials(authorization, user, password)) return Verdict::kDenied;
  auto it = users.find(user);
  const bool known = it != users.end();
  const std::string_view hash = known ? std::string_view(it->second) : kFakeHash;
  std::string key = cache_key(user, hash, password);
  std::lock_guard lock(mu_);
  if (known && granted_.count(key)) {
    ++stats_.cache_hits;
    return Verdict::kGranted;
  }
  if (denied_.count(key)) {
    ++stats_.cache_hits;
    return Verdict::kDenied;
  }
  if (queue_.size() >= max_queued_) {
    ++stats_.refused_busy;
    return Verdict::kBusy;
  }
  queue_.push_back({ticket, std::move(key), std::move(password), std::string(hash), known});
  cv_.notify_one();
  return Verdict::kPending;
}

std::vector<BasicAuthVerifier::Done> BasicAuthVerifier::take_done() {
  uint64_t n = 0;
  [[maybe_unused]] ssize_t r = read(notify_fd_, &n, sizeof n);
  std::lock_guard lock(mu_);
  std::vector<Done> out;
  out.swap(done_);
  return out;
}

BasicAuthVerifier::Stats BasicAuthVerifier::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void BasicAuthVerifier::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    const bool granted = bcrypt_matches(job.password, job.hash) && job.known_user;
    OPENSSL_cleanse(job.password.data(), job.password.size());
    lock.lock();
    ++stats_.bcrypt_runs;
    if (granted) remember(granted_, granted_order_, kGrantedEntries, job.key);
    else remember(denied_, denied_order_, kDeniedEntries, job.key);
    done_.push_back({job.ticket, granted});
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t w = write(notify_fd_, &one, sizeof one);
  }
}

}  // namespace gpulens
