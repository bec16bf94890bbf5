// The one outgoing HTTP/1.1 client: Prometheus-compatible query APIs,
// remote_write receivers, scraped endpoints.
//
// http:// and https:// (OpenSSL 3, TLS 1.2 at least, the server verified
// against tls.ca_file or the system's CAs, its name against server_name or
// the URL's host); a client certificate; basic auth or an Authorization
// header (credentials files re-read on every request, so rotation needs no
// restart); extra headers. The option names are Prometheus's own
// (tls_config, basic_auth, authorization, headers). One request per
// connection (Connection: close); every step bounded by `timeout_ms`, so a
// dead or hung server costs at most the timeout, never a hang, and an
// HttpCancel cuts it shorter. Response bodies above `max_body_bytes` are an
// error. Redirects are not followed: a 3xx comes back as it is.
// Requests carry `User-Agent: gpulens` unless the caller passes its own.
//
//   HttpClient client({.timeout_ms = 5000});
//   Result<HttpResponse> r = client.get("http://127.0.0.1:9090/api/v1/query?query=up");
//   if (!r) return r.status();      // "connect 127.0.0.1:9090: Connection refused"
//   if (r->status != 200) ...
//
// Thread-safety: an HttpClient is immutable after construction; use from any thread.
#pragma once

#include <cstdint>
#include <memory>
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

// https:// settings (Prometheus's tls_config).
struct TlsClientOptions {
  std::string ca_file;                // PEM CA bundle the server is verified against; "": the system's
  std::string cert_file, key_file;    // PEM client certificate and key; both or neither
  std::string server_name;            // SNI and the name verified; "": the URL's host
  bool insecure_skip_verify = false;  // no verification at all (tests, never production)
  bool operator==(const TlsClientOptions&) const = default;
};

// Credentials and headers sent with every request (Prometheus's basic_auth,
// authorization and headers). At most one of basic auth and authorization.
struct HttpAuthOptions {
  std::string username, password, password_file;  // basic auth when username is set
  std::string authorization_type = "Bearer";      // the scheme of Authorization:
  std::string credentials, credentials_file;      // Authorization: <type> <credentials>
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. {"X-Scope-OrgID", "tenant-a"}
  bool operator==(const HttpAuthOptions&) const = default;
};

struct HttpClientOptions {
  int64_t timeout_ms = 10000;
  size_t max_body_bytes = 512u << 20;
  const HttpCancel* cancel = nullptr;  // not owned; null: requests run to their timeout
  TlsClientOptions tls = {};
  HttpAuthOptions auth = {};
};

// The combination checks (both of cert/key, one kind of credentials, no
// reserved header) and that every named file is readable; `what` prefixes
// the message, e.g. "remote_write".
Status check_http_client_options(const HttpClientOptions& o, const std::string& what);

// Seconds (or an HTTP-date) of a Retry-After header as milliseconds from
// now; -1 when absent or unreadable.
int64_t retry_after_ms(std::string_view value);


class HttpClient {
 public:
  // The CA, certificate and key are loaded at the first https request; a
  // problem is returned by it and every later one (check() tells at once).
  explicit HttpClient(HttpClientOptions options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Ok when the options hold together and their files load.
  Status check() const;

  Result<HttpResponse> get(std::string_view url,
                           const std::vector<std::pair<std::string, std::string>>& headers = {}) const;
  Result<HttpResponse> post(std::string_view url, std::string_view body,
                            const std::vector<std::pair<std::string, std::string>>& headers = {}) const;

 private:
  Result<HttpResponse> request(std::string_view method, std::string_view url, std::string_view body,
                               const std::vector<std::pair<std::string, std::string>>& headers) const;
  struct LazyTls;
  HttpClientOptions options_;
  std::unique_ptr<LazyTls> tls_;  // built once, shared by every request (OpenSSL contexts are thread-safe)
};

// Percent-encodes a query-string component.
std::string url_encode(std::string_view s);

}  // namespace gpulens
