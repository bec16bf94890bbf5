// The agent's guard against web pages that use a visitor's browser to reach
// it (DNS rebinding, cross-site requests).
//
// A page on another site cannot read the agent's answers (no route sends
// CORS headers), but two tricks remain: DNS rebinding, where the attacker's
// own name is made to resolve to the agent, so the browser counts the
// agent as that page's origin; and cross-site writes (a form or fetch that
// POSTs to the push routes). So:
//
//   - Host: the web page (/, /assets/*) and the JSON API (/api/*) answer
//     only when the Host header names an IP address (rebinding needs a
//     name), localhost, this machine's host name or NODE_NAME, or a name
//     in `allowed_hosts`; anything else gets 403. "*" in allowed_hosts
//     turns the check off. /metrics and /healthz are left alone: scrapers
//     address them by whatever name service discovery gives.
//   - Origin: on every route, a request that carries an Origin header must
//     come from the agent's own origin (Origin's host:port is the Host
//     header); "null" and other sites get 403.
//
//   BrowserGuard guard({"gpu-node-1.example"});
//   if (auto refusal = guard.refuse(req)) { res.status = 403; res.body = *refusal; }
//
// Thread-safety: immutable after construction; refuse() from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_server.h"

namespace gpulens {

class BrowserGuard {
 public:
  // `allowed`: extra host names (any case, no port); the machine's names are added.
  explicit BrowserGuard(std::vector<std::string> allowed);
  // Why `req` is refused (the 403 body), or nothing.
  std::optional<std::string> refuse(const ServerRequest& req) const;
  // The host-name check alone (for tests): `host` as in a Host header.
  bool host_allowed(std::string_view host) const;

 private:
  std::vector<std::string> names_;  // lowercase
  bool any_ = false;
};

// Answers 403 and returns true when the guard refuses `req`.
bool refuse_cross_site(const BrowserGuard& guard, const ServerRequest& req, ServerResponse& res);

}  // namespace gpulens
