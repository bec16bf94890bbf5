// Line handlers of the NCCL Analyzer: each recognised message updates State.
// The summary that turns State into a Report is in summarize.cpp.
#include "analyze/nccl/analyzer.h"

#include <algorithm>

#include "analyze/nccl/analyzer_state.h"
#include "analyze/nccl/text.h"

namespace gpulens::nccl {
namespace {

using S = Analyzer;

// "2.19.3+cuda11.5" from the text after "NCCL version "; empty if not a version.
std::string_view version_token(std::string_view s) {
  size_t e = 0;
  while (e < s.size() && !is_space(s[e]) && s[e] != ',' && s[e] != ';' && s[e] != ')') ++e;
  std::string_view v = s.substr(0, e);
  if (v.empty() || !is_digit(v[0]) || v.find('.') == std::string_view::npos || v.size() > 40) {
    return {};
  }
  return v;
}

// "misc/socket.cc:535 -> 6 [Async thread]": the ncclResult_t code, if this is
// an error-propagation line.
std::optional<int> propagation_code(std::string_view msg) {
  size_t sp = msg.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  std::string_view where = msg.substr(0, sp);
  size_t colon = where.rfind(':');
  if (colon == std::string_view::npos || !all_digits(where.substr(colon + 1)) ||
      where.find('.') == std::string_view::npos) {
    return std::nullopt;
  }
  std::string_view rest = msg.substr(sp);
  if (!rest.starts_with(" -> ")) return std::nullopt;
  rest.remove_prefix(4);
  auto code = take_number(rest, 100);
  if (!code) return std::nullopt;
  return static_cast<int>(*code);
}

}  // namespace

Analyzer::Analyzer() : s_(std::make_unique<State>()) {
  s_->procs.push_back(Proc{});  // process 0: lines without a host prefix
}

Analyzer::~Analyzer() = default;

namespace {

struct Handler {
  Analyzer::State& s;
  InputStats& stats;

  std::uint32_t proc_for(std::string_view host, std::int64_t pid) {
    if (host.empty() || pid < 0) return 0;
    if (pid == s.last_pid && host == s.last_host) return s.last_proc;
    s.key.assign(host);
    s.key.push_back('\x1f');
    s.key.append(std::to_string(pid));
    auto it = s.proc_index.find(s.key);
    std::uint32_t id = 0;
    if (it != s.proc_index.end()) {
      id = it->second;
    } else if (s.procs.size() < Analyzer::kMaxProcs) {
      id = static_cast<std::uint32_t>(s.procs.size());
      Proc p;
      p.host = std::string(host);
      p.pid = pid;
      s.procs.push_back(std::move(p));
      s.proc_index.emplace(s.key, id);
    }
    s.last_host.assign(host);
    s.last_pid = pid;
    s.last_proc = id;
    return id;
  }

  void rank_seen(int rank, const char* from) {
    if (rank > s.max_rank) {
      s.max_rank = rank;
      s.max_rank_from = from;
    }
  }

  void rank_local(int rank, std::uint32_t proc, const char* from) {
    rank_seen(rank, from);
    if (proc != 0) s.rank_proc.try_emplace(rank, proc);
  }

  void version(std::string_view text, std::uint32_t proc) {
    std::string_view v = version_token(text);
    if (v.empty()) return;
    if (!s.first_version) s.first_version = std::string(v);
    add_distinct(s.versions, v, 16);
    if (proc != 0 && !s.procs[proc].version) s.procs[proc].version = std::string(v);
  }

