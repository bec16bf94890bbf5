// The web configuration file of exporter-toolkit (web-config.yml), as
// node_exporter, Prometheus and dcgm-exporter read it: TLS for the listener,
// response headers and basic-auth users. `serve --web-config-file FILE`
// (YAML `web_config_file`) turns it on; `check-config` validates it.
//
//   tls_server_config:
//     cert_file: server.crt            # relative paths: against this file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: ca.crt
//     min_version: TLS12               # TLS10 TLS11 TLS12 TLS13
//     cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]   # IANA names, TLS <= 1.2
//     curve_preferences: [X25519, CurveP256]
//   http_server_config:
//     headers: {Strict-Transport-Security: max-age=31536000}
//   basic_auth_users:
//     prometheus: $2y$10$...           # bcrypt: htpasswd -nBC 10 "" | tr -d ':\n'
//
//   Result<WebConfig> c = load_web_config("/etc/gpulens/web-config.yml");
//   // errors: "/etc/gpulens/web-config.yml:3:5: tls_server_config: unknown key \"certfile\" (known: ...)"
//
// Strict like exporter-toolkit's UnmarshalStrict: unknown keys, wrong types,
// unknown enum values, a header outside the toolkit's list, and a user whose
// hash is not bcrypt are errors naming file:line:column. Loading the
// certificates is tls.h's job (make_tls_context), so this parser stays pure
// (no files read but the one given) and is fuzzed (fuzz/web_config_fuzz.cpp).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace gpulens {

// exporter-toolkit's client_auth_type values (Go crypto/tls ClientAuthType).
enum class ClientAuth {
  kNone,              // NoClientCert (default)
  kRequest,           // RequestClientCert: asked for, not verified
  kRequireAny,        // RequireAnyClientCert (alias RequireClientCert): required, not verified
  kVerifyIfGiven,     // VerifyClientCertIfGiven
  kRequireAndVerify,  // RequireAndVerifyClientCert: the only secure choice
};

struct TlsServerConfig {
  // PEM files (paths resolved against the web config's folder) or inline PEM;
  // the file wins when both are given, as in exporter-toolkit.
  std::string cert_file, key_file, client_ca_file;
  std::string cert, key, client_ca;
  ClientAuth client_auth = ClientAuth::kNone;
  std::vector<std::string> client_allowed_sans;  // exact DNS, e-mail, IP or URI SAN; empty: any
  int min_version = 0x0303;  // TLS1_2_VERSION
  int max_version = 0x0304;  // TLS1_3_VERSION
  std::vector<std::string> cipher_suites;      // IANA names as given; TLS <= 1.2
  std::vector<std::string> openssl_ciphers;    // the same, OpenSSL's names (TLS 1.3 names dropped)
  bool prefer_server_cipher_suites = true;
  std::vector<std::string> curves;             // OpenSSL group names: P-256, P-384, P-521, X25519
};

struct WebConfig {
  std::string path;  // the file it came from
  bool tls_enabled = false;  // any of cert, key, client CA or client_auth_type set
  TlsServerConfig tls;
  bool http2 = true;         // accepted for compatibility; the server speaks HTTP/1.1
  // Response headers, in file order, names as the toolkit spells them.
  std::vector<std::pair<std::string, std::string>> headers;
  std::map<std::string, std::string, std::less<>> users;  // name -> bcrypt hash
  int64_t rate_limit_interval_ms = 0;  // 0: no rate limit
  int64_t rate_limit_burst = 0;
};

// Parses `text`; `origin` names it in errors; relative file names resolve
// against `base_dir` ("" keeps them as written).
Result<WebConfig> parse_web_config(const std::string& text, const std::string& origin, const std::string& base_dir);
// Reads and parses `path` (errors: not_found when it cannot be read).
Result<WebConfig> load_web_config(const std::string& path);

// Security headers on every response; web config headers of the same name
// replace them. The policy fits the embedded page: scripts, styles and
// fetches from the agent itself only, never framed.
inline constexpr const char* kDefaultContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
// The header lines ("Name: value\r\n") for `config` (null: defaults only).
std::string security_headers(const WebConfig* config);

// The headers http_server_config.headers may set (exporter-toolkit's list).
bool is_allowed_web_header(std::string_view name);

}  // namespace gpulens
