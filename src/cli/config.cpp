// The one validator: walks a YAML file against config_keys(), checks each
// value for its key's type and bounds (the same checks flags get through
// set_key), then the cross-key checks of validate().
#include "cli/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "model/label_rules.h"
#include "model/selection.h"
#include "model/series.h"
#include "server/web_security.h"
#include "sources/registry.h"
#include "sources/sim/scenario.h"
#include "store/history.h"
#include "util/duration.h"

namespace gpulens::cli {
namespace {

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) {
    while (!item.empty() && item.front() == ' ') item.erase(0, 1);
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::string number_text(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

Result<double> parse_number(const std::string& t) {
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size() || !std::isfinite(v)) {
    return invalid_argument("\"" + t + "\" is not a number");
  }
  return v;
}

Status check_port(const std::string& port_text, const std::string& whole) {
  int port = -1;
  auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || p != port_text.data() + port_text.size()) {
    return invalid_argument("\"" + whole + "\": port \"" + port_text + "\" is not a number");
  }
  if (port < 1 || port > 65535) {
    return invalid_argument("\"" + whole + "\": port " + port_text + " is out of range 1..65535");
  }
  return Status::ok();
}

// Splits "host:port" / "[v6]:port"; the port must be there.
Status check_host_port(const std::string& hp, const std::string& whole, bool port_required) {
  std::string host = hp, port;
  if (!hp.empty() && hp.front() == '[') {
    const size_t close = hp.find(']');
    if (close == std::string::npos) return invalid_argument("\"" + whole + "\": unclosed [ in the address");
    host = hp.substr(1, close - 1);
    if (close + 1 < hp.size()) {
      if (hp[close + 1] != ':') return invalid_argument("\"" + whole + "\": expected :PORT after ]");
      port = hp.substr(close + 2);
    } else if (port_required) {
      return invalid_argument("\"" + whole + "\" needs a port (HOST:PORT)");
    }
  } else {
    const size_t colon = hp.rfind(':');
    if (colon == std::string::npos) {
      if (port_required) return invalid_argument("\"" + whole + "\" needs HOST:PORT, e.g. 127.0.0.1:9400");
    } else {
      host = hp.substr(0, colon);
      port = hp.substr(colon + 1);
      if (host.find(':') != std::string::npos) {
        return invalid_argument("\"" + whole + "\": write an IPv6 address in brackets, [::1]:9400");
      }
    }
  }
  if (host.empty()) return invalid_argument("\"" + whole + "\" has no host (0.0.0.0 for every address)");
  if (!port.empty() || port_required) return check_port(port, whole);
  return Status::ok();
}

Status check_url(const std::string& url, const std::string& schemes) {
  const size_t sep = url.find("://");
  if (sep == std::string::npos) {
    return invalid_argument("\"" + url + "\" is not a URL: write " + split(schemes).front() + "://HOST:PORT/PATH");
  }
  const std::string scheme = url.substr(0, sep);
  const auto allowed = split(schemes);
  if (std::find(allowed.begin(), allowed.end(), scheme) == allowed.end()) {
    return invalid_argument("\"" + url + "\": scheme " + scheme + ":// is not supported (only " + schemes + ")");
  }
  std::string rest = url.substr(sep + 3);
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) rest = rest.substr(0, slash);
  return check_host_port(rest, url, false);
}

}  // namespace

