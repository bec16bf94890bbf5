// The agent's web page: "/" and its two assets under /assets/, served from
// the copies embedded into the binary (web_assets.h). The page reads only
// the agent's JSON API; nothing is fetched from anywhere else.
//
//   GET /                 the page (overview; #/gpu/N is the GPU page)
//   GET /assets/app.js    uPlot and the page's script
//   GET /assets/app.css   styles (dark and light)
#pragma once

#include "server/http_server.h"

namespace gpulens {

// Answers the routes above; false when `req.path` is not one of them.
bool handle_web_routes(const ServerRequest& req, ServerResponse& res);

}  // namespace gpulens
