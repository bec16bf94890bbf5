// Host and Origin checks of the web page and the API.
#include "server/browser_guard.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstdlib>

namespace gpulens {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// "name:port" / "[v6]:port" / "name" -> the host part, brackets kept off.
std::string_view host_part(std::string_view hostport, bool& bracketed) {
  bracketed = false;
  if (!hostport.empty() && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return {};
    bracketed = true;
    return hostport.substr(1, close - 1);
  }
  const size_t colon = hostport.rfind(':');
  return colon == std::string_view::npos ? hostport : hostport.substr(0, colon);
}

bool is_ip(std::string_view host, bool bracketed) {
  const std::string h(host);
  unsigned char buf[16];
  if (bracketed) return inet_pton(AF_INET6, h.c_str(), buf) == 1;
  return inet_pton(AF_INET, h.c_str(), buf) == 1;
}

bool guarded_path(std::string_view path) {
  return path == "/" || path.starts_with("/assets/") || path.starts_with("/api/");
}

}  // namespace

BrowserGuard::BrowserGuard(std::vector<std::string> allowed) {
  names_.push_back("localhost");
  if (char host[256] = {}; gethostname(host, sizeof host - 1) == 0 && host[0] != 0) names_.push_back(lower(host));
  if (const char* node = std::getenv("NODE_NAME"); node != nullptr && *node != 0) names_.push_back(lower(node));
  for (const auto& a : allowed) {
    if (a == "*") any_ = true;
    else names_.push_back(lower(a));
  }
}

bool BrowserGuard::host_allowed(std::string_view hostport) const {
  if (any_) return true;
  bool bracketed = false;
  std::string_view host = host_part(hostport, bracketed);
  if (host.empty()) return false;
  if (is_ip(host, bracketed)) return true;
  if (host.back() == '.') host.remove_suffix(1);  // "localhost." is localhost
  const std::string h = lower(host);
  for (const auto& n : names_) {
    if (h == n) return true;
  }
  return false;
}

std::optional<std::string> BrowserGuard::refuse(const ServerRequest& req) const {
  const std::string_view host = req.header("host");
  const std::string_view origin = req.header("origin");
  if (!origin.empty()) {
    // Same origin only: scheme://host[:port] whose authority is our Host.
    const size_t sep = origin.find("://");
    const std::string_view authority = sep == std::string_view::npos ? std::string_view{} : origin.substr(sep + 3);
    if (authority.empty() || lower(authority) != lower(host)) {
      return "cross-origin request refused: Origin " + std::string(origin.substr(0, 200)) +
             " is not this agent's own origin";
    }
  }
  if (!host.empty() && guarded_path(req.path) && !host_allowed(host)) {
    return "host \"" + std::string(host.substr(0, 200)) +
           "\" is not allowed for the web page and the API (a guard against DNS rebinding): "
           "add the name to allowed_hosts, or use an IP address";
  }
  return std::nullopt;
}

bool refuse_cross_site(const BrowserGuard& guard, const ServerRequest& req, ServerResponse& res) {
  auto why = guard.refuse(req);
  if (!why) return false;
  res.status = 403;
  res.body = *why + "\n";
  return true;
}

}  // namespace gpulens