// Checks `text` for k's type and bounds, then stores it.
Status set_key(AgentConfig& c, const std::string& name, const std::string& text, const std::string& what_in) {
  const ConfigKey* k = find_key(name);
  if (k == nullptr) return invalid_argument("unknown key \"" + name + "\"");
  const std::string what = what_in.empty() ? k->key : what_in;
  auto bad = [&](const std::string& m) { return invalid_argument(what + ": " + m); };
  auto in_bounds = [&](double v, const std::string& shown) -> Status {
    if (k->min == 0 && k->max == 0) return Status::ok();
    if (v < k->min || v > k->max) {
      const bool dur = k->type == KeyType::kDuration;
      return bad(shown + " is out of range " +
                 (dur ? format_duration(static_cast<int64_t>(k->min)) : number_text(k->min)) + ".." +
                 (dur ? format_duration(static_cast<int64_t>(k->max)) : number_text(k->max)));
    }
    return Status::ok();
  };
  switch (k->type) {
    case KeyType::kText:
    case KeyType::kPath:
      // Text reaches labels, logs and pages: the label rules' UTF-8, and the
      // whole rule for the one label value the configuration sets.
      if (!valid_utf8(text)) return bad("\"" + printable(text) + "\" is not valid UTF-8");
      if (k->key == "remote_write.job" && !text.empty()) {
        if (LabelCheck lc = check_label("job", text, LabelLimits{}); !lc) return bad(lc.message);
      }
      break;
    case KeyType::kChoice: {
      const auto options = split(k->choices);
      if (std::find(options.begin(), options.end(), text) == options.end()) {
        return bad("\"" + text + "\" is not one of " + k->choices);
      }
      break;
    }
    case KeyType::kList: {
      const auto options = split(k->choices);
      for (const auto& item : split(text)) {
        if (!options.empty() && std::find(options.begin(), options.end(), item) == options.end()) {
          return bad("unknown \"" + item + "\" (known: " + k->choices + ")");
        }
      }
      // A list of choices (sources) needs one; a free list (allowed_hosts) may be empty.
      if (split(text).empty() && !options.empty()) return bad("the list is empty");
      break;
    }
    case KeyType::kBool:
      if (text != "true" && text != "false") return bad("\"" + text + "\": expected true or false");
      break;
    case KeyType::kNumber:
    case KeyType::kInteger:
    case KeyType::kRatio: {
      auto v = parse_number(text);
      if (!v) return bad(v.status().message() + (k->type == KeyType::kRatio ? " (a ratio in 0..1, e.g. 0.8)" : ""));
      if (k->type == KeyType::kRatio && (*v < 0 || *v > 1)) {
        return bad(text + " is not a ratio in 0..1 (write 0.8 for 80 %)");
      }
      if (k->type == KeyType::kInteger && *v != std::floor(*v)) return bad(text + " is not a whole number");
      if (Status s = in_bounds(*v, text); !s) return s;
      break;
    }
    case KeyType::kDuration: {
      auto ms = parse_duration_ms(text);
      if (!ms) return bad(ms.status().message());
      if (Status s = in_bounds(static_cast<double>(*ms), text); !s) return s;
      break;
    }
    case KeyType::kUrl:
      if (!text.empty()) {
        if (Status s = check_url(text, k->choices); !s) return bad(s.message());
      }
      break;
    case KeyType::kListen:
      if (Status s = check_host_port(text, text, true); !s) return bad(s.message());
      break;
    case KeyType::kHeaders:
      break;  // names and values: check_http_client_options() in validate()
  }
  if (Status s = k->set(c, text); !s) return bad(s.message());
  return Status::ok();
}

namespace {

struct ParseError {
  std::string message;
};

class Walker {
 public:
  Walker(std::string origin, AgentConfig& c) : origin_(std::move(origin)), c_(c) {}

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    const auto m = n.Mark();
    throw ParseError{origin_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + what};
  }

  // `prefix` is "" at the top, else "source.nvml." etc.
  void map(const YAML::Node& n, const std::string& prefix) {
    const std::string where = prefix.empty() ? "config" : prefix.substr(0, prefix.size() - 1);
    if (!n.IsMap()) fail(n, where + ": expected a mapping");
    // Children of this section, in declaration order; true: a leaf key.
    std::vector<std::pair<std::string, bool>> children;
    for (const auto& k : config_keys()) {
      if (k.key.compare(0, prefix.size(), prefix) != 0) continue;
      const std::string rest = k.key.substr(prefix.size());
      const size_t dot = rest.find('.');
      const std::string child = rest.substr(0, dot);
      if (std::none_of(children.begin(), children.end(), [&](const auto& p) { return p.first == child; })) {
        children.emplace_back(child, dot == std::string::npos);
      }
    }
    std::set<std::string> seen;
    for (const auto& kv : n) {
      if (!kv.first.IsScalar()) fail(kv.first, where + ": a key must be a name");
      const std::string name = kv.first.Scalar();
      auto it = std::find_if(children.begin(), children.end(), [&](const auto& p) { return p.first == name; });
      if (it == children.end()) {
        std::string known;
        for (const auto& [child, _] : children) known += (known.empty() ? "" : ", ") + child;
        fail(kv.first, where + ": unknown key \"" + name + "\" (known: " + known + ")");
      }
      if (!seen.insert(name).second) fail(kv.first, where + ": key \"" + name + "\" appears twice");
      const YAML::Node& v = kv.second;
      if (!it->second) {
        if (v.IsNull()) continue;  // "diagnose:" with nothing under it
        map(v, prefix + name + ".");
        continue;
      }
      leaf(v, prefix + name);
    }
  }

