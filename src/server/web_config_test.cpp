// The web config reads exporter-toolkit's files and refuses what the toolkit
// refuses, naming file:line; bcrypt hashes are checked before crypt_r sees them.
#include "server/web_config.h"

#include <crypt.h>

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "server/basic_auth.h"
#include "server/bcrypt.h"

namespace gpulens {
namespace {

// exporter-toolkit's public vector: bcrypt("fakepassword"), cost 10.
constexpr const char* kFake = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi";
// bcrypt("fakepassword") at cost 4, prefix $2b$.
constexpr const char* kCheap2b = "$2b$04$abcdefghijklmnopqrstuuBQnHgpqTvGwW5nyIPXIaIQpu5QBGVRy";

Result<WebConfig> parse(const std::string& yaml) { return parse_web_config(yaml, "web.yml", "/etc/gl"); }

TEST(WebConfig, ReadsEveryToolkitKey) {
  auto c = parse(std::string(R"(
tls_server_config:
  cert_file: server.crt
  key_file: /abs/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  client_allowed_sans: [scraper.example]
  min_version: TLS13
  max_version: TLS13
  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256]
  prefer_server_cipher_suites: false
  curve_preferences: [CurveP256, X25519]
http_server_config:
  http2: false
  headers:
    Strict-Transport-Security: max-age=31536000
    X-Frame-Options: sameorigin
basic_auth_users:
  prometheus: ')") + kFake + R"('
rate_limit: {interval: 1s, burst: 5}
)");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->tls_enabled);
  EXPECT_EQ(c->tls.cert_file, "/etc/gl/server.crt");  // relative: against the file's folder
  EXPECT_EQ(c->tls.key_file, "/abs/server.key");
  EXPECT_EQ(c->tls.client_ca_file, "/etc/gl/ca.crt");
  EXPECT_EQ(c->tls.client_auth, ClientAuth::kRequireAndVerify);
  EXPECT_EQ(c->tls.min_version, 0x0304);
  EXPECT_EQ(c->tls.openssl_ciphers, std::vector<std::string>{"ECDHE-RSA-AES128-GCM-SHA256"});
  EXPECT_EQ(c->tls.curves, (std::vector<std::string>{"P-256", "X25519"}));
  EXPECT_FALSE(c->tls.prefer_server_cipher_suites);
  EXPECT_FALSE(c->http2);
  ASSERT_EQ(c->headers.size(), 2u);
  EXPECT_EQ(c->headers[1].first, "X-Frame-Options");
  EXPECT_EQ(c->users.at("prometheus"), kFake);
  EXPECT_EQ(c->rate_limit_interval_ms, 1000);
  EXPECT_EQ(c->rate_limit_burst, 5);
}

TEST(WebConfig, EmptyFileAndEmptySectionsArePlainHttp) {
  auto c = parse("");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->tls_enabled);
  c = parse("tls_server_config:\nbasic_auth_users:\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->tls_enabled);
  EXPECT_TRUE(c->users.empty());
}

TEST(WebConfig, ErrorsNameFileLineAndKey) {
  auto c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  certfile: c\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("web.yml:4:3: tls_server_config: unknown key \"certfile\""), std::string::npos)
      << c.status().message();
  c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Always\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("web.yml:4:21: tls_server_config.client_auth_type: \"Always\""),
            std::string::npos) << c.status().message();
  c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_RSA_WITH_NOTHING]\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown cipher suite \"TLS_RSA_WITH_NOTHING\""), std::string::npos);
  c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  curve_preferences: [P256]\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("web.yml:4:23"), std::string::npos) << c.status().message();
  c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n");
  EXPECT_FALSE(c.ok());
  c = parse("listen: 1\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("web.yml:1:1: web config: unknown key \"listen\""), std::string::npos);
}

TEST(WebConfig, TlsNeedsCertAndKeyAndAPolicyForTheCa) {
  EXPECT_NE(parse("tls_server_config:\n  cert_file: a\n").status().message().find("missing one of cert or cert_file"),
            std::string::npos);
  EXPECT_NE(parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n")
                .status().message().find("without a Client Auth Policy"),
            std::string::npos);
  EXPECT_NE(parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n")
                .status().message().find("needs client_ca_file"),
            std::string::npos);
  // Inline PEM counts as given.
  EXPECT_TRUE(parse("tls_server_config:\n  cert: x\n  key: y\n").ok());
  // Aliases of the toolkit.
  auto c = parse("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireClientCert\n");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->tls.client_auth, ClientAuth::kRequireAny);
}

