// Text and JSON rendering of an NCCL Report (see render.h).
#include "analyze/nccl/render.h"

#include <cstdio>

#include "util/json.h"
#include "util/terminal_text.h"

namespace gpulens::nccl {
namespace {

using gpulens::json_string;

template <typename T>
std::string opt(const std::optional<T>& v) {
  if (!v) return "null";
  if constexpr (std::is_same_v<T, std::string>) {
    return json_string(*v);
  } else {
    return std::to_string(*v);
  }
}

std::string list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_string(v[i]);
  return out + "]";
}

std::string events(const std::vector<Event>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    out += (i ? ", " : "");
    out += "{\"kind\": " + json_string(v[i].kind) + ", \"count\": " + std::to_string(v[i].count) +
           ", \"first\": " + json_string(v[i].first) + "}";
  }
  return out + "]";
}

std::string or_unknown(const std::optional<int>& v) { return v ? std::to_string(*v) : "unknown"; }

std::string joined(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

}  // namespace


std::string render_json(const Report& r) {
  std::string o = "{\n";
  auto field = [&](const char* name, const std::string& value, bool last = false) {
    o += "  \"";
    o += name;
    o += "\": " + value + (last ? "\n" : ",\n");
  };
  field("nccl_version", opt(r.nccl_version));
  field("nccl_versions", list(r.nccl_versions));
  field("ranks", opt(r.ranks));
  field("nodes", opt(r.nodes));
  field("hosts", list(r.hosts));
  field("processes", std::to_string(r.processes));
  auto from = [](const std::string& f) { return f.empty() ? std::string("null") : json_string(f); };
  field("counts_from", "{\"ranks\": " + from(r.ranks_from) + ", \"nodes\": " + from(r.nodes_from) +
                           ", \"processes\": " + from(r.processes_from) + "}");
  field("inter_node_transport", json_string(r.inter_node_transport));
  std::string by_node = "{";
  for (const auto& [node, t] : r.transport_by_node) {
    by_node += (by_node.size() > 1 ? ", " : "") + json_string(node) + ": " + json_string(t);
  }
  field("transport_by_node", by_node + "}");
  field("gdr", json_string(r.gdr));
  field("intra_node", list(r.intra_node));
  field("channels", opt(r.channels));
  field("coll_channels", opt(r.coll_channels));
  field("nvls_channels", opt(r.nvls_channels));
  field("collnet_channels", opt(r.collnet_channels));
  field("p2p_channels", opt(r.p2p_channels));
  field("trees", opt(r.trees));
  field("nvls", r.nvls ? "true" : "false");
  field("collnet", r.collnet ? "true" : "false");
  field("net_plugins", list(r.net_plugins));
  field("net_devices", list(r.net_devices));
  std::string env = "{";
  for (const auto& [k, v] : r.environment) env += (env.size() > 1 ? ", " : "") + json_string(k) + ": " + json_string(v);
  field("environment", env + "}");
  field("error_class", json_string(r.error_class));
  field("error", opt(r.error));
  field("errors", events(r.errors));
  field("warnings", events(r.warnings));
  std::string f = "[";
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const Finding& x = r.findings[i];
    f += i ? ",\n    " : "\n    ";
    f += "{\"cause\": " + json_string(x.cause) + ", \"check\": " + json_string(x.check) +
         ", \"severity\": " + json_string(x.severity) + ", \"summary\": " + json_string(x.summary) +
         ", \"evidence\": " + list(x.evidence) + ", \"action\": " + json_string(x.action) + "}";
  }
  field("findings", f + (r.findings.empty() ? "]" : "\n  ]"));
  const InputStats& in = r.input;
  field("input",
        "{\"files\": " + std::to_string(in.files) + ", \"bytes\": " + std::to_string(in.bytes) +
            ", \"lines\": " + std::to_string(in.lines) + ", \"nccl_lines\": " + std::to_string(in.nccl_lines) +
            ", \"binary_lines_skipped\": " + std::to_string(in.binary_lines) +
            ", \"overlong_lines_cut\": " + std::to_string(in.overlong_lines) +
            ", \"unparsed_channel_lines\": " + std::to_string(in.unparsed_channel_lines) +
            ", \"connections_not_tracked\": " + std::to_string(in.dropped_edges) + "}",
        true);
  return o + "}\n";
}