 private:
  void leaf(const YAML::Node& v, const std::string& key) {
    const ConfigKey* k = find_key(key);
    std::string text;
    if (k->type == KeyType::kHeaders) {
      if (!v.IsMap()) fail(v, key + ": expected a mapping of header name to value, e.g. {X-Scope-OrgID: tenant-a}");
      for (const auto& kv : v) {
        if (!kv.first.IsScalar() || !kv.second.IsScalar()) fail(kv.first, key + ": a header is name: value");
        if (kv.first.Scalar().find_first_of("\t\n") != std::string::npos ||
            kv.second.Scalar().find_first_of("\t\n\r") != std::string::npos) {
          fail(kv.first, key + ": \"" + kv.first.Scalar() + "\": no tabs or line breaks in a header");
        }
        text += kv.first.Scalar() + "\t" + kv.second.Scalar() + "\n";
      }
      if (!text.empty()) text.pop_back();
    } else if (k->type == KeyType::kList && v.IsSequence()) {
      for (const auto& item : v) {
        if (!item.IsScalar()) fail(item, key + ": expected a list of names");
        text += (text.empty() ? "" : ",") + item.Scalar();
      }
      if (text.empty() && !k->choices.empty()) fail(v, key + ": the list is empty");
    } else if (v.IsScalar()) {
      text = v.Scalar();
    } else if (v.IsNull()) {
      fail(v, key + ": no value");
    } else {
      fail(v, key + ": expected a single value, not a " + (v.IsMap() ? "mapping" : "list"));
    }
    if (Status s = set_key(c_, key, text); !s) fail(v, s.message());
  }

  std::string origin_;
  AgentConfig& c_;
};

// YAML text of one value: quoted when a plain scalar would read differently.
std::string yaml_value(const std::string& v, KeyType type) {
  if (type == KeyType::kHeaders) return v;  // already a flow mapping
  if (type == KeyType::kList) return "[" + [&] {
    std::string out;
    for (const auto& s : split(v)) out += (out.empty() ? "" : ", ") + s;
    return out;
  }() + "]";
  const bool plain = !v.empty() && v.find_first_of(":#{}[],&*!|>'\"%@`") == std::string::npos &&
                     v.front() != ' ' && v.back() != ' ' && v.front() != '-';
  const bool url_or_listen = type == KeyType::kUrl || type == KeyType::kListen;
  if (plain || (url_or_listen && !v.empty() && v.find_first_of("#{}[],\"' ") == std::string::npos)) return v;
  std::string q = "\"";
  append_escaped(q, v);  // YAML's double-quoted escapes \\, \" and \n are the exposition's
  return q + "\"";
}

std::string type_name(const ConfigKey& k) {
  switch (k.type) {
    case KeyType::kText: return "text";
    case KeyType::kPath: return "path";
    case KeyType::kChoice: return "one of " + k.choices;
    case KeyType::kList: return "list of " + k.choices;
    case KeyType::kBool: return "bool";
    case KeyType::kNumber:
      return "number" + (k.min || k.max ? " " + number_text(k.min) + ".." + number_text(k.max) : std::string());
    case KeyType::kInteger:
      return "integer" + (k.min || k.max ? " " + number_text(k.min) + ".." + number_text(k.max) : std::string());
    case KeyType::kRatio: return "ratio 0..1";
    case KeyType::kDuration:
      return "duration" + (k.min || k.max ? " " + format_duration(static_cast<int64_t>(k.min)) + ".." +
                                                format_duration(static_cast<int64_t>(k.max))
                                          : std::string());
    case KeyType::kUrl: return k.choices + ":// URL";
    case KeyType::kListen: return "HOST:PORT";
    case KeyType::kHeaders: return "mapping name: value";
  }
  return "";
}

}  // namespace

Result<AgentConfig> parse_config(const std::string& text, const std::string& origin) {
  AgentConfig c;
  c.path = origin;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) return c;  // an empty file is the defaults
    Walker(origin, c).map(root, "");
  } catch (const ParseError& e) {
    return invalid_argument(e.message);
  } catch (const YAML::Exception& e) {
    return invalid_argument(origin + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                            ": " + e.msg);
  }
  return c;
}

