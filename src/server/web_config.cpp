// Strict reading of web-config.yml, key by key as exporter-toolkit defines it.
#include "server/web_config.h"

#include <openssl/ssl.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "server/bcrypt.h"
#include "util/ascii.h"
#include "util/yaml_reader.h"

namespace gpulens {
namespace {

constexpr std::string_view kAllowedHeaders[] = {"Content-Security-Policy", "X-Frame-Options", "X-Content-Type-Options",
                                                "X-XSS-Protection", "Strict-Transport-Security"};

std::string resolve(const std::string& base_dir, const std::string& file) {
  if (file.empty() || file.front() == '/' || base_dir.empty()) return file;
  return base_dir + "/" + file;
}

int tls_version(const yaml::Reader& r, const YAML::Node& n, const std::string& what) {
  const std::string v = r.choice(n, what, {"TLS10", "TLS11", "TLS12", "TLS13"});
  if (v == "TLS10") return 0x0301;
  if (v == "TLS11") return 0x0302;
  if (v == "TLS12") return 0x0303;
  return 0x0304;
}

// A null value (a key with nothing after it) is an empty section, as in Go.
bool empty(const YAML::Node& n) { return !n || n.IsNull(); }

void read_tls(const yaml::Reader& r, const YAML::Node& n, const std::string& base_dir, TlsServerConfig& t) {
  const std::string p = "tls_server_config";
  r.map(n, p,
        {{"cert_file", [&](const YAML::Node& v) { t.cert_file = resolve(base_dir, r.text(v, p + ".cert_file")); }},
         {"key_file", [&](const YAML::Node& v) { t.key_file = resolve(base_dir, r.text(v, p + ".key_file")); }},
         {"client_ca_file",
          [&](const YAML::Node& v) { t.client_ca_file = resolve(base_dir, r.text(v, p + ".client_ca_file")); }},
         {"cert", [&](const YAML::Node& v) { t.cert = r.text(v, p + ".cert"); }},
         {"key", [&](const YAML::Node& v) { t.key = r.text(v, p + ".key"); }},
         {"client_ca", [&](const YAML::Node& v) { t.client_ca = r.text(v, p + ".client_ca"); }},
         {"client_auth_type",
          [&](const YAML::Node& v) {
            const std::string a = r.choice(v, p + ".client_auth_type",
                                           {"", "NoClientCert", "RequestClientCert", "RequireAnyClientCert",
                                            "RequireClientCert", "VerifyClientCertIfGiven",
                                            "RequireAndVerifyClientCert"});
            t.client_auth = a == "RequestClientCert"                                 ? ClientAuth::kRequest
                            : a == "RequireAnyClientCert" || a == "RequireClientCert" ? ClientAuth::kRequireAny
                            : a == "VerifyClientCertIfGiven"                         ? ClientAuth::kVerifyIfGiven
                            : a == "RequireAndVerifyClientCert"                      ? ClientAuth::kRequireAndVerify
                                                                                     : ClientAuth::kNone;
          }},
         {"client_allowed_sans",
          [&](const YAML::Node& v) { t.client_allowed_sans = r.strings(v, p + ".client_allowed_sans"); }},
         {"min_version", [&](const YAML::Node& v) { t.min_version = tls_version(r, v, p + ".min_version"); }},
         {"max_version", [&](const YAML::Node& v) { t.max_version = tls_version(r, v, p + ".max_version"); }},
         {"cipher_suites",
          [&](const YAML::Node& v) {
            if (!v.IsSequence()) r.fail(v, p + ".cipher_suites: expected a list");
            for (const auto& item : v) {
              const std::string name = r.text(item, p + ".cipher_suites[]");
              // TLS 1.3 suites are not configurable (as in Go): accepted, not applied.
              if (name == "TLS_AES_128_GCM_SHA256" || name == "TLS_AES_256_GCM_SHA384" ||
                  name == "TLS_CHACHA20_POLY1305_SHA256") {
                t.cipher_suites.push_back(name);
                continue;
              }
              const char* ossl = OPENSSL_cipher_name(name.c_str());
              if (ossl == nullptr || std::string_view(ossl) == "(NONE)") {
                r.fail(item, p + ".cipher_suites: unknown cipher suite \"" + name +
                                 "\" (IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256; "
                                 "`openssl ciphers -stdname` lists them)");
              }
              t.cipher_suites.push_back(name);
              t.openssl_ciphers.emplace_back(ossl);
            }
          }},
         {"prefer_server_cipher_suites",
          [&](const YAML::Node& v) { t.prefer_server_cipher_suites = r.boolean(v, p + ".prefer_server_cipher_suites"); }},
         {"curve_preferences", [&](const YAML::Node& v) {
            if (!v.IsSequence()) r.fail(v, p + ".curve_preferences: expected a list");
            for (const auto& item : v) {
              const std::string c =
                  r.choice(item, p + ".curve_preferences[]", {"CurveP256", "CurveP384", "CurveP521", "X25519"});
              t.curves.push_back(c == "CurveP256" ? "P-256" : c == "CurveP384" ? "P-384" : c == "CurveP521" ? "P-521" : "X25519");
            }
          }}});
}

void read_headers(const yaml::Reader& r, const YAML::Node& n, WebConfig& c) {
  const std::string p = "http_server_config.headers";
  if (empty(n)) return;
  if (!n.IsMap()) r.fail(n, p + ": expected a mapping");
  for (const auto& kv : n) {
    const std::string name = r.text(kv.first, p);
    const std::string value = r.text(kv.second, p + "." + name);
    if (!is_allowed_web_header(name)) {
      std::string known;
      for (auto h : kAllowedHeaders) known += (known.empty() ? "" : ", ") + std::string(h);
      r.fail(kv.first, p + ": header \"" + name + "\" cannot be set (allowed: " + known + ")");
    }
    for (char ch : value) {
      if (ch == '\r' || ch == '\n' || ch == '\0') r.fail(kv.second, p + "." + name + ": a line break in the value");
    }
    if (name == "X-Frame-Options" && !ascii_iequals(value, "deny") && !ascii_iequals(value, "sameorigin")) {
      r.fail(kv.second, p + ".X-Frame-Options: \"" + value + "\" is not deny or sameorigin");
    }
    if (name == "X-Content-Type-Options" && !ascii_iequals(value, "nosniff")) {
      r.fail(kv.second, p + ".X-Content-Type-Options: \"" + value + "\" is not nosniff");
    }
    for (const auto& [seen, _] : c.headers) {
      if (seen == name) r.fail(kv.first, p + ": header \"" + name + "\" given twice");
    }
    c.headers.emplace_back(name, value);
  }
}

void read_users(const yaml::Reader& r, const YAML::Node& n, WebConfig& c) {
  const std::string p = "basic_auth_users";
  if (empty(n)) return;
  if (!n.IsMap()) r.fail(n, p + ": expected a mapping of user name to bcrypt hash");
  for (const auto& kv : n) {
    const std::string user = r.text(kv.first, p);
    if (user.find(':') != std::string::npos) r.fail(kv.first, p + ": user name \"" + user + "\" contains ':'");
    const std::string hash = r.text(kv.second, p + "." + user);
    if (!is_bcrypt_hash(hash)) {
      r.fail(kv.second, p + "." + user +
                            ": not a bcrypt hash ($2a$, $2b$ or $2y$, cost 04-31, 60 characters; "
                            "make one with: htpasswd -nBC 10 \"\" | tr -d ':\\n')");
    }
    if (bcrypt_cost(hash) > kMaxBcryptCost) {
      r.fail(kv.second, p + "." + user + ": bcrypt cost " + std::to_string(bcrypt_cost(hash)) + " is above " +
                            std::to_string(kMaxBcryptCost) +
                            ", the most gpulens accepts (each step doubles the time of a login check; "
                            "cost 10 takes ~70 ms): make a new hash with htpasswd -nBC 10");
    }
    if (!c.users.emplace(user, hash).second) r.fail(kv.first, p + ": user \"" + user + "\" given twice");
  }
}

}  // namespace

std::string security_headers(const WebConfig* config) {
  std::vector<std::pair<std::string, std::string>> h = {
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},
      {"Cross-Origin-Resource-Policy", "same-origin"},
      {"Content-Security-Policy", kDefaultContentSecurityPolicy},
  };
  if (config) {
    for (const auto& [name, value] : config->headers) {
      bool replaced = false;
      for (auto& [n, v] : h) {
        if (n == name) {
          v = value;
          replaced = true;
        }
      }
      if (!replaced) h.emplace_back(name, value);
    }
  }
  std::string out;
  for (const auto& [n, v] : h) out += n + ": " + v + "\r\n";
  return out;
}