  void channel(std::string_view msg, std::uint32_t proc) {
    ChannelLine c;
    if (!parse_channel(msg, c)) {
      ++stats.unparsed_channel_lines;
      return;
    }
    rank_seen(c.max_rank, c.kind == ChannelKind::kListing ? "ring_listing" : "connection_lines");
    if (c.kind == ChannelKind::kListing) {
      if (c.total > 0) {
        s.listing_total = std::max(s.listing_total, c.total);
      } else {
        s.conn_channel_max = std::max(s.conn_channel_max, c.index);
        if (c.index == 0) s.channel0_seen = true;
      }
      return;
    }
    if (c.kind == ChannelKind::kGraphRing) {
      s.graph_ring_max = std::max(s.graph_ring_max, c.index);
      return;
    }
    s.conn_channel_max = std::max(s.conn_channel_max, c.index);
    if (c.index == 0) s.channel0_seen = true;

    NetPath net;
    bool is_net = parse_net_path(c.via, net);
    std::string_view text = is_net ? c.via.substr(0, 4 + net.name.size()) : short_path(c.via);
    std::uint32_t path = 0;
    while (path < s.paths.size() && s.paths[path].text != text) ++path;
    if (path == s.paths.size()) {
      if (s.paths.size() >= 256) return;
      s.paths.push_back(PathInfo{std::string(text), is_net, std::string(net.name)});
    }
    if (is_net) {
      if (net.name == "Socket" && s.evidence_socket.size() < 2) {
        s.evidence_socket.emplace_back(msg.substr(0, 200));
      } else if (net.name != "Socket" && !net.gdr && s.evidence_no_gdr.size() < 2) {
        s.evidence_no_gdr.emplace_back(msg.substr(0, 200));
      }
      if (c.dir == Dir::kSend) rank_local(c.src, proc, "connection_lines");
      if (c.dir == Dir::kReceive) rank_local(c.dst, proc, "connection_lines");
    } else {
      rank_local(c.src, proc, "connection_lines");
      rank_local(c.dst, proc, "connection_lines");
    }
    EdgeKey key{proc, path, c.src, c.dst};
    auto it = s.edges.find(key);
    if (it == s.edges.end()) {
      if (s.edges.size() >= Analyzer::kMaxEdges) {
        ++stats.dropped_edges;
        return;
      }
      it = s.edges.emplace(key, EdgeInfo{c.dir, net.dev, net.gdr}).first;
    }
    it->second.gdr = it->second.gdr || net.gdr;
  }

  void ib_devices(std::string_view list, std::uint32_t proc) {
    // "[0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:192.168.11.1<0>"
    size_t end = std::min(list.find(';'), list.find("OOB"));
    list = list.substr(0, end);
    Proc& p = s.procs[proc];
    while (!(list = trim_left(list)).empty()) {
      size_t sp = list.find(' ');
      std::string_view tok = list.substr(0, sp);
      list = sp == std::string_view::npos ? std::string_view{} : list.substr(sp);
      if (tok.size() < 4 || tok[0] != '[' || !is_digit(tok[1])) continue;
      std::string_view body = tok.substr(1);
      auto idx = take_number(body, 4096);
      if (!idx || body.empty() || body[0] != ']') continue;
      body.remove_prefix(1);
      char ll = contains(body, "/RoCE") ? 'R' : contains(body, "/IB") ? 'I' : '?';
      if (p.ib_link.size() <= static_cast<size_t>(*idx)) p.ib_link.resize(*idx + 1, '?');
      p.ib_link[*idx] = ll;
      add_distinct(s.devices, body);
    }
  }

  void socket_devices(std::string_view list, std::uint32_t proc) {
    // "[0]ens5:172.31.0.63<0> [1]virbr0:<0>"
    if (!trim_left(list).starts_with("[")) return;
    s.procs[proc].socket_listed = true;
    while (!(list = trim_left(list)).empty()) {
      size_t sp = list.find(' ');
      std::string_view tok = list.substr(0, sp);
      list = sp == std::string_view::npos ? std::string_view{} : list.substr(sp);
      size_t close = tok.find(']');
      size_t colon = tok.find(':');
      if (close == std::string_view::npos || colon == std::string_view::npos || colon < close) continue;
      add_distinct(s.devices, std::string(tok.substr(close + 1, colon - close - 1)) + " (socket)");
    }
  }

  void selected(std::string_view name, std::uint32_t proc) {
    name = trim(name);
    if (name.empty() || name.size() > 64) return;
    add_distinct(s.procs[proc].selected, name, 8);
    if (name != "IB" && name != "Socket") add_distinct(s.plugins, name, 16);
  }

