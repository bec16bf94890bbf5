// The command-line flags of the configuration keys, made from config_keys()
// (`flag`, `flag_for`, `flag_help` of each row): a flag and the key it sets
// are one declaration, and a flag's value gets the file's checks (set_key).
//
//   KeyFlags flags;
//   flags.add_to(app, FlagScope::kServe);   // serve's flags and the shared ones
//   ... parse ...
//   Status s = flags.apply(config);         // over the loaded file: flags win
//
// How a key's type becomes an option: a bool key is a switch (--push); a
// list without choices is repeated (--scrape URL --scrape URL); anything
// else takes one value, a choice's checked (and listed in --help) by CLI11.
// Keys that share a flag are set together by one option: two values
// (--proc-root sets source.host.proc_root and source.nvml.proc_root), or a
// bool and a value written NAME=VALUE (--dcgm-names alone sets dcgm_names and
// dcgm_naming's default, --dcgm-names=4.9 the value).
//
// Thread-safety: used while a command starts, on one thread. CLI11 keeps
// pointers into a KeyFlags: it outlives the parse.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "cli/config.h"
#include "util/status.h"

namespace CLI {
class App;
}

namespace gpulens::cli {

class KeyFlags {
 public:
  // Registers the flag of every key whose flag_for is kAgent, or kServe
  // too when `scope` is kServe, in table order.
  void add_to(CLI::App& app, FlagScope scope);
  // Sets the keys of the flags given over `config`, in table order. Errors
  // name the flag as the table writes it ("--dcgm-names=NAMING: ...").
  Status apply(AgentConfig& config) const;

 private:
  struct Option {
    std::string name;                    // "--dcgm-names"
    std::vector<const ConfigKey*> keys;  // the keys it sets, in table order
    std::string value;                   // "" when not given
    std::vector<std::string> values;     // a repeated option's
    bool on = false;                     // a switch's
  };
  std::deque<Option> options_;  // CLI11 holds references to the members
};

}  // namespace gpulens::cli
