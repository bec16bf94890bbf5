// `gpulens rules`: print the Prometheus recording and alerting rules with the
// thresholds of a config file and/or --set flags.
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "cli/config.h"
#include "model/selection.h"
#include "rules/profile.h"
#include "rules/rules.h"
#include "util/duration.h"

namespace gpulens::cli {

int run_rules(int argc, char** argv) {
  CLI::App app{"Print Prometheus alerting and recording rules with your thresholds.", "gpulens rules"};
  std::string config, format = "prometheus", output;
  std::vector<std::string> sets;
  bool dcgm = false, list = false;
  std::string profile_name, collectors;
  app.add_option("--config", config, "YAML file whose rules: section sets thresholds")->check(CLI::ExistingFile);
  app.add_option("--set", sets, "KEY=VALUE, e.g. gpu_util_low.threshold=0.3 (after --config; repeatable)");
  app.add_flag("--dcgm-names", dcgm, "rules over dcgm-exporter's DCGM_FI_* names and labels");
  app.add_option("--profile", profile_name,
                 "leave out the rules whose series this profile does not collect (minimal, standard, full) and "
                 "list them, with the diagnosis causes it leaves unassessed");
  app.add_option("--collectors", collectors, "the same for a dcgm-exporter counters CSV");
  app.add_option("--format", format, "prometheus (rule file) or prometheus-rule (Kubernetes object)")
      ->check(CLI::IsMember({"prometheus", "prometheus-rule"}));
  app.add_option("-o,--output", output, "write to this file instead of stdout");
  app.add_flag("--list-keys", list, "print every settable key with its default and exit");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  rules::RuleOptions options = rules::RuleOptions::defaults();
  if (list) {
    std::cout << "job: " << options.job << "\nrunbook_base: " << options.runbook_base
              << "\nlatency_metric: " << options.latency_metric << "\nlatency_join: " << options.latency_join
              << "\nevaluation_interval: (Prometheus' global)\n";
    for (const auto& p : options.params) {
      std::cout << p.key << ": "
                << (p.kind == rules::ParamKind::kDuration ? format_duration(static_cast<int64_t>(p.value))
                                                          : rules::promql_number(p.value))
                << "  # " << p.help << "\n";
    }
    return kExitOk;
  }
  if (!config.empty()) {
    // The whole file is validated, as serve and check-config do.
    auto loaded = load_config(config);
    if (!loaded) {
      std::cerr << "gpulens rules: " << loaded.status().message() << "\n";
      return loaded.status().code() == Code::kNotFound ? kExitFailure : kExitUsage;
    }
    options = loaded->rules;
  }
  for (const auto& kv : sets) {
    const size_t eq = kv.find('=');
    Status s = eq == std::string::npos ? invalid_argument("--set " + kv + ": expected KEY=VALUE")
                                       : options.set(kv.substr(0, eq), kv.substr(eq + 1));
    if (!s) {
      std::cerr << "gpulens rules: " << s.message() << "\n";
      return kExitUsage;
    }
  }

  const auto names = dcgm ? rules::Names::kDcgm : rules::Names::kNative;
  auto groups = rules::build_rules(options, names);
  std::string head;
  if (!profile_name.empty() || !collectors.empty()) {
    if (!profile_name.empty() && !collectors.empty()) {
      std::cerr << "gpulens rules: --profile and --collectors are exclusive\n";
      return kExitUsage;
    }
    auto sel = collectors.empty() ? profile(profile_name) : load_collectors(collectors);
    if (!sel) {
      std::cerr << "gpulens rules: " << sel.status().message() << "\n";
      return sel.status().code() == Code::kNotFound ? kExitFailure : kExitUsage;
    }
    const auto left = rules::apply_selection(groups, *sel, names);
    const auto causes = rules::unassessed_causes(*sel);
    const std::string what = collectors.empty() ? "profile " + profile_name : collectors;
    head = rules::left_out_comment(left, causes, what);
    for (const auto& l : left) std::cerr << "gpulens rules: " << what << ": left out " << l.rule << " (needs " << l.needs << ")\n";
    for (const auto& c : causes) std::cerr << "gpulens rules: " << what << ": not assessed: " << c.cause << ": " << c.reason << "\n";
  }
  const std::string text = head + rules::render(groups,
                                                format == "prometheus-rule" ? rules::Format::kPrometheusRule
                                                                            : rules::Format::kRuleFile,
                                                names);
  if (output.empty()) {
    std::cout << text;
    return kExitOk;
  }
  std::ofstream out(output);
  out << text;
  if (!out.flush()) {
    std::cerr << "gpulens rules: cannot write " << output << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace gpulens::cli