std::string render_text(const Report& r, bool color) {
  auto paint = [&](const std::string& s, const char* code) {
    return color ? std::string("\033[") + code + "m" + s + "\033[0m" : s;
  };
  std::string o;
  auto row = [&](const char* name, const std::string& value) {
    o += "  ";
    o += name;
    o += std::string(22 - std::min<size_t>(21, std::char_traits<char>::length(name)), ' ') + value + "\n";
  };
  o += paint("NCCL log analysis", "1") + "\n";
  row("NCCL version", r.nccl_versions.empty() ? "unknown" : joined(r.nccl_versions));
  row("ranks", or_unknown(r.ranks));
  std::string nodes = or_unknown(r.nodes);
  if (!r.hosts.empty()) {
    std::vector<std::string> shown(r.hosts.begin(), r.hosts.begin() + std::min<size_t>(8, r.hosts.size()));
    nodes += "  (hosts: " + joined(shown) + (r.hosts.size() > 8 ? ", ..." : "") + ")";
  }
  row("nodes", nodes);
  row("processes", std::to_string(r.processes));
  std::string transport = r.inter_node_transport;
  if (transport == "Socket" || transport.starts_with("mixed:")) transport = paint(transport, "31;1");
  row("inter-node transport", transport);
  if (r.transport_by_node.size() > 1 && r.inter_node_transport.starts_with("mixed:")) {
    for (const auto& [node, t] : r.transport_by_node) row("", node + ": " + t);
  }
  row("GPUDirect RDMA", r.gdr);
  row("intra-node paths", r.intra_node.empty() ? "none seen" : joined(r.intra_node));
  std::string ch = or_unknown(r.channels);
  if (r.coll_channels) ch += "  (coll " + std::to_string(*r.coll_channels) + ")";
  if (r.nvls_channels) ch += "  (nvls " + std::to_string(*r.nvls_channels) + ")";
  row("channels", ch);
  if (r.trees) row("trees", std::to_string(*r.trees));
  row("NVLS / CollNet", std::string(r.nvls ? "NVLS in use" : "no NVLS") + ", " +
                            (r.collnet ? "CollNet in use" : "no CollNet"));
  if (!r.net_plugins.empty()) row("net plugins", joined(r.net_plugins));
  if (!r.net_devices.empty()) {
    std::vector<std::string> shown(r.net_devices.begin(),
                                   r.net_devices.begin() + std::min<size_t>(8, r.net_devices.size()));
    row("net devices", joined(shown) + (r.net_devices.size() > 8 ? ", ..." : ""));
  }
  for (const auto& [k, v] : r.environment) row(k == r.environment.begin()->first ? "environment" : "", k + "=" + v);
  row("error class", r.error_class == "none" ? "none" : paint(r.error_class, "31;1"));
  if (r.error) row("error", *r.error);
  for (const auto& w : r.warnings) row(&w == &r.warnings.front() ? "warnings" : "", w.kind + " (" + std::to_string(w.count) + "x): " + w.first);

  o += "\n" + paint("Findings", "1") + "\n";
  if (r.findings.empty()) o += "  none: nothing in this log points at a communication problem\n";
  for (const auto& f : r.findings) {
    const char* code = f.severity == "critical" ? "31;1" : f.severity == "warning" ? "33" : "36";
    o += "  " + paint(f.severity, code) + "  " + f.summary + "  [" + f.cause + "/" + f.check + "]\n";
    for (const auto& e : f.evidence) o += "      evidence: " + e + "\n";
    o += "      action:   " + f.action + "\n";
  }
  const InputStats& in = r.input;
  o += "\n  read " + std::to_string(in.lines) + " lines (" + std::to_string(in.nccl_lines) + " with NCCL information)";
  if (in.binary_lines) o += ", skipped " + std::to_string(in.binary_lines) + " binary lines";
  if (in.overlong_lines) o += ", cut " + std::to_string(in.overlong_lines) + " overlong lines";
  if (in.unparsed_channel_lines) o += ", " + std::to_string(in.unparsed_channel_lines) + " damaged channel lines ignored";
  if (in.dropped_edges) o += ", " + std::to_string(in.dropped_edges) + " connections beyond the tracking cap";
  return terminal_safe(o + "\n", kTerminalLayout);  // log text from outside: no escapes
}

}  // namespace gpulens::nccl
