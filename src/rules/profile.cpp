// Leaving out the rules a field selection cannot feed.
#include "rules/profile.h"

#include <algorithm>
#include <map>
#include <set>

#include "diagnose/engine.h"
#include "diagnose/mapping.h"

namespace gpulens::rules {
namespace {

bool ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
}

// The first catalog or DCGM metric name in `expr` that is not exported.
std::string missing_in(const std::string& expr, const std::set<std::string, std::less<>>& exported) {
  size_t i = 0;
  while (i < expr.size()) {
    if (!ident_char(expr[i]) || (expr[i] >= '0' && expr[i] <= '9')) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < expr.size() && ident_char(expr[j])) ++j;
    const std::string_view tok(expr.data() + i, j - i);
    const bool metric = find_field(tok).has_value() || find_dcgm_row(tok) != nullptr ||
                        std::ranges::any_of(exporter_families(), [&](const auto& e) { return e.name == tok; });
    if (metric && !exported.contains(tok)) return std::string(tok);
    i = j;
  }
  return {};
}

}  // namespace

std::vector<LeftOut> apply_selection(std::vector<Group>& groups, const FieldSelection& selection, Names names) {
  // --dcgm-names exports the native names too.
  const auto list = exported_names(selection, true, names == Names::kDcgm);
  std::set<std::string, std::less<>> exported(list.begin(), list.end());
  // The dcgm variant reads dcgm-exporter's own DCGM_EXP_* families: there
  // whenever the selection collects the field they fill.
  if (names == Names::kDcgm) {
    for (const ExporterFamily& e : exporter_families()) {
      if (selection.fields.test(static_cast<size_t>(e.field))) exported.emplace(e.name);
    }
  }
  std::vector<LeftOut> left;
  for (Group& g : groups) {
    std::erase_if(g.rules, [&](const Rule& r) {
      std::string needs = missing_in(r.expr, exported);
      if (needs.empty()) return false;
      left.push_back({r.alert.empty() ? r.record : r.alert, std::move(needs)});
      return true;
    });
  }
  std::erase_if(groups, [](const Group& g) { return g.rules.empty(); });
  return left;
}

namespace {

// Not-assessed causes of a diagnosis over flat series of every field the
// selection collects, by catalog name, as the live diagnosis reads history.
std::map<std::string, std::string> not_assessed_with(const FieldSelection& selection) {
  using diagnose::LabelPair;
  diagnose::SignalSetBuilder b;
  diagnose::Series flat;
  for (int64_t t = 0; t <= 600'000; t += 1000) flat.push_back({t, 0.5});
  const LabelPair gpu_labels[] = {{"gpu", "0"}, {"gpu_uuid", "GPU-0"}, {"gpu_name", "NVIDIA H100 80GB HBM3"}, {"hostname", "h"}};
  for (const FieldDef& f : catalog()) {
    if (!selection.fields.test(static_cast<size_t>(f.id))) continue;
    if (f.type == MetricType::kHistogram) continue;  // serving: not a profile's business
    b.add(f.name, gpu_labels, flat, true);
  }
  std::map<std::string, std::string> out;
  const diagnose::Report r = diagnose::diagnose(b.build(), diagnose::Thresholds{});
  for (const auto& h : r.hosts) {
    for (const auto& g : h.gpus) {
      for (const auto& na : g.not_assessed) out.emplace(na.cause, na.reason);
    }
  }
  return out;
}

}  // namespace

std::vector<Unassessed> unassessed_causes(const FieldSelection& selection) {
  const auto all = not_assessed_with(*profile("full"));
  const auto sel = not_assessed_with(selection);
  std::vector<Unassessed> out;
  for (std::string_view cause : diagnose::cause_order()) {
    auto it = sel.find(std::string(cause));
    if (it != sel.end() && !all.contains(it->first)) out.push_back({it->first, it->second});
  }
  return out;
}

std::string left_out_comment(const std::vector<LeftOut>& left, const std::vector<Unassessed>& causes,
                             const std::string& selection_name) {
  std::string o;
  if (!left.empty()) {
    o += "# Left out under " + selection_name + " (a series they read is not collected):\n";
    for (const LeftOut& l : left) o += "#   " + l.rule + " (needs " + l.needs + ")\n";
  }
  if (!causes.empty()) {
    o += "# Diagnosis causes not assessed under " + selection_name + ":\n";
    for (const Unassessed& c : causes) o += "#   " + c.cause + ": " + c.reason + "\n";
  }
  return o;
}

}  // namespace gpulens::rules
