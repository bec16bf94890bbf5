// The running web configuration of the listener: the parsed web-config.yml,
// its TLS context and the response headers, swapped whole on reload.
//
//   auto sec = WebSecurity::open("/etc/gpulens/web-config.yml");  // errors name file:line
//   HttpServerOptions o{.security = *sec};
//   ...
//   Status s = (*sec)->reload();  // SIGHUP: a bad file keeps the running one, s says why
//
// Like exporter-toolkit, which re-reads the file for every request and
// handshake, the server calls refresh_if_changed() as connections arrive:
// at most once a second it compares the modification time, size and inode
// of the web config and of every certificate, key and CA file it names, and
// reloads when one changed, so a rotated certificate is served without a
// restart (the connections already open keep the old one). A reload that
// fails is logged once per change and the running state stays.
//
// Thread-safety: current(), reload() and refresh_if_changed() from any
// thread; a State is immutable.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/tls.h"
#include "server/web_config.h"
#include "util/status.h"

namespace gpulens {

class WebSecurity {
 public:
  struct State {
    WebConfig config;
    std::shared_ptr<const TlsContext> tls;  // null: plain HTTP
    std::string headers;                    // security_headers(&config)
  };

  static Result<std::shared_ptr<WebSecurity>> open(const std::string& path);
  std::shared_ptr<const State> current() const;
  const std::string& path() const { return path_; }
  Status reload();
  void refresh_if_changed(int64_t now_ms);

 private:
  struct FileStamp {
    std::string path;
    ino_t inode = 0;
    off_t size = -1;
    int64_t mtime_ns = -1;
    bool operator==(const FileStamp&) const = default;
  };
  static Result<std::shared_ptr<const State>> load(const std::string& path);
  static std::vector<FileStamp> stamps(const std::string& path, const WebConfig* config);

  std::string path_;
  mutable std::mutex mu_;
  std::shared_ptr<const State> state_;
  std::vector<FileStamp> stamps_;       // of the running state
  std::vector<FileStamp> failed_stamps_;  // of the last failed reload (logged once)
  int64_t last_check_ms_ = 0;
};

// Loads and fully checks a web config file (certificates and keys too), as
// `serve` would: for check-config. Errors name the file (and line).
Status check_web_config_file(const std::string& path);
// check-config's extra check: the server certificate is valid at `now_s`
// (check_certificate_dates); ok without TLS.
Status check_web_config_dates(const std::string& path, int64_t now_s);

}  // namespace gpulens