Result<AgentConfig> load_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read config file " + path);
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_config(buf.str(), path);
}

HttpClientOptions ClientConfig::options(int64_t timeout_ms) const {
  HttpClientOptions o{.timeout_ms = timeout_ms};
  o.tls = tls;
  o.auth = auth;
  if (!bearer_token.empty()) o.auth.credentials = bearer_token;
  if (!bearer_token_file.empty()) o.auth.credentials_file = bearer_token_file;
  return o;
}

namespace {

void check_client(const ClientConfig& c, const std::string& section, std::vector<std::string>& problems) {
  const bool bearer = !c.bearer_token.empty() || !c.bearer_token_file.empty();
  if (bearer && (!c.auth.credentials.empty() || !c.auth.credentials_file.empty())) {
    problems.push_back(section + ": at most one of bearer_token(_file) and authorization may be set");
    return;
  }
  if (!c.bearer_token.empty() && !c.bearer_token_file.empty()) {
    problems.push_back(section + ": at most one of bearer_token and bearer_token_file may be set");
    return;
  }
  if (Status s = check_http_client_options(c.options(1000), section); !s) problems.push_back(s.message());
}

}  // namespace

std::vector<std::string> validate(const AgentConfig& c) {
  std::vector<std::string> problems;
  check_client(c.remote_write.client, "remote_write", problems);
  check_client(c.prometheus, "prometheus", problems);
  check_client(c.scrape_client, "source.scrape", problems);
  {
    const bool scrape = std::find(c.sources.begin(), c.sources.end(), "scrape") != c.sources.end();
    for (const auto& t : c.source.scrape.targets) {
      if (Status s = check_url(t, "http,https"); !s) problems.push_back("source.scrape.targets: " + s.message());
    }
    std::set<std::string> seen;
    for (const auto& t : c.source.scrape.targets) {
      if (!seen.insert(t).second) problems.push_back("source.scrape.targets: \"" + t + "\" is listed twice");
    }
    if (scrape && c.source.scrape.targets.empty()) {
      problems.push_back("source scrape needs at least one target (--scrape URL or source.scrape.targets)");
    }
    if (!scrape && !c.source.scrape.targets.empty()) {
      problems.push_back("source.scrape.targets is set but scrape is not among the sources (e.g. --source "
                         "nvml,host,scrape)");
    }
  }
  if (c.history_ms < c.interval_ms) problems.push_back("history is shorter than one interval");
  if (c.history_ms / std::max<int64_t>(c.interval_ms, 1) > 10'000'000) {
    problems.push_back("history/interval keeps more than 10 million records per series; shorten history");
  }
  if (c.remote_write.min_backoff_ms > c.remote_write.max_backoff_ms) {
    problems.push_back("remote_write.min_backoff is longer than remote_write.max_backoff");
  }
  if (c.source.kubelet.timeout_ms > c.source.kubelet.refresh_ms) {
    problems.push_back("source.kubelet.timeout is longer than source.kubelet.refresh");
  }
  if (!c.collectors.empty()) {
    if (c.profile != "full") problems.push_back("collectors and profile are both set: a counters file replaces the profile");
    if (auto sel = load_collectors(c.collectors); !sel) problems.push_back(sel.status().message());
  }
  for (const auto& s : c.sources) {
    if (!find_source(s)) {
      std::string known;
      for (const auto& e : source_entries()) known += (known.empty() ? "" : ", ") + std::string(e.name);
      problems.push_back("unknown source \"" + s + "\" (known: " + known + ")");
    }
  }
  if (!c.push.token_file.empty()) {
    // serve reads it at start: a missing or empty file is an error here too.
    std::ifstream in(c.push.token_file, std::ios::binary);
    std::string token;
    if (in) std::getline(in, token, '\0');
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (!in.is_open()) problems.push_back("push.token_file: cannot read " + c.push.token_file);
    else if (token.empty()) problems.push_back("push.token_file: " + c.push.token_file + " is empty");
  }
  if (!c.web_config_file.empty()) {
    if (Status s = check_web_config_file(c.web_config_file); !s) {
      problems.push_back("web_config_file: " + s.message());
    } else if (!c.push.token_file.empty() && c.push.enabled) {
      if (auto w = load_web_config(c.web_config_file); w && !w->users.empty()) {
        problems.push_back("push.token_file and basic_auth_users of web_config_file both use the Authorization "
                           "header: with basic auth on, pushes log in as a user; drop push.token_file");
      }
    }
  }
  if (std::find(c.sources.begin(), c.sources.end(), "sim") != c.sources.end()) {
    const std::string dir = c.source.sim.scenario_dir.empty() ? sim::default_scenario_dir() : c.source.sim.scenario_dir;
    if (auto s = sim::load_scenario(c.source.sim.scenario, dir); !s) problems.push_back(s.status().message());
  }
  return problems;
}