  void environment(std::string_view msg, std::string_view line) {
    size_t p = msg.find(" set by environment to ");
    if (p == std::string_view::npos || s.env.size() >= 256) return;
    std::string_view name = trim(msg.substr(0, p));
    std::string_view value = trim(msg.substr(p + 23));
    if (value.ends_with('.')) value.remove_suffix(1);
    s.env[std::string(name.substr(0, 64))] = std::string(value.substr(0, 200));
    if (name == "NCCL_IB_DISABLE" && value != "0") note(s.warnings, "ib_disabled_by_env", line);
    if (name == "NCCL_P2P_DISABLE" && value != "0") note(s.warnings, "p2p_disabled_by_env", line);
    if (name == "NCCL_SHM_DISABLE" && value != "0") note(s.warnings, "shm_disabled_by_env", line);
    if (name == "NCCL_P2P_LEVEL" && (value == "LOC" || value == "0")) {
      note(s.warnings, "p2p_disabled_by_env", line);
    }
    if (name == "NCCL_NET_GDR_LEVEL" && (value == "LOC" || value == "0")) {
      note(s.warnings, "gdr_disabled_by_env", line);
    }
  }

  void comm(std::string_view msg, std::uint32_t proc) {
    auto nranks = after_number(msg, "nranks ");
    if (!nranks) nranks = after_number(msg, "nRanks ");
    auto rank = msg.starts_with("rank ") ? after_number(msg, "rank ") : after_number(msg, " rank ");
    if (!nranks || !rank || *nranks <= 0 || *nranks > (1 << 24)) return;
    s.nranks = std::max(s.nranks.value_or(0), static_cast<int>(*nranks));
    rank_local(static_cast<int>(*rank), proc, "rank_lines");
    if (auto nodes = after_number(msg, "nNodes "); nodes && *nodes > 0) {
      s.nnodes = std::max(s.nnodes.value_or(0), static_cast<int>(*nodes));
    }
  }

  void channel_summary(std::string_view msg) {
    // "16 coll channels, 0 collnet channels, 16 nvls channels, 16 p2p channels, ..."
    auto count_before = [&](std::string_view what) -> std::optional<int> {
      size_t p = msg.find(what);
      if (p == std::string_view::npos) return std::nullopt;
      size_t b = p;
      while (b > 0 && is_digit(msg[b - 1])) --b;
      std::string_view d = msg.substr(b, p - b);
      auto n = take_number(d, 1 << 16);
      if (!n) return std::nullopt;
      return static_cast<int>(*n);
    };
    auto keep_max = [](std::optional<int>& into, std::optional<int> v) {
      if (v) into = std::max(into.value_or(0), *v);
    };
    keep_max(s.coll_channels, count_before(" coll channels"));
    keep_max(s.collnet_channels, count_before(" collnet channels"));
    keep_max(s.nvls_channels, count_before(" nvls channels"));
    keep_max(s.p2p_channels, count_before(" p2p channels,"));
    if (s.nvls_channels.value_or(0) > 0) s.nvls = true;
    if (s.collnet_channels.value_or(0) > 0) s.collnet = true;
  }

  void trees(std::string_view msg) {
    // "Trees [0] 1/-1/-1->0->-1 [1] ..." (one bracket per channel)
    int max_index = -1;
    size_t p = 0;
    while ((p = msg.find('[', p)) != std::string_view::npos) {
      std::string_view d = msg.substr(p + 1);
      auto n = take_number(d, 1 << 16);
      if (n && !d.empty() && d[0] == ']') {
        max_index = std::max(max_index, static_cast<int>(*n));
        // "c1/c2/c3->rank->parent": every rank of the entry (-1: none).
        d.remove_prefix(1);
        d = trim_left(d);
        d = d.substr(0, d.find(' '));
        while (!d.empty()) {
          const size_t skip = d.find_first_of("0123456789-");
          if (skip == std::string_view::npos) break;
          d.remove_prefix(skip);
          const bool negative = d[0] == '-' && (d.size() < 2 || d[1] != '>');
          if (d[0] == '-') d.remove_prefix(1);
          auto rank = take_number(d, 1 << 24);
          if (!rank) {  // no digits, or too large: step past them
            d.remove_prefix(std::min(d.size(), std::max<size_t>(1, d.find_first_not_of("0123456789"))));
            continue;
          }
          if (!negative) rank_seen(static_cast<int>(*rank), "tree_listing");
        }
      }
      ++p;
    }
    s.trees = std::max(s.trees, max_index + 1);
  }

