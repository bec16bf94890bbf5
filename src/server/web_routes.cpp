// Static, embedded files: no copy per request (body_view).
#include "server/web_routes.h"

#include "server/web_assets.h"

namespace gpulens {

bool handle_web_routes(const ServerRequest& req, ServerResponse& res) {
  std::string_view name;
  if (req.path == "/" || req.path == "/index.html") {
    name = "index.html";
  } else if (req.path == "/assets/app.js") {
    name = "app.js";
  } else if (req.path == "/assets/app.css") {
    name = "app.css";
  } else {
    return false;
  }
  const WebAsset* a = find_web_asset(name);
  if (!a) return false;
  res.content_type = a->content_type;
  res.headers += "Cache-Control: no-cache\r\n";
  res.body_view = a->body;
  return true;
}

}  // namespace gpulens
