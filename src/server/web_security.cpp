// Loading, swapping and change detection of the web configuration.
#include "server/web_security.h"

#include <sys/stat.h>

#include "util/log.h"

namespace gpulens {

Result<std::shared_ptr<const WebSecurity::State>> WebSecurity::load(const std::string& path) {
  auto config = load_web_config(path);
  if (!config) return config.status();
  auto state = std::make_shared<State>();
  if (config->tls_enabled) {
    auto tls = make_tls_context(config->tls);
    if (!tls) return Status(tls.status().code(), path + ": " + tls.status().message());
    state->tls = *tls;
  }
  state->headers = security_headers(&*config);
  state->config = std::move(*config);
  return std::shared_ptr<const State>(std::move(state));
}

std::vector<WebSecurity::FileStamp> WebSecurity::stamps(const std::string& path, const WebConfig* config) {
  std::vector<std::string> files = {path};
  if (config) {
    for (const std::string* f : {&config->tls.cert_file, &config->tls.key_file, &config->tls.client_ca_file}) {
      if (!f->empty()) files.push_back(*f);
    }
  }
  std::vector<FileStamp> out;
  for (const auto& f : files) {
    FileStamp s{.path = f};
    struct stat st {};
    if (stat(f.c_str(), &st) == 0) {
      s.inode = st.st_ino;
      s.size = st.st_size;
      s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    }
    out.push_back(std::move(s));
  }
  return out;
}

Result<std::shared_ptr<WebSecurity>> WebSecurity::open(const std::string& path) {
  auto state = load(path);
  if (!state) return state.status();
  std::shared_ptr<WebSecurity> sec(new WebSecurity());
  sec->path_ = path;
  sec->stamps_ = stamps(path, &(*state)->config);
  sec->state_ = std::move(*state);
  return sec;
}

std::shared_ptr<const WebSecurity::State> WebSecurity::current() const {
  std::lock_guard lock(mu_);
  return state_;
}

Status WebSecurity::reload() {
  auto state = load(path_);
  std::lock_guard lock(mu_);
  if (!state) {
    failed_stamps_ = stamps(path_, &state_->config);
    return state.status();
  }
  stamps_ = stamps(path_, &(*state)->config);
  failed_stamps_.clear();
  state_ = std::move(*state);
  return Status::ok();
}

void WebSecurity::refresh_if_changed(int64_t now_ms) {
  std::vector<FileStamp> running;
  {
    std::lock_guard lock(mu_);
    if (now_ms - last_check_ms_ < 1000) return;
    last_check_ms_ = now_ms;
    running = stamps_;
  }
  std::vector<FileStamp> now;
  now.reserve(running.size());
  for (const auto& s : running) now.push_back(stamps(s.path, nullptr).front());
  if (now == running) return;
  {
    std::lock_guard lock(mu_);
    if (now == failed_stamps_) return;  // this change failed already and was logged
  }
  if (Status s = reload(); !s) {
    {
      std::lock_guard lock(mu_);
      failed_stamps_ = now;
    }
    log::warn("web_config", {{"file", path_}, {"result", "kept the running web config"}, {"reason", s.message()}});
  } else {
    log::info("web_config", {{"file", path_}, {"result", "reloaded: a file changed"}});
  }
}

Status check_web_config_file(const std::string& path) {
  auto sec = WebSecurity::open(path);
  return sec ? Status::ok() : sec.status();
}

Status check_web_config_dates(const std::string& path, int64_t now_s) {
  auto config = load_web_config(path);
  if (!config) return config.status();
  if (!config->tls_enabled) return Status::ok();
  if (Status s = check_certificate_dates(config->tls, now_s); !s) return Status(s.code(), path + ": " + s.message());
  return Status::ok();
}

}  // namespace gpulens
