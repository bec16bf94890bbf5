// Push routes: token, content negotiation, gzip, then the store.
#include "server/push_routes.h"

#include "util/gunzip.h"
#include "util/json.h"

namespace gpulens {
namespace {

// /metrics/job/<job>..., or /metrics/job@base64/<job in base64>... (the Pushgateway's encoding of a job name
// with a '/' or an empty one).
bool is_pushgateway_path(std::string_view p) {
  return p == "/metrics/job" || p.starts_with("/metrics/job/") || p.starts_with("/metrics/job@base64/");
}
bool is_otlp_path(std::string_view p) { return p == "/v1/metrics"; }

bool istarts_with(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// Constant-time comparison, so the token cannot be guessed byte by byte.
bool same_secret(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

}  // namespace

bool push_token_ok(const push::PushStore& store, std::string_view auth, std::string& why) {
  const std::string& token = store.options().token;
  if (token.empty()) return true;
  if (!istarts_with(auth, "bearer ")) {
    why = "push needs Authorization: Bearer <token>";
    return false;
  }
  auth.remove_prefix(7);
  if (!same_secret(auth, token)) {
    why = "push token does not match push.token_file";
    return false;
  }
  return true;
}

std::optional<size_t> push_body_limit(const push::PushStore* store, std::string_view method, std::string_view path) {
  if (!store || !(is_pushgateway_path(path) || is_otlp_path(path))) return std::nullopt;
  if (method == "DELETE") return 0;  // DELETE takes no body
  return store->options().limits.max_body_bytes;
}

bool handle_push_route(push::PushStore* store, const ServerRequest& req, ServerResponse& res, int64_t now_ms) {
  const bool pgw = is_pushgateway_path(req.path), otlp = is_otlp_path(req.path);
  if (!pgw && !otlp) return false;
  if (!store) {
    res.status = 404;
    res.body = "the push receiver is off: start the agent with `gpulens serve --push` (or push: {enabled: true})\n";
    return true;
  }
  auto answer = [&](int status, std::string_view reason, std::string message) {
    store->count_rejected(reason);
    res.status = status;
    if (otlp) {
      res.content_type = "application/json";
      res.body = "{\"code\":" + std::to_string(status == 401 ? 16 : 3) + ",\"message\":";
      append_json_string(res.body, message);
      res.body += "}\n";
    } else {
      res.body = message + "\n";
    }
    return true;
  };
  if (std::string why; !push_token_ok(*store, req.authorization, why)) return answer(401, "unauthorized", why);
  if (otlp && req.method != "POST") {
    res.status = 405;
    res.body = "OTLP exports are POSTed\n";
    return true;
  }
  if (pgw && req.method != "PUT" && req.method != "POST" && req.method != "DELETE") {
    res.status = 405;
    res.body = "push with PUT (replace the group), POST (replace metrics of the same names) or DELETE\n";
    return true;
  }
  if (pgw && req.content_type.find("application/vnd.google.protobuf") != std::string_view::npos) {
    return answer(415, "unsupported", "protobuf pushes are not supported: push text format 0.0.4");
  }
  if (otlp && !istarts_with(req.content_type, "application/json")) {
    return answer(415, "unsupported",
                  "OTLP/HTTP is taken as JSON only: send Content-Type: application/json (got \"" +
                      std::string(req.content_type.substr(0, 64)) + "\")");
  }
  std::string_view body = req.body;
  static thread_local std::string inflated;
  if (!req.content_encoding.empty() && req.content_encoding != "identity") {
    if (req.content_encoding != "gzip") {
      return answer(415, "unsupported", "Content-Encoding " + std::string(req.content_encoding.substr(0, 32)) +
                                            " is not supported (gzip or none)");
    }
    const size_t limit = store->options().limits.max_body_bytes;
    switch (gunzip(body, limit, inflated).error) {
      case GunzipError::kNone: break;
      case GunzipError::kTooLarge:
        return answer(413, "malformed",
                      "gzip body inflates beyond " + std::to_string(limit) + " bytes (push.max_body_bytes)");
      case GunzipError::kTruncated: return answer(400, "malformed", "gzip body is truncated");
      case GunzipError::kCorrupt: return answer(400, "malformed", "gzip body is corrupt");
      case GunzipError::kInternal: return answer(400, "malformed", "zlib could not start");
    }
    body = inflated;
  }
  push::PushAnswer a = otlp ? store->otlp_json(body, now_ms) : store->pushgateway(req.method, req.path, body, now_ms);
  res.status = a.status;
  res.content_type = a.content_type;
  res.body = std::move(a.body);
  return true;
}

}  // namespace gpulens
