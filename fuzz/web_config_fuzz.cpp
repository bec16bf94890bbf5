// Fuzz target: exporter-toolkit's web config (server/web_config.h
// parse_web_config: YAML, key checks, cipher and curve names, header rules,
// the bcrypt prefix check of every user's hash) and the security headers
// built from it. No file is read: certificates are tls.h's job.
#include <cstdint>
#include <string>

#include "server/bcrypt.h"
#include "server/web_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = gpulens::parse_web_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz.yml", "/etc");
  if (c.ok()) {
    (void)gpulens::security_headers(&*c);
    for (const auto& [user, hash] : c->users) {
      if (!gpulens::is_bcrypt_hash(hash)) __builtin_trap();  // the parser let a non-bcrypt hash through
    }
  }
  return 0;
}