  void warn(std::string_view msg, std::string_view where, std::string_view line) {
    auto error = [&](const char* cls) { note(s.errors, cls, msg); };
    if (contains(msg, "Got completion")) {
      error("ib_completion_error");
    } else if (contains(msg, "ibv_") || (contains(msg, "NET/IB") && contains(msg, "failed"))) {
      error("ib_setup_error");
    } else if (contains(msg, "NET/OFI") || contains(where, "ofi")) {
      error("plugin_error");
    } else if (contains(msg, "Cuda failure") || contains(msg, "CUDA error") ||
               contains(msg, "Cuda error")) {
      error("cuda_error");
    } else if (contains(msg, "socket") || contains(msg, "Socket") || msg.starts_with("Net : ") ||
               contains(where, "socket")) {
      if (!s.socket_warn) s.socket_warn_line = std::string(msg.substr(0, 400));
      s.socket_warn = true;
      if (contains(msg, "wrong type")) note(s.warnings, "transport_mismatch", line);
    } else if (contains(msg, "Failed to execute operation") || contains(msg, "Error encountered")) {
      note(s.warnings, "proxy_failure", msg);
    } else {
      note(s.warnings, "warn", msg);
    }
  }

  // Handles an NCCL message; returns false when it carries nothing we use.
  bool message(std::string_view msg, std::uint32_t proc, Level level, std::string_view where) {
    if (level == Level::kWarn) {
      warn(msg, where, msg);
      return true;
    }
    if (msg.empty()) return false;
    switch (msg[0]) {
      case 'C':
        if (msg.starts_with("Channel ")) return channel(msg, proc), true;
        if (msg.starts_with("Connected NVLS")) return s.nvls = true;
        if (msg.starts_with("Connected CollNet") || msg.starts_with("CollNet ")) {
          return s.collnet = true;
        }
        break;
      case 'R':
        if (msg.starts_with("Ring ")) return channel(msg, proc), true;
        break;
      case 'T':
        if (msg.starts_with("Trees ")) return trees(msg), true;
        break;
      case 'U':
        if (msg.starts_with("Using network ")) return selected(msg.substr(14), proc), true;
        if (msg.starts_with("Using internal Network ")) return selected(msg.substr(23), proc), true;
        break;
      case 'A':
        if (msg.starts_with("Assigned NET plugin ")) {
          std::string_view n = msg.substr(20);
          return selected(n.substr(0, n.find(" to comm")), proc), true;
        }
        break;
      case 'N':
        if (msg.starts_with("NCCL version ")) return version(msg.substr(13), proc), true;
        if (msg.starts_with("NET/IB : ") || msg.starts_with("NET/IB: ")) {
          std::string_view r = msg.substr(msg.find(':') + 2);
          if (r.starts_with("Using [") || r.starts_with("Using ;")) return ib_devices(r.substr(6), proc), true;
          if (r.starts_with("No device found")) {
            s.procs[proc].no_ib_device = true;
            return note(s.warnings, "no_ib_device", msg), true;
          }
          if (r.starts_with("GPU Direct RDMA Disabled")) {
            add_distinct(s.gdr_disabled_lines, msg, 4);
            return note(s.warnings, "gdr_disabled", msg), true;
          }
          return true;
        }
        if (msg.starts_with("NET/Socket : Using ")) return socket_devices(msg.substr(19), proc), true;
        if (msg.starts_with("NET/OFI ")) {
          // aws-ofi-nccl answers NCCL's property query for a device it has no
          // NIC data for with an error that NCCL prints as the call chain
          // "include/net.h:24 -> 2" and then handles: not a system error.
          if (contains(msg, "No NIC info")) {
            s.procs[proc].nic_info_probe = true;
            note(s.warnings, "no_nic_info", msg);
          }
          return s.procs[proc].ofi = true;
        }
        if (msg.starts_with("NET/Plugin")) {
          if (auto p = msg.find("Loaded net plugin "); p != std::string_view::npos) {
            add_distinct(s.plugins, trim(msg.substr(p + 18)), 16);
          }
          return true;
        }
        if (msg.starts_with("NCCL_")) return environment(msg, msg), true;
        if (msg.starts_with("NVLS comm")) return s.nvls = true;
        break;
      case 'P':
        if (msg.starts_with("P2P plugin ")) return add_distinct(s.plugins, trim(msg.substr(11)), 16), true;
        break;
      case 'c':
        if (msg.starts_with("comm 0x")) return comm(msg, proc), true;
        break;
      case 'n':
        if (msg.starts_with("ncclCommInitRank")) return comm(msg, proc), true;
        break;
      case 'r':
        if (msg.starts_with("rank ")) return comm(msg, proc), true;
        break;
      case 'F':
        if (msg.starts_with("Failed to initialize NET plugin")) {
          return note(s.warnings, "net_plugin_init_failed", msg), true;
        }
        break;
      default:
        break;
    }
    if (is_digit(msg[0]) && contains(msg, " coll channels")) return channel_summary(msg), true;
    if (level == Level::kNone) return false;
    if (auto code = propagation_code(msg)) {
      if (s.procs[proc].nic_info_probe && msg.starts_with("include/net.h:")) {
        s.procs[proc].nic_info_probe = false;  // the probe's own return code, handled by NCCL
        return true;
      }
      if (!s.first_code) s.first_code = *code;
      ++s.codes[*code];
      if (msg.starts_with("transport/net_socket")) s.procs[proc].socket_code = true;
      if (msg.starts_with("transport/net_ib")) s.procs[proc].ib_code = true;
    }
    return true;
  }

