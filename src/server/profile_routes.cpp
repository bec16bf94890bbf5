// Profile routes: token, request parsing, the table.
#include "server/profile_routes.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <vector>

#include "server/push_routes.h"
#include "server/query.h"
#include "util/json.h"

namespace gpulens {
namespace {

constexpr std::string_view kPrefix = "/api/v1/profile";

void error(ServerResponse& res, int status, std::string_view message) {
  res.status = status;
  res.content_type = "application/json";
  res.body = "{\"error\":";
  append_json_string(res.body, message);
  res.body += "}\n";
}

void request_json(std::string& out, const push::ProfileRequest& r) {
  out += "{\"id\":";
  append_json_string(out, r.id);
  out += ",\"pid\":" + std::to_string(r.pid) + ",\"kind\":";
  append_json_string(out, r.kind);
  out += ",\"duration_s\":";
  append_json_number(out, r.duration_s);
  out += ",\"max_bytes\":" + std::to_string(r.max_bytes) + ",\"steps\":" + std::to_string(r.steps);
}

std::string pid_list(const std::vector<int64_t>& pids) {
  std::string out;
  for (size_t i = 0; i < pids.size() && i < 16; ++i) out += (i ? ", " : "") + std::to_string(pids[i]);
  if (pids.size() > 16) out += ", ... (" + std::to_string(pids.size()) + " in all)";
  return out;
}

// The one process on GPU `gpu` that runs a client polling this agent, or
// the error: no such GPU (400), no such process (404), several (409).
std::optional<push::ProfileError> pick_pid(const push::PushStore& store, push::ProfileTable& table, int64_t gpu,
                                           int64_t now_ms, int64_t& pid) {
  const int count = store.gpu_count();
  if (gpu < 0 || gpu >= count) {
    return push::ProfileError{400, "no GPU " + std::to_string(gpu) + " on this node" +
                                       (count ? " (GPUs 0-" + std::to_string(count - 1) + ")" : std::string())};
  }
  const std::vector<int64_t> on = store.pids_on_gpu(static_cast<int>(gpu));
  const std::vector<int64_t> clients = table.clients(now_ms);
  std::vector<int64_t> both;
  std::set_intersection(on.begin(), on.end(), clients.begin(), clients.end(), std::back_inserter(both));
  const std::string g = "GPU " + std::to_string(gpu);
  const std::string window = std::to_string(table.limits().client_ms / 1000) + " s";
  if (both.empty()) {
    if (on.empty()) {
      return push::ProfileError{404, "no process on " + g + " that this agent knows of (neither the driver's process "
                                     "list nor a push names one); give --pid"};
    }
    return push::ProfileError{404, "no process on " + g + " runs gpulens_client pointed at this agent (processes on " +
                                       g + ": " + pid_list(on) + "; none polled for captures in the last " + window +
                                       ")"};
  }
  if (both.size() > 1) {
    return push::ProfileError{409, "several processes on " + g + " run gpulens_client: pids " + pid_list(both) +
                                       "; choose one with --pid"};
  }
  pid = both.front();
  return std::nullopt;
}

// {"pid":N | "gpu":N, "kind":"stacks","duration_s":10,"max_bytes":N}: a pid,
// or a GPU whose one client process is meant (`gpu` is -1 when not given).
std::optional<std::string> parse_request(std::string_view body, push::ProfileRequest& r, int64_t& gpu) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return "the body is not JSON";
  simdjson::dom::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) return "the body must be a JSON object";
  bool has_pid = false, has_gpu = false;
  for (auto [key, value] : obj) {
    if (key == "pid") {
      if (value.get_int64().get(r.pid) != simdjson::SUCCESS) return "pid must be an integer";
      has_pid = true;
    } else if (key == "gpu") {
      if (value.get_int64().get(gpu) != simdjson::SUCCESS || gpu < 0) return "gpu must be a GPU index (0, 1, ...)";
      has_gpu = true;
    } else if (key == "kind") {
      std::string_view k;
      if (value.get_string().get(k) != simdjson::SUCCESS) return "kind must be a string";
      r.kind = std::string(k);
    } else if (key == "duration_s") {
      if (value.get_double().get(r.duration_s) != simdjson::SUCCESS) return "duration_s must be a number";
    } else if (key == "max_bytes") {
      if (value.get_uint64().get(r.max_bytes) != simdjson::SUCCESS) return "max_bytes must be a positive integer";
    } else if (key == "steps") {
      if (value.get_uint64().get(r.steps) != simdjson::SUCCESS) return "steps must be a non-negative integer";
    } else {
      return "unknown key \"" + std::string(key.substr(0, 32)) + "\" (pid, gpu, kind, duration_s, max_bytes, steps)";
    }
  }
  if (has_pid && has_gpu) return "give pid or gpu, not both";
  if (!has_pid && !has_gpu) return "pid is required (or gpu: a GPU index)";
  return std::nullopt;
}

}  // namespace

std::optional<size_t> profile_body_limit(push::ProfileTable* table, std::string_view method, std::string_view path) {
  if (!table || !path.starts_with(kPrefix)) return std::nullopt;
  if (method != "POST") return std::nullopt;
  if (path == kPrefix) return 4096;
  if (path.ends_with("/error")) return 4096;
  if (path.ends_with("/result")) {
    std::string_view id = path.substr(kPrefix.size() + 1);
    id.remove_suffix(std::string_view("/result").size());
    return table->upload_limit(id);
  }
  return std::nullopt;
}

