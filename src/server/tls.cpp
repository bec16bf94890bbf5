// OpenSSL server context from tls_server_config.
#include "server/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace gpulens {
namespace {

// The last OpenSSL error as text, the queue cleared.
std::string ssl_error() {
  unsigned long e = ERR_get_error();
  unsigned long last = e;
  while (e != 0) {
    last = e;
    e = ERR_get_error();
  }
  if (last == 0) return std::strerror(errno);
  const char* reason = ERR_reason_error_string(last);
  return reason ? reason : "unknown OpenSSL error";
}

// Request/RequireAny: a certificate is asked for but not verified.
int accept_any(int, X509_STORE_CTX*) { return 1; }

int select_http11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in, unsigned int inlen,
                  void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11, in, inlen) == OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;  // the client offers no http/1.1: carry on without ALPN
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};

Status use_inline_chain(SSL_CTX* ctx, const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509* leaf = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  if (leaf == nullptr) return invalid_argument("tls_server_config.cert: no PEM certificate: " + ssl_error());
  const int ok = SSL_CTX_use_certificate(ctx, leaf);
  X509_free(leaf);
  if (ok != 1) return invalid_argument("tls_server_config.cert: " + ssl_error());
  while (X509* extra = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
      X509_free(extra);
      return invalid_argument("tls_server_config.cert: " + ssl_error());
    }
  }
  ERR_clear_error();  // the end of the PEM stream
  return Status::ok();
}

Status use_inline_key(SSL_CTX* ctx, const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (key == nullptr) return invalid_argument("tls_server_config.key: no PEM private key: " + ssl_error());
  const int ok = SSL_CTX_use_PrivateKey(ctx, key);
  EVP_PKEY_free(key);
  if (ok != 1) return invalid_argument("tls_server_config.key: " + ssl_error());
  return Status::ok();
}

Status use_inline_ca(SSL_CTX* ctx, const std::string& pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509_STORE* store = SSL_CTX_get_cert_store(ctx);
  STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
  int count = 0;
  while (X509* ca = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, ca);
    sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(ca)));
    X509_free(ca);
    ++count;
  }
  ERR_clear_error();
  if (count == 0) {
    sk_X509_NAME_pop_free(names, X509_NAME_free);
    return invalid_argument("tls_server_config.client_ca: no PEM certificate");
  }
  SSL_CTX_set_client_CA_list(ctx, names);
  return Status::ok();
}

}  // namespace

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Status TlsContext::check_peer(SSL* ssl) const {
  if (allowed_sans_.empty()) return Status::ok();
  X509* peer = SSL_get1_peer_certificate(ssl);
  if (peer == nullptr) return invalid_argument("no client certificate");
  auto* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(peer, NID_subject_alt_name, nullptr, nullptr));
  bool found = false;
  for (int i = 0; sans != nullptr && i < sk_GENERAL_NAME_num(sans) && !found; ++i) {
    const GENERAL_NAME* g = sk_GENERAL_NAME_value(sans, i);
    std::string value;
    if (g->type == GEN_DNS || g->type == GEN_EMAIL || g->type == GEN_URI) {
      const ASN1_IA5STRING* s = g->d.ia5;
      value.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)), ASN1_STRING_length(s));
    } else if (g->type == GEN_IPADD) {
      // The text form Go's net.IP prints: dotted quad, or compressed IPv6.
      const ASN1_OCTET_STRING* ip = g->d.ip;
      char text[INET6_ADDRSTRLEN] = {};
      const int len = ASN1_STRING_length(ip);
      if ((len == 4 || len == 16) &&
          inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(ip), text, sizeof text) != nullptr) {
        value = text;
      }
    }
    for (const auto& want : allowed_sans_) found = found || (!value.empty() && value == want);
  }
  GENERAL_NAMES_free(sans);
  X509_free(peer);
  if (!found) return invalid_argument("client certificate has none of client_allowed_sans");
  return Status::ok();
}

