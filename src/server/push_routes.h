// The push receiver's routes on the agent's listener:
//   PUT/POST/DELETE /metrics/job/<job>{/<label>/<value>}   Pushgateway API
//   POST /v1/metrics                                        OTLP/HTTP, JSON
// Checks the bearer token (push.token_file), the content type (text format
// 0.0.4 for the Pushgateway routes, application/json for OTLP; protobuf is
// refused with 415), inflates gzip bodies within the body limit, and hands
// the body to the PushStore. Without a store (no --push) the routes answer
// 404 saying how to enable them.
//
// Thread-safety: called on the HTTP server thread; the store locks itself.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "push/push_store.h"
#include "server/http_server.h"

namespace gpulens {

// True when `req` is a push route (answered into `res`), false otherwise.
bool handle_push_route(push::PushStore* store, const ServerRequest& req, ServerResponse& res, int64_t now_ms);

// The body limit of a push route when the receiver is on; nullopt for any
// other route (the server's defaults apply).
std::optional<size_t> push_body_limit(const push::PushStore* store, std::string_view method, std::string_view path);

// Checks the bearer token of a request when push.token_file set one;
// false with the reason in `why` otherwise (the profile routes share it).
bool push_token_ok(const push::PushStore& store, std::string_view authorization, std::string& why);

}  // namespace gpulens
