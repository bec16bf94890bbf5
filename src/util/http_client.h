// A small blocking HTTP/1.1 client for talking to Prometheus-compatible
// servers (query API, remote_write receivers) on the local network.
//
// Plain http:// only; one request per connection (Connection: close); every
// step bounded by `timeout_ms`, so a dead or hung server costs at most the
// timeout, never a hang. Response bodies above `max_body_bytes` are an error.
// Requests carry `User-Agent: gpulens` unless the caller passes its own.
//
//   HttpClient client({.timeout_ms = 5000});
//   Result<HttpResponse> r = client.get("http://127.0.0.1:9090/api/v1/query?query=up");
//   if (!r) return r.status();      // "connect 127.0.0.1:9090: Connection refused"
//   if (r->status != 200) ...
//
// Thread-safety: an HttpClient holds only options; use from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace gpulens {

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;                                           // de-chunked
  std::string_view header(std::string_view name) const;       // "" when absent
};

// Cuts requests short from another thread: every socket wait of a client
// whose options point here also wakes on cancel(), and the request fails
// with "cancelled" at once (a shutdown must not wait out a hung server).
// Once cancelled it stays so. Thread-safety: cancel() and cancelled() from
// any thread.
class HttpCancel {
 public:
  HttpCancel();
  ~HttpCancel();
  HttpCancel(const HttpCancel&) = delete;
  HttpCancel& operator=(const HttpCancel&) = delete;
  void cancel();
  bool cancelled() const;
  int fd() const { return fd_; }  // readable once cancelled

 private:
  int fd_ = -1;
};

struct HttpClientOptions {
  int64_t timeout_ms = 10000;
  size_t max_body_bytes = 512u << 20;
  const HttpCancel* cancel = nullptr;  // not owned; null: requests run to their timeout
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options = {}) : options_(options) {}

  Result<HttpResponse> get(std::string_view url,
                           const std::vector<std::pair<std::string, std::string>>& headers = {}) const;
  Result<HttpResponse> post(std::string_view url, std::string_view body,
                            const std::vector<std::pair<std::string, std::string>>& headers = {}) const;

 private:
  Result<HttpResponse> request(std::string_view method, std::string_view url, std::string_view body,
                               const std::vector<std::pair<std::string, std::string>>& headers) const;
  HttpClientOptions options_;
};

// Percent-encodes a query-string component.
std::string url_encode(std::string_view s);

}  // namespace gpulens