  // nccl-tests: "#  Rank  1 Group  0 Pid   3417 on  manolinux device  1 [0x03] Quadro P2200"
  bool test_header(std::string_view line) {
    std::string_view l = trim_left(line.substr(1));
    if (!l.starts_with("Rank ")) return false;
    auto rank = after_number(l, "Rank ", 1 << 24);
    auto pid = after_number(l, "Pid ", INT64_MAX / 16);
    size_t on = l.find(" on ");
    if (!rank || !pid || on == std::string_view::npos) return false;
    std::string_view host = trim_left(l.substr(on + 4));
    host = host.substr(0, host.find(' '));
    if (host.empty()) return false;
    rank_local(static_cast<int>(*rank), proc_for(host, *pid), "rank_lines");
    return true;
  }

  // Lines without an NCCL marker: stripped prefixes, nccl-tests headers,
  // Python/PyTorch errors, raw libfabric warnings.
  bool bare(std::string_view line) {
    std::string_view t = trim(line);
    if (t.empty()) return false;
    if (t[0] == '#') return test_header(t);
    if (message(t, 0, Level::kNone, {})) return true;
    bool nccl = contains(t, "NCCL") || contains(t, "nccl");
    if (!nccl) {
      if (contains(t, "libfabric") && contains(t, "<warn>")) {
        note(s.warnings, "libfabric_warning", t.substr(t.find("libfabric")));
        return true;
      }
      return false;
    }
    bool hit = false;
    if (size_t p = t.find("NCCL version "); p != std::string_view::npos) {
      version(t.substr(p + 13), 0);
      hit = true;
    }
    auto error = [&](const char* cls) {
      note(s.errors, cls, t);
      hit = true;
    };
    if (contains(t, "Watchdog caught collective operation timeout")) error("timeout");
    if (contains(t, "unhandled system error") || contains(t, "ncclSystemError")) error("system_error");
    if (contains(t, "remote process exited or there was a network error") ||
        contains(t, "ncclRemoteError")) {
      error("remote_error");
    }
    if (contains(t, "unhandled cuda error") || contains(t, "ncclUnhandledCudaError")) error("cuda_error");
    if (contains(t, "NCCL failure") && contains(t, "internal error")) error("internal_error");
    return hit;
  }
};

}  // namespace

void Analyzer::feed(std::string_view line) {
  ++stats_.lines;
  Handler h{*s_, stats_};
  LogLine l;
  bool used = false;
  if (tokenizer_.next(line, l)) {
    std::uint32_t proc = h.proc_for(l.host, l.pid);
    h.message(l.message, proc, l.level, l.where);
    used = true;
  } else {
    used = h.bare(line);
  }
  if (used) ++stats_.nccl_lines;
}

std::string transport_label(std::string_view name, char link_layer) {
  if (name == "Socket") return "Socket";
  if (name == "IB") return link_layer == 'R' ? "RoCE" : "IB";
  if (name.starts_with("IBext")) return "Plugin:IBext";
  if (name.find("Libfabric") != std::string_view::npos || name.find("OFI") != std::string_view::npos) {
    return "Plugin:aws-ofi-nccl";
  }
  return "Plugin:" + std::string(name);
}

}  // namespace gpulens::nccl
