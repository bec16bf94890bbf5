// The on-demand capture routes (docs/profiling.md), on when the push
// receiver is (serve --push), with its token:
//   POST /api/v1/profile               {"pid":N,"kind":"stacks|torch","duration_s":10,"max_bytes":N} -> 201 {"id","pid"}
//                                      ("gpu":N instead of pid: the one process on that GPU whose client polls)
//   GET  /api/v1/profile/ID            {"id","pid","kind","state",...}
//   GET  /api/v1/profile/ID/result     the upload as it came (JSON stacks or a gzip Kineto trace)
//   GET  /api/v1/profile/next?pid=N    the client's poll: 200 with a request, or 204
//   POST /api/v1/profile/ID/result     the client's upload (body limit: the request's max_bytes)
//   POST /api/v1/profile/ID/error      the client's reason for not capturing
//
// Thread-safety: called on the HTTP server thread; the table locks itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "push/profile_table.h"
#include "push/push_store.h"
#include "server/http_server.h"

namespace gpulens {

// True when `req` is a profile route (answered into `res`).
bool handle_profile_route(push::PushStore* store, push::ProfileTable* table, const ServerRequest& req,
                          ServerResponse& res, int64_t now_ms);

// The body limit of a profile route; nullopt for other routes.
std::optional<size_t> profile_body_limit(push::ProfileTable* table, std::string_view method, std::string_view path);

}  // namespace gpulens
