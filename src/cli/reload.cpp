// Compares two configurations key by key through the one key table.
#include "cli/reload.h"

namespace gpulens::cli {

bool live_reload_key(const std::string& key) {
  for (const char* prefix : {"diagnose.", "rules.", "remote_write.", "log.", "source.scrape."}) {
    if (key.starts_with(prefix)) return true;
  }
  return false;
}

ReloadPlan plan_reload(const AgentConfig& running, const AgentConfig& fresh) {
  ReloadPlan p;
  p.next = running;
  // Whole sections: the key table's text form can round numbers.
  p.next.diagnose = fresh.diagnose;
  p.next.profile_on = fresh.profile_on;
  p.next.rules = fresh.rules;
  p.next.remote_write = fresh.remote_write;
  p.next.log = fresh.log;
  p.next.source.scrape = fresh.source.scrape;
  p.next.scrape_client = fresh.scrape_client;
  p.next.path = fresh.path;
  for (const ConfigKey& k : config_keys()) {
    if (k.show(running) == k.show(fresh)) continue;
    (live_reload_key(k.key) ? p.applied : p.needs_restart).push_back(k.key);
  }
  return p;
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "none" : out;
}

}  // namespace gpulens::cli
