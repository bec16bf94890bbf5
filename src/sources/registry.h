// The source registry: one explicit table of every source the agent knows.
//
// `serve --source a,b` picks entries by name; with no --source the agent
// enables those with enabled_by_default, and falls back to "sim" when no GPU
// source can open (see cli/cmd_serve.cpp). Adding a source is one line in
// registry.cpp.
#pragma once

#include <memory>
#include <span>
#include <string_view>

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

}  // namespace gpulens
