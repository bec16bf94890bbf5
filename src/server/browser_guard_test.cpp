// The Host/Origin guard lets scrapers, scripts and the agent's own page in
// and keeps rebinding and cross-site pages out.
#include "server/browser_guard.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace gpulens {
namespace {

struct Req {
  std::vector<std::pair<std::string_view, std::string_view>> headers;
  ServerRequest req;
  Req(std::string_view path, std::string_view host, std::string_view origin = {}) {
    if (!host.empty()) headers.emplace_back("Host", host);
    if (!origin.empty()) headers.emplace_back("Origin", origin);
    req.method = "GET";
    req.path = path;
    req.headers = &headers;
  }
};

TEST(BrowserGuard, IpAddressesLoopbackAndTheMachinesNamesPass) {
  BrowserGuard g({});
  EXPECT_TRUE(g.host_allowed("127.0.0.1:9400"));
  EXPECT_TRUE(g.host_allowed("10.3.4.5:9400"));
  EXPECT_TRUE(g.host_allowed("[::1]:9400"));
  EXPECT_TRUE(g.host_allowed("localhost:9400"));
  EXPECT_TRUE(g.host_allowed("LOCALHOST."));
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_TRUE(g.host_allowed(std::string(host) + ":9400"));
  EXPECT_FALSE(g.host_allowed("attacker.example:9400"));
  EXPECT_FALSE(g.host_allowed("127.0.0.1.attacker.example"));
  EXPECT_FALSE(g.host_allowed("[not-an-ip]:9400"));
  EXPECT_FALSE(g.host_allowed(""));
}

TEST(BrowserGuard, ConfiguredNamesAndTheWildcard) {
  BrowserGuard g({"GPU-Node-1.example"});
  EXPECT_TRUE(g.host_allowed("gpu-node-1.example:9400"));
  EXPECT_FALSE(g.host_allowed("gpu-node-2.example:9400"));
  EXPECT_TRUE(BrowserGuard({"*"}).host_allowed("anything.example"));
}

TEST(BrowserGuard, RebindingIsRefusedOnThePageAndTheApiOnly) {
  BrowserGuard g({});
  for (const char* path : {"/", "/assets/app.js", "/api/v1/current", "/api/v1/findings"}) {
    auto why = g.refuse(Req(path, "rebind.attacker.example:9400").req);
    ASSERT_TRUE(why) << path;
    EXPECT_NE(why->find("allowed_hosts"), std::string::npos);
  }
  // Scrapers address /metrics by any name; HTTP/1.0 clients send no Host.
  EXPECT_FALSE(g.refuse(Req("/metrics", "node.dc.example:9400").req));
  EXPECT_FALSE(g.refuse(Req("/healthz", "node.dc.example:9400").req));
  EXPECT_FALSE(g.refuse(Req("/api/v1/current", "").req));
  EXPECT_FALSE(g.refuse(Req("/api/v1/current", "127.0.0.1:9400").req));
}

TEST(BrowserGuard, OnlyTheAgentsOwnOriginMayCarryAnOrigin) {
  BrowserGuard g({});
  EXPECT_FALSE(g.refuse(Req("/api/v1/current", "127.0.0.1:9400", "http://127.0.0.1:9400").req));
  EXPECT_FALSE(g.refuse(Req("/", "localhost:9400", "https://LOCALHOST:9400").req));
  EXPECT_TRUE(g.refuse(Req("/api/v1/current", "127.0.0.1:9400", "http://evil.example").req));
  EXPECT_TRUE(g.refuse(Req("/metrics/job/x", "127.0.0.1:9400", "http://127.0.0.1:8080").req));  // push from elsewhere
  EXPECT_TRUE(g.refuse(Req("/metrics", "127.0.0.1:9400", "null").req));
  EXPECT_TRUE(BrowserGuard({"*"}).refuse(Req("/", "x:1", "http://y:1").req));  // "*" is about Host only
}

}  // namespace
}  // namespace gpulens
