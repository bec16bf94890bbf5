// The one outgoing HTTP/1.1 client: Prometheus-compatible query APIs,
// remote_write receivers, scraped endpoints.
//
// http:// and https:// (OpenSSL 3, TLS 1.2 at least, the server verified
// against tls.ca_file or the system's CAs, its name against server_name or
// the URL's host); a client certificate; basic auth or an Authorization
// header (credentials files re-read on every request, so rotation needs no
// restart); extra headers. The option names are Prometheus's own
// (tls_config, basic_auth, authorization, headers). Every step of a request
// is bounded by `timeout_ms`, so a dead or hung server costs at most the
// timeout, never a hang, and an HttpCancel cuts it shorter. Response bodies
// above `max_body_bytes` are an error. Redirects are not followed: a 3xx
// comes back as it is. Requests carry `User-Agent: gpulens` unless the
// caller passes its own.
//
// Connections are kept alive and reused: a client keeps at most 4 idle
// connections per target (16 in all) and closes one idle for longer than
// `idle_timeout_ms`. An idle connection the server has closed is noticed
// before use; one that dies under a request before any byte of the answer
// (the server's idle timeout racing the request) is replaced once by a fresh
// connection when the request is safe to send again: GET, HEAD, and POST
// when `resend_post` says so (remote_write, queries).
//
// Proxies, as Go's net/http (and so Prometheus) reads them from the
// environment: HTTP_PROXY for http:// URLs (the request goes to the proxy
// with the whole URL in its request line), HTTPS_PROXY for https:// (a
// CONNECT tunnel; TLS runs end to end with the target), each an
// http://[user:password@]host[:port] URL; NO_PROXY lists hosts that go
// direct (see bypasses_proxy). Lower-case names are read when the upper-case
// ones are unset. localhost and loopback addresses never use a proxy.
//
//   HttpClient client({.timeout_ms = 5000});
//   Result<HttpResponse> r = client.get("http://127.0.0.1:9090/api/v1/query?query=up");
//   if (!r) return r.status();      // "connect 127.0.0.1:9090: Connection refused"
//   if (r->status != 200) ...
//
// Thread-safety: an HttpClient may be used from any thread at once; its
// options are fixed at construction and its pool is locked (a connection
// carries one request at a time).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
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

// Outgoing proxies. Each proxy is "http://[user:password@]host[:port]"
// (port 80 when left out; "host:port" alone means http://); "" is none.
struct ProxyOptions {
  std::string http_proxy;   // for http:// URLs
  std::string https_proxy;  // for https:// URLs, through a CONNECT tunnel
  std::string no_proxy;     // hosts that go direct, see bypasses_proxy()
};

// HTTP_PROXY, HTTPS_PROXY and NO_PROXY (each name in lower case when the
// upper-case one is unset or empty).
ProxyOptions proxy_from_environment();

// True when a request to host:port goes direct, not through a proxy:
// host is localhost or a loopback address, or `no_proxy` (comma-separated)
// holds "*", the host's IP address, a CIDR range holding it
// ("10.0.0.0/8"), the host name or a parent domain of it ("example.com"
// matches it and its subdomains; ".example.com" and "*.example.com" only
// its subdomains). An entry with ":port" matches that port only. Names are
// not resolved: a CIDR range matches hosts written as addresses.
bool bypasses_proxy(std::string_view no_proxy, std::string_view host, std::string_view port);

struct HttpClientOptions {
  int64_t timeout_ms = 10000;
  size_t max_body_bytes = 512u << 20;
  const HttpCancel* cancel = nullptr;  // not owned; null: requests run to their timeout
  TlsClientOptions tls = {};
  HttpAuthOptions auth = {};
  bool keep_alive = true;              // false: a new connection per request (Connection: close)
  int64_t idle_timeout_ms = 90'000;    // an idle kept-alive connection is closed after this (Go's default)
  bool resend_post = false;            // a POST is safe to send twice (see above)
  std::optional<ProxyOptions> proxy;   // unset: proxy_from_environment() when the client is made
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

  // Ok when the options hold together, their files load and the proxies are
  // valid URLs.
  Status check() const;

  Result<HttpResponse> get(std::string_view url,
                           const std::vector<std::pair<std::string, std::string>>& headers = {}) const;
  Result<HttpResponse> post(std::string_view url, std::string_view body,
                            const std::vector<std::pair<std::string, std::string>>& headers = {}) const;

 private:
  Result<HttpResponse> request(std::string_view method, std::string_view url, std::string_view body,
                               const std::vector<std::pair<std::string, std::string>>& headers) const;
  struct LazyTls;
  struct Pool;
  HttpClientOptions options_;
  std::unique_ptr<LazyTls> tls_;  // built once, shared by every request (OpenSSL contexts are thread-safe)
  std::unique_ptr<Pool> pool_;    // idle kept-alive connections
};

// Percent-encodes a query-string component.
std::string url_encode(std::string_view s);

}  // namespace gpulens