TEST(WebConfig, HeadersAreTheToolkitsListWithoutLineBreaks) {
  auto c = parse("http_server_config:\n  headers:\n    Set-Cookie: a=b\n");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("web.yml:3:5: http_server_config.headers: header \"Set-Cookie\" cannot be set"),
            std::string::npos) << c.status().message();
  EXPECT_FALSE(parse("http_server_config:\n  headers:\n    X-Frame-Options: allow-from x\n").ok());
  EXPECT_FALSE(parse("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n").ok());
  EXPECT_FALSE(parse("http_server_config:\n  headers:\n    Content-Security-Policy: \"a\\r\\nSet-Cookie: x\"\n").ok());
}

TEST(WebConfig, UsersNeedBcryptHashes) {
  // A DES or MD5 crypt hash, or anything else, is refused: crypt_r would take it.
  for (const char* bad : {"abJnggxhB/yWI", "$1$abc$abcdefghijklmnopqrstuv", "plaintext", "$2x$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"}) {
    auto c = parse(std::string("basic_auth_users:\n  alice: '") + bad + "'\n");
    ASSERT_FALSE(c.ok()) << bad;
    EXPECT_NE(c.status().message().find("web.yml:2:10: basic_auth_users.alice: not a bcrypt hash"), std::string::npos)
        << c.status().message();
  }
  EXPECT_FALSE(parse(std::string("basic_auth_users:\n  'a:b': '") + kFake + "'\n").ok());
}

TEST(Bcrypt, PrefixCheckComesBeforeCryptR) {
  EXPECT_TRUE(is_bcrypt_hash(kFake));
  EXPECT_TRUE(is_bcrypt_hash(kCheap2b));
  std::string h = kFake;
  for (const char* prefix : {"$2a$", "$2b$", "$2y$"}) {
    h.replace(0, 4, prefix);
    EXPECT_TRUE(is_bcrypt_hash(h)) << h;
  }
  for (const char* prefix : {"$2x$", "$2$1", "$3a$", "$2A$", "_2a$"}) {
    h.replace(0, 4, prefix);
    EXPECT_FALSE(is_bcrypt_hash(h)) << h;
  }
  EXPECT_FALSE(is_bcrypt_hash("$2y$03$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"));  // cost < 4
  EXPECT_FALSE(is_bcrypt_hash("$2y$32$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"));  // cost > 31
  EXPECT_FALSE(is_bcrypt_hash(std::string(kFake).substr(0, 59)));
  EXPECT_FALSE(is_bcrypt_hash(std::string(kFake) + "x"));
  EXPECT_FALSE(is_bcrypt_hash("$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeS!"));
}

TEST(Bcrypt, MatchesTheToolkitVectorAndNothingElse) {
  EXPECT_TRUE(bcrypt_matches("fakepassword", kFake));
  EXPECT_FALSE(bcrypt_matches("fakepassworD", kFake));
  EXPECT_FALSE(bcrypt_matches(std::string("fakepassword\0x", 14), kFake));
  // The pitfall the prefix check closes: crypt_r falls back to DES for an
  // unknown setting, so its own output would "verify".
  auto data = std::make_unique<crypt_data>();
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* des = crypt_r("pw", "garbage", data.get());
  if (des != nullptr && des[0] != '*') {
    EXPECT_FALSE(bcrypt_matches("pw", des)) << "a DES hash must never verify";
  }
  EXPECT_FALSE(bcrypt_matches("pw", "garbage"));
}

TEST(BasicAuth, ParsesTheHeader) {
  std::string u, p;
  ASSERT_TRUE(parse_basic_credentials("Basic cHJvbTpzZTpjcmV0", u, p));  // prom:se:cret
  EXPECT_EQ(u, "prom");
  EXPECT_EQ(p, "se:cret");
  ASSERT_TRUE(parse_basic_credentials("basic  YTo=", u, p));  // "a:"
  EXPECT_EQ(u, "a");
  EXPECT_EQ(p, "");
  EXPECT_FALSE(parse_basic_credentials("Bearer cHJvbTpzZWNyZXQ=", u, p));
  EXPECT_FALSE(parse_basic_credentials("Basic !!!!", u, p));
  EXPECT_FALSE(parse_basic_credentials("Basic bm9jb2xvbg==", u, p));  // "nocolon"
  EXPECT_FALSE(parse_basic_credentials("Basic", u, p));
}

}  // namespace
}  // namespace gpulens
