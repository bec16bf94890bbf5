// `gpulens catalog`: the field catalog as a Markdown table (docs/metrics.md's
// metric reference is this output) or as tab-separated values.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/command.h"
#include "model/catalog.h"

namespace gpulens::cli {

int run_catalog(int argc, char** argv) {
  CLI::App app{"Print every metric gpulens knows: name, type, unit, layer, dcgm-exporter name, help.",
               "gpulens catalog"};
  std::string format = "markdown";
  app.add_option("--format", format, "markdown or tsv")->check(CLI::IsMember({"markdown", "tsv"}));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  const bool md = format == "markdown";
  if (md) {
    std::cout << "| layer | metric | type | dcgm-exporter | meaning |\n|---|---|---|---|---|\n";
  }
  for (const FieldDef& f : catalog()) {
    const std::string dcgm = dcgm_names_of(f.id);
    std::string dcgm_md = dcgm.empty() ? "" : "`" + dcgm + "`";
    for (size_t p = dcgm_md.find(", "); p != std::string::npos; p = dcgm_md.find(", ", p + 4)) {
      dcgm_md.replace(p, 2, "`, `");
    }
    if (md) {
      std::cout << "| " << layer_name(f.layer) << " | `" << f.name << "`" << (f.native ? "" : " ¹") << " | "
                << type_name(f.type) << " | " << dcgm_md << " | "
                << f.help << " |\n";
    } else {
      std::cout << layer_name(f.layer) << '\t' << f.name << '\t' << type_name(f.type) << '\t' << f.unit << '\t'
                << dcgm << '\t' << (f.native ? "native" : "dcgm-only") << '\t' << f.help << '\n';
    }
  }
  if (md) {
    std::cout << "\n¹ kept for history, diagnosis and `--dcgm-names`; the native form is the `_total` counter.\n";
  }
  return kExitOk;
}

}  // namespace gpulens::cli