bool is_allowed_web_header(std::string_view name) {
  for (auto h : kAllowedHeaders) {
    if (name == h) return true;
  }
  return false;
}

Result<WebConfig> parse_web_config(const std::string& text, const std::string& origin, const std::string& base_dir) {
  WebConfig c;
  c.path = origin;
  const yaml::Reader r(origin);
  try {
    YAML::Node root = YAML::Load(text);
    if (empty(root)) return c;  // an empty file: plain HTTP, no users
    bool tls_section = false;
    r.map(root, "web config",
          {{"tls_server_config",
            [&](const YAML::Node& v) {
              tls_section = true;
              if (!empty(v)) read_tls(r, v, base_dir, c.tls);
            }},
           {"http_server_config",
            [&](const YAML::Node& v) {
              if (empty(v)) return;
              r.map(v, "http_server_config",
                    {{"http2", [&](const YAML::Node& b) { c.http2 = r.boolean(b, "http_server_config.http2"); }},
                     {"headers", [&](const YAML::Node& h) { read_headers(r, h, c); }}});
            }},
           {"basic_auth_users", [&](const YAML::Node& v) { read_users(r, v, c); }},
           {"rate_limit", [&](const YAML::Node& v) {
              if (empty(v)) return;
              r.map(v, "rate_limit",
                    {{"interval", [&](const YAML::Node& d) { c.rate_limit_interval_ms = r.duration(d, "rate_limit.interval"); }},
                     {"burst", [&](const YAML::Node& b) { c.rate_limit_burst = r.integer(b, "rate_limit.burst", 0, 1000000); }}});
            }}});
    TlsServerConfig& t = c.tls;
    c.tls_enabled = !t.cert_file.empty() || !t.cert.empty() || !t.key_file.empty() || !t.key.empty() ||
                    !t.client_ca_file.empty() || !t.client_ca.empty() || t.client_auth != ClientAuth::kNone;
    const YAML::Node tls_node = root["tls_server_config"];
    auto fail_tls = [&](const std::string& what) { r.fail(tls_section ? tls_node : root, "tls_server_config: " + what); };
    if (c.tls_enabled) {
      if ((t.cert_file.empty() && t.cert.empty()) || (t.key_file.empty() && t.key.empty())) {
        fail_tls("missing one of cert or cert_file, and key or key_file (both are needed for TLS)");
      }
      const bool ca = !t.client_ca_file.empty() || !t.client_ca.empty();
      if (ca && t.client_auth == ClientAuth::kNone) {
        fail_tls("client CA's have been configured without a Client Auth Policy (set client_auth_type)");
      }
      if (!ca && (t.client_auth == ClientAuth::kVerifyIfGiven || t.client_auth == ClientAuth::kRequireAndVerify)) {
        fail_tls("client_auth_type verifies client certificates: it needs client_ca_file (or client_ca)");
      }
      if (!t.client_allowed_sans.empty() && t.client_auth != ClientAuth::kRequireAndVerify &&
          t.client_auth != ClientAuth::kVerifyIfGiven) {
        fail_tls("client_allowed_sans needs a verifying client_auth_type (RequireAndVerifyClientCert)");
      }
    }
    if (t.min_version > t.max_version) fail_tls("min_version is newer than max_version");
    if (c.rate_limit_interval_ms < 0) r.fail(root, "rate_limit.interval: must not be negative");
    if (c.rate_limit_interval_ms > 0 && c.rate_limit_burst < 1) {
      r.fail(root["rate_limit"], "rate_limit: burst must be at least 1 when interval is set");
    }
  } catch (const yaml::ParseError& e) {
    return invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return invalid_argument(origin + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": " + e.msg);
  }
  return c;
}

Result<WebConfig> load_web_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read web config file " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  return parse_web_config(buf.str(), path, dir);
}

}  // namespace gpulens