bool handle_profile_route(push::PushStore* store, push::ProfileTable* table, const ServerRequest& req,
                          ServerResponse& res, int64_t now_ms) {
  // No allocation here: every request of the agent, /metrics included, passes by.
  if (!req.path.starts_with(kPrefix) || (req.path.size() > kPrefix.size() && req.path[kPrefix.size()] != '/')) {
    return false;
  }
  if (!store || !table) {
    error(res, 404, "profiling is off: it rides on the push receiver, start the agent with `gpulens serve --push`");
    return true;
  }
  if (std::string why; !push_token_ok(*store, req.authorization, why)) {
    error(res, 401, why);
    return true;
  }
  if (req.path == kPrefix) {
    if (req.method != "POST") {
      error(res, 405, "POST a request to /api/v1/profile");
      return true;
    }
    push::ProfileRequest r;
    int64_t gpu = -1;
    if (auto why = parse_request(req.body, r, gpu)) {
      error(res, 400, *why);
      return true;
    }
    if (gpu >= 0) {
      if (auto e = pick_pid(*store, *table, gpu, now_ms, r.pid)) {
        error(res, e->http, e->message);
        return true;
      }
    }
    const int64_t pid = r.pid;
    std::string id;
    if (auto e = table->request(std::move(r), now_ms, id)) {
      error(res, e->http, e->message);
      return true;
    }
    res.status = 201;
    res.content_type = "application/json";
    res.body = "{\"id\":";
    append_json_string(res.body, id);
    res.body += ",\"pid\":" + std::to_string(pid) + "}\n";
    return true;
  }
  std::string_view rest = req.path.substr(kPrefix.size() + 1);
  if (rest == "next") {
    if (req.method != "GET") {
      error(res, 405, "GET /api/v1/profile/next?pid=N");
      return true;
    }
    auto q = parse_query(req.query, {"pid"});
    int64_t pid = 0;
    std::string_view p = q ? q->get("pid") : std::string_view{};
    if (!q || std::from_chars(p.data(), p.data() + p.size(), pid).ec != std::errc{} || pid <= 0) {
      error(res, 400, q ? "pid must be a positive integer" : q.status().message());
      return true;
    }
    auto job = table->take(pid, now_ms);
    if (!job) {
      res.status = 204;
      return true;
    }
    res.content_type = "application/json";
    res.body.clear();
    request_json(res.body, *job);
    res.body += "}\n";
    return true;
  }
  const size_t slash = rest.find('/');
  const std::string_view id = rest.substr(0, slash);
  const std::string_view action = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  if (action == "result" && req.method == "POST") {
    const bool json = req.content_type.starts_with("application/json");
    // ?window_s=S&steps=N: what the client says its window was (optional).
    push::ProfileWindow window;
    if (auto q = parse_query(req.query, {"window_s", "steps"})) {
      std::string_view w = q->get("window_s"), n = q->get("steps");
      double seconds = 0;
      int64_t steps = 0;
      if (std::from_chars(w.data(), w.data() + w.size(), seconds).ec == std::errc{} && seconds >= 0 &&
          seconds < 1e6) {
        window.seconds = seconds;
      }
      if (std::from_chars(n.data(), n.data() + n.size(), steps).ec == std::errc{} && steps >= 0) window.steps = steps;
    }
    if (auto e = table->finish(id, true, std::string(req.body), json ? "application/json" : "application/gzip",
                               now_ms, window)) {
      error(res, e->http, e->message);
      return true;
    }
    res.status = 204;
    return true;
  }
  if (action == "error" && req.method == "POST") {
    if (auto e = table->finish(id, false, std::string(req.body), "", now_ms)) {
      error(res, e->http, e->message);
      return true;
    }
    res.status = 204;
    return true;
  }
  if (req.method != "GET" || !(action.empty() || action == "result")) {
    error(res, 405, "GET /api/v1/profile/ID or /api/v1/profile/ID/result");
    return true;
  }
  auto e = table->get(id, now_ms);
  if (!e) {
    error(res, 404, "no capture " + std::string(id.substr(0, 64)) + " (unknown or expired)");
    return true;
  }
  if (action == "result") {
    if (e->state != push::ProfileState::kDone) {
      error(res, 409, "capture " + e->request.id + " is " + std::string(state_name(e->state)));
      return true;
    }
    res.content_type = e->content_type == "application/json" ? "application/json" : "application/gzip";
    res.body = std::move(e->result);
    return true;
  }
  res.content_type = "application/json";
  res.body.clear();
  request_json(res.body, e->request);
  res.body += ",\"state\":";
  append_json_string(res.body, state_name(e->state));
  if (!e->error.empty()) {
    res.body += ",\"error\":";
    append_json_string(res.body, e->error);
  }
  if (e->state == push::ProfileState::kDone) {
    res.body += ",\"result_bytes\":" + std::to_string(e->result.size()) + ",\"result_type\":";
    append_json_string(res.body, e->content_type);
    if (e->window.seconds >= 0) {
      res.body += ",\"window_s\":";
      append_json_number(res.body, e->window.seconds);
    }
    if (e->window.steps >= 0) res.body += ",\"steps_done\":" + std::to_string(e->window.steps);
  }
  res.body += "}\n";
  return true;
}

}  // namespace gpulens