namespace {

// The keys `check-config` always shows: what `serve` runs with.
bool always_shown(const std::string& key) {
  return key == "listen" || key == "interval" || key == "history" || key == "sources";
}

// YAML of the keys `keep` accepts, in catalog order, sections opened as needed.
template <typename Keep>
std::string keys_yaml(const AgentConfig& c, Keep keep) {
  std::ostringstream o;
  std::vector<std::string> open;  // the sections printed above
  for (const auto& k : config_keys()) {
    if (!keep(k)) continue;
    std::vector<std::string> parts;
    std::stringstream ss(k.key);
    for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
    size_t same = 0;
    while (same < open.size() && same + 1 < parts.size() && open[same] == parts[same]) ++same;
    open.resize(same);
    for (size_t i = same; i + 1 < parts.size(); ++i) {
      o << std::string(2 * i, ' ') << parts[i] << ":\n";
      open.push_back(parts[i]);
    }
    std::string value = k.show(c);
    const bool secret = parts.back() == "password" || parts.back() == "credentials" || parts.back() == "bearer_token";
    if (secret && !value.empty()) value = "<secret>";  // check-config output lands in logs and tickets
    o << std::string(2 * (parts.size() - 1), ' ') << parts.back() << ": " << yaml_value(value, k.type) << "\n";
  }
  return o.str();
}

}  // namespace

std::string to_yaml(const AgentConfig& c) {
  return keys_yaml(c, [](const ConfigKey&) { return true; });
}

std::string to_yaml_summary(const AgentConfig& c, size_t& changed) {
  const AgentConfig defaults;
  changed = 0;
  return keys_yaml(c, [&](const ConfigKey& k) {
    if (always_shown(k.key)) return true;
    const bool differs = k.show(c) != k.show(defaults);
    changed += differs ? 1 : 0;
    return differs;
  });
}

std::string keys_markdown() {
  const AgentConfig defaults;
  std::ostringstream o;
  o << "| key | type | default | flag | meaning |\n|---|---|---|---|---|\n";
  for (const auto& k : config_keys()) {
    std::string def = k.show(defaults);
    o << "| `" << k.key << "` | " << type_name(k) << " | " << (def.empty() ? "—" : "`" + def + "`") << " | "
      << (k.flag.empty() ? "" : "`" + k.flag + "`") << " | " << k.help << " |\n";
  }
  return o.str();
}

std::string fit_series_budgets(AgentConfig& c) {
  // One series from outside: its history at the worst case (every value
  // raw, History::budget_bytes) and about 1.1 KB of registry, store, push or
  // scrape state and page text (docs/limits.md, "Memory at the budget").
  const auto records = static_cast<size_t>(std::max<int64_t>(1, c.history_ms / std::max<int64_t>(c.interval_ms, 1)));
  const double per_series = static_cast<double>(History::series_budget_bytes(records)) + 1100;
  const double wanted = static_cast<double>(c.push.max_series + c.source.scrape.max_series_total) * per_series;
  if (wanted <= static_cast<double>(c.outside_history_bytes)) return "";
  const double f = static_cast<double>(c.outside_history_bytes) / wanted;
  std::string changed;
  for (auto [key, v] : {std::pair{"push.max_series", &c.push.max_series},
                        std::pair{"push.max_series_per_job", &c.push.max_series_per_job},
                        std::pair{"push.max_series_per_group", &c.push.max_series_per_group},
                        std::pair{"source.scrape.max_series", &c.source.scrape.max_series},
                        std::pair{"source.scrape.max_series_total", &c.source.scrape.max_series_total}}) {
    const int64_t lowered = std::max<int64_t>(16, static_cast<int64_t>(static_cast<double>(*v) * f));
    if (lowered >= *v) continue;
    if (!changed.empty()) changed += ", ";
    changed += std::string(key) + " " + std::to_string(*v) + " -> " + std::to_string(lowered);
    *v = lowered;
  }
  return changed;
}

}  // namespace gpulens::cli