Result<std::shared_ptr<const TlsContext>> make_tls_context(const TlsServerConfig& t) {
  std::shared_ptr<TlsContext> out(new TlsContext());
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return internal_error("TLS: " + ssl_error());
  out->ctx_ = ctx;
  out->allowed_sans_ = t.client_allowed_sans;
  SSL_CTX_set_min_proto_version(ctx, t.min_version);
  SSL_CTX_set_max_proto_version(ctx, t.max_version);
  uint64_t options = SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_IGNORE_UNEXPECTED_EOF;
  if (t.prefer_server_cipher_suites) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(ctx, options);
  // The response buffer grows between retries of a partial write. The
  // record buffers stay with the connection (~34 KiB each, within the
  // connection limit) instead of being freed and allocated again at every
  // scrape of a kept-alive connection; read-ahead takes a record's header
  // and body in one read(2) instead of two.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  static const unsigned char kSessionContext[] = "gpulens";
  SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
  SSL_CTX_set_alpn_select_cb(ctx, select_http11, nullptr);

  if (!t.openssl_ciphers.empty()) {
    std::string list;
    for (const auto& c : t.openssl_ciphers) list += (list.empty() ? "" : ":") + c;
    if (SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1) {
      return invalid_argument("tls_server_config.cipher_suites: none usable: " + ssl_error());
    }
  }
  if (!t.curves.empty()) {
    std::string list;
    for (const auto& c : t.curves) list += (list.empty() ? "" : ":") + c;
    if (SSL_CTX_set1_groups_list(ctx, list.c_str()) != 1) {
      return invalid_argument("tls_server_config.curve_preferences: " + ssl_error());
    }
  }
  if (!t.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, t.cert_file.c_str()) != 1) {
      return invalid_argument("tls_server_config.cert_file " + t.cert_file + ": " + ssl_error());
    }
  } else if (Status s = use_inline_chain(ctx, t.cert); !s) {
    return s;
  }
  if (!t.key_file.empty()) {
    if (SSL_CTX_use_PrivateKey_file(ctx, t.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return invalid_argument("tls_server_config.key_file " + t.key_file + ": " + ssl_error());
    }
  } else if (Status s = use_inline_key(ctx, t.key); !s) {
    return s;
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return invalid_argument("tls_server_config: the key does not match the certificate: " + ssl_error());
  }
  if (!t.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, t.client_ca_file.c_str(), nullptr) != 1) {
      return invalid_argument("tls_server_config.client_ca_file " + t.client_ca_file + ": " + ssl_error());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(t.client_ca_file.c_str());
    if (names != nullptr) SSL_CTX_set_client_CA_list(ctx, names);
  } else if (!t.client_ca.empty()) {
    if (Status s = use_inline_ca(ctx, t.client_ca); !s) return s;
  }
  switch (t.client_auth) {
    case ClientAuth::kNone: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::kRequest: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any); break;
    case ClientAuth::kRequireAny:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
      break;
    case ClientAuth::kVerifyIfGiven: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr); break;
    case ClientAuth::kRequireAndVerify:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  ERR_clear_error();
  return std::shared_ptr<const TlsContext>(std::move(out));
}

Status check_certificate_dates(const TlsServerConfig& t, int64_t now_s) {
  const std::string what = t.cert_file.empty() ? std::string("tls_server_config.cert")
                                               : "tls_server_config.cert_file " + t.cert_file;
  std::unique_ptr<BIO, BioFree> bio(t.cert_file.empty() ? BIO_new_mem_buf(t.cert.data(), static_cast<int>(t.cert.size()))
                                                        : BIO_new_file(t.cert_file.c_str(), "r"));
  if (!bio) return not_found(what + ": cannot read: " + ssl_error());
  X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
  if (cert == nullptr) return invalid_argument(what + ": no PEM certificate: " + ssl_error());
  std::unique_ptr<X509, void (*)(X509*)> owned(cert, X509_free);
  auto date = [](const ASN1_TIME* a) {
    tm when{};
    if (ASN1_TIME_to_tm(a, &when) != 1) return std::string("an unreadable date");
    char b[32];
    std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &when);
    return std::string(b);
  };
  time_t now = static_cast<time_t>(now_s);
  const int after = X509_cmp_time(X509_get0_notAfter(cert), &now);   // -1: before now, 0: unreadable
  const int before = X509_cmp_time(X509_get0_notBefore(cert), &now);
  if (after == 0 || before == 0) return invalid_argument(what + ": the certificate's validity dates are unreadable");
  if (after < 0) {
    return invalid_argument(what + ": the certificate expired on " + date(X509_get0_notAfter(cert)));
  }
  if (before > 0) {
    return invalid_argument(what + ": the certificate is not valid before " + date(X509_get0_notBefore(cert)));
  }
  return Status::ok();
}

}  // namespace gpulens
