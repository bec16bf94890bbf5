// The listener's TLS: an OpenSSL 3 server context built from the web
// config's tls_server_config, with exporter-toolkit's semantics.
//
//   auto ctx = make_tls_context(web.tls);   // loads cert, key, client CA now
//   if (!ctx) ...;  // "tls_server_config: cert_file server.crt: No such file or directory"
//   SSL* ssl = SSL_new((*ctx)->get());
//   ... after the handshake:
//   if (Status s = (*ctx)->check_peer(ssl); !s) close;   // client_allowed_sans
//
// client_auth_type maps to OpenSSL as Go's crypto/tls behaves:
// NoClientCert asks for none; RequestClientCert and RequireAnyClientCert
// ask (the latter insists) but accept any certificate unverified;
// VerifyClientCertIfGiven and RequireAndVerifyClientCert verify against
// the client CA (the latter insists). Versions TLS10..TLS13 bound the
// protocol (OpenSSL 3's default security level refuses TLS 1.0 and 1.1
// whatever is set). cipher_suites (IANA names) restrict TLS <= 1.2; TLS 1.3
// keeps OpenSSL's suites, as Go keeps its own. curve_preferences set the
// key-exchange groups. ALPN selects http/1.1 (no HTTP/2).
//
// Thread-safety: a TlsContext is immutable once made; SSL_new on it from
// any thread. Certificates are read when the context is made: WebSecurity
// makes a new one when the files change.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/web_config.h"
#include "util/status.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace gpulens {

class TlsContext {
 public:
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  // After the handshake: the peer certificate carries one of
  // client_allowed_sans (when set). Ok when nothing is required.
  Status check_peer(SSL* ssl) const;

 private:
  friend Result<std::shared_ptr<const TlsContext>> make_tls_context(const TlsServerConfig& config);
  TlsContext() = default;
  SSL_CTX* ctx_ = nullptr;
  std::vector<std::string> allowed_sans_;
};

// Builds the context: loads the certificate chain, the key (and checks they
// match), the client CA; applies versions, suites and curves. Errors name the
// key and the file.
Result<std::shared_ptr<const TlsContext>> make_tls_context(const TlsServerConfig& config);

// The server certificate (cert_file or cert; its first certificate) is
// valid at `now_s` (Unix seconds): not expired, not yet to come. The error
// names the file and the date, "tls_server_config.cert_file server.crt:
// the certificate expired on 2024-01-01T00:00:00Z". check-config runs it;
// the server itself keeps serving a certificate that expires while it runs.
Status check_certificate_dates(const TlsServerConfig& config, int64_t now_s);

}  // namespace gpulens
