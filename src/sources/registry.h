// The source registry: one explicit table of every source the agent knows.
//
// `serve --source a,b` picks entries by name; with neither --source nor
// `sources:` the agent runs those with enabled_by_default (the default of the
// `sources` key is default_source_names()). There is no silent simulator: when
// no GPU source can open, serve fails and says to ask for `--source sim`
// (cli/setup.cpp). Adding a source is one line in registry.cpp.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sources/options.h"
#include "sources/source.h"

namespace gpulens {

struct SourceEntry {
  std::string_view name;
  std::string_view help;
  bool enabled_by_default;
  bool gpu_source;  // provides GPU fields (nvml, sim)
  std::unique_ptr<Source> (*make)(const SourceOptions&);
};

std::span<const SourceEntry> source_entries();
const SourceEntry* find_source(std::string_view name);
// The names of the entries enabled_by_default, in table order ("nvml", "host").
std::vector<std::string> default_source_names();

}  // namespace gpulens
