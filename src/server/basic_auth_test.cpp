// The basic-auth verifier: a capped bcrypt cost, unknown users checked at
// the highest configured cost, one slow check holding one worker only, and
// a verifier that goes away without waiting for a check in progress.
#include "server/basic_auth.h"

#include <poll.h>

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>

#include "server/bcrypt.h"
#include "server/web_config.h"

namespace gpulens {
namespace {

constexpr const char* kFake = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";

std::string with_cost(int cost) {
  std::string h = kFake;
  h[4] = static_cast<char>('0' + cost / 10);
  h[5] = static_cast<char>('0' + cost % 10);
  return h;
}

// "Basic base64(user:fakepassword)" for a few users.
std::string basic(const std::string& user) {
  if (user == "slow") return "Basic c2xvdzpmYWtlcGFzc3dvcmQ=";
  if (user == "fast") return "Basic ZmFzdDpmYWtlcGFzc3dvcmQ=";
  if (user == "nobody") return "Basic bm9ib2R5OmZha2VwYXNzd29yZA==";
  return "";
}

// A matcher that holds every check of the hash `held` until released, and
// records the hashes it was asked for.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  std::string held;
  bool released = false;
  int entered = 0;  // checks of `held` now waiting
  std::vector<std::string> hashes;
};

// The gate is shared with the matcher: a worker may still be inside it
// after the test ends.
BasicAuthVerifier::Matcher matcher_of(const std::shared_ptr<Gate>& g) {
  return [g](std::string_view, std::string_view hash) {
    Gate& gate = *g;
    {
      std::unique_lock lock(gate.mu);
      gate.hashes.emplace_back(hash);
      if (hash == gate.held) {
        ++gate.entered;
        gate.cv.notify_all();
        gate.cv.wait(lock, [&] { return gate.released; });
      }
    }
    return true;
  };
}

void wait_entered(Gate& g, int n) {
  std::unique_lock lock(g.mu);
  g.cv.wait(lock, [&] { return g.entered >= n; });
}

void release(Gate& g) {
  std::lock_guard lock(g.mu);
  g.released = true;
  g.cv.notify_all();
}

// The tickets finished, waiting on the notify fd (no sleeps).
std::set<uint64_t> wait_done(BasicAuthVerifier& v, size_t n) {
  std::set<uint64_t> out;
  while (out.size() < n) {
    pollfd p{.fd = v.notify_fd(), .events = POLLIN, .revents = 0};
    EXPECT_GE(poll(&p, 1, 60'000), 1) << "no check finished within a minute";
    if (p.revents == 0) break;
    for (const auto& d : v.take_done()) out.insert(d.ticket);
  }
  return out;
}

TEST(BcryptCost, CappedInTheWebConfigAndNeverComputedAbove) {
  for (int cost : {19, 31}) {
    auto c = parse_web_config("basic_auth_users:\n  prom: " + with_cost(cost) + "\n", "web.yml", "/etc");
    ASSERT_FALSE(c) << cost;
    EXPECT_NE(c.status().message().find("bcrypt cost " + std::to_string(cost) + " is above 18"), std::string::npos)
        << c.status().message();
    EXPECT_NE(c.status().message().find("web.yml:2"), std::string::npos) << c.status().message();
  }
  EXPECT_TRUE(parse_web_config("basic_auth_users:\n  prom: " + with_cost(18) + "\n", "web.yml", "/etc"));
  // Refused before crypt_r: at cost 31 this would run for hours.
  EXPECT_FALSE(bcrypt_matches("fakepassword", with_cost(31)));
}

TEST(BasicAuth, UnknownUsersAreCheckedAtTheHighestConfiguredCost) {
  const BasicAuthVerifier::Users mixed = {{"a", with_cost(4)}, {"b", with_cost(12)}, {"c", with_cost(10)}};
  EXPECT_EQ(BasicAuthVerifier::stand_in_hash(mixed), with_cost(12));
  EXPECT_EQ(BasicAuthVerifier::stand_in_hash({{"a", with_cost(5)}}), with_cost(5));
  EXPECT_EQ(BasicAuthVerifier::stand_in_hash({}), with_cost(10));

  auto gate = std::make_shared<Gate>();
  BasicAuthVerifier v(8, 2, matcher_of(gate));
  ASSERT_EQ(v.check(mixed, basic("nobody"), 1), BasicAuthVerifier::Verdict::kPending);
  EXPECT_EQ(wait_done(v, 1), std::set<uint64_t>{1});
  std::lock_guard lock(gate->mu);
  ASSERT_EQ(gate->hashes.size(), 1u);
  EXPECT_EQ(gate->hashes[0].substr(0, 7), "$2y$12$");  // the cost of the slowest known user
}

TEST(BasicAuth, OneSlowCheckDoesNotHoldOtherLogins) {
  const BasicAuthVerifier::Users users = {{"slow", with_cost(17)}, {"fast", with_cost(4)}};
  auto gate = std::make_shared<Gate>();
  gate->held = with_cost(17);
  auto v = std::make_unique<BasicAuthVerifier>(8, 2, matcher_of(gate));
  ASSERT_EQ(v->check(users, basic("slow"), 1), BasicAuthVerifier::Verdict::kPending);
  wait_entered(*gate, 1);
  // The same user: one more may wait, a third is refused at once (429).
  ASSERT_EQ(v->check(users, basic("slow"), 2), BasicAuthVerifier::Verdict::kPending);
  EXPECT_EQ(v->check(users, basic("slow"), 3), BasicAuthVerifier::Verdict::kBusy);
  // Another user is checked while the slow one still runs.
  ASSERT_EQ(v->check(users, basic("fast"), 4), BasicAuthVerifier::Verdict::kPending);
  EXPECT_EQ(wait_done(*v, 1), std::set<uint64_t>{4});
  {
    std::lock_guard lock(gate->mu);
    EXPECT_EQ(gate->entered, 1);  // ticket 2 waits for ticket 1, it does not take the second worker
  }
  EXPECT_EQ(v->check(users, basic("fast"), 5), BasicAuthVerifier::Verdict::kGranted);  // from the cache
  EXPECT_EQ(v->stats().refused_busy, 1u);
  // Going away does not wait for the check in progress (a SIGTERM never
  // hangs on bcrypt): the destructor returns while the gate still holds it.
  v.reset();
  release(*gate);
}

}  // namespace
}  // namespace gpulens
