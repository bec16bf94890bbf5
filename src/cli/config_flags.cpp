// The flags of the configuration keys, made from config_keys(); see
// config_flags.h.
#include "cli/config_flags.h"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace gpulens::cli {
namespace {

// "--dcgm-names=NAMING" -> "--dcgm-names": the option's name.
std::string key_flag_option_name(const std::string& flag) { return flag.substr(0, flag.find('=')); }

std::vector<std::string> key_flag_choices(const std::string& choices) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= choices.size()) {
    size_t comma = choices.find(',', start);
    if (comma == std::string::npos) comma = choices.size();
    if (comma > start) out.push_back(choices.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

void KeyFlags::add_to(CLI::App& app, FlagScope scope) {
  // The options, each with the keys that share it, in the order of their first key.
  std::vector<std::vector<const ConfigKey*>> groups;
  for (const ConfigKey& k : config_keys()) {
    if (k.flag.empty()) continue;
    const std::string name = key_flag_option_name(k.flag);
    auto same = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return key_flag_option_name(g.front()->flag) == name; });
    if (same == groups.end()) {
      groups.push_back({&k});
    } else {
      same->push_back(&k);
    }
  }
  for (const auto& keys : groups) {
    const ConfigKey& first = *keys.front();
    const bool wanted = first.flag_for == FlagScope::kAgent ||
                        (first.flag_for == FlagScope::kServe && scope == FlagScope::kServe);
    if (!wanted) continue;
    Option& o = options_.emplace_back();
    o.name = key_flag_option_name(first.flag);
    o.keys = keys;
    const auto value_key = std::find_if(keys.begin(), keys.end(), [](auto* k) { return k->type != KeyType::kBool; });
    const bool has_switch = std::any_of(keys.begin(), keys.end(), [](auto* k) { return k->type == KeyType::kBool; });
    CLI::Option* opt = nullptr;
    if (value_key == keys.end()) {
      opt = app.add_flag(o.name, o.on, first.flag_help);
    } else if (has_switch) {
      // Alone: the value key's default; NAME=VALUE: that value.
      opt = app.add_flag(o.name + "{" + (*value_key)->show(AgentConfig{}) + "}", o.value, first.flag_help);
    } else if ((*value_key)->type == KeyType::kList && (*value_key)->choices.empty()) {
      opt = app.add_option(o.name, o.values, first.flag_help)->take_all()->allow_extra_args(false);
    } else {
      opt = app.add_option(o.name, o.value, first.flag_help);
    }
    if (value_key != keys.end() && !has_switch && (*value_key)->type == KeyType::kChoice) {
      opt->check(CLI::IsMember(key_flag_choices((*value_key)->choices)));
    }
  }
}

Status KeyFlags::apply(AgentConfig& config) const {
  for (const Option& o : options_) {
    std::string text = o.value;
    for (const auto& v : o.values) text += (text.empty() ? "" : ",") + v;
    if (!o.on && text.empty()) continue;  // not given
    for (const ConfigKey* k : o.keys) {
      if (Status s = set_key(config, k->key, k->type == KeyType::kBool ? std::string("true") : text, k->flag); !s) {
        return s;
      }
    }
  }
  return Status::ok();
}

}  // namespace gpulens::cli
