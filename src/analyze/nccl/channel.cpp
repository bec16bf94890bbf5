// Channel/ring line parser (see channel.h).
#include "analyze/nccl/channel.h"

#include <algorithm>

#include "analyze/nccl/text.h"

namespace gpulens::nccl {
namespace {

constexpr std::int64_t kMaxRank = 1 << 24;

// "12[c7000]" or "12": the rank, skipping the bracketed device id.
bool take_rank(std::string_view& s, int& rank) {
  auto r = take_number(s, kMaxRank);
  if (!r) return false;
  rank = static_cast<int>(*r);
  if (!s.empty() && s.front() == '[') {
    size_t close = s.find(']');
    if (close == std::string_view::npos) return false;
    s.remove_prefix(close + 1);
  }
  return true;
}

bool take(std::string_view& s, std::string_view word) {
  std::string_view t = trim_left(s);
  if (!t.starts_with(word)) return false;
  s = t.substr(word.size());
  return true;
}

}  // namespace

bool parse_channel(std::string_view msg, ChannelLine& out) {
  ChannelLine c;
  std::string_view s = msg;
  if (take(s, "Channel ")) {
    c.ring_word = false;
  } else if (take(s, "Ring ")) {
    c.ring_word = true;
  } else {
    return false;
  }
  auto idx = take_number(s, 1 << 16);
  if (!idx) return false;
  c.index = static_cast<int>(*idx);
  int second = -1;
  if (!s.empty() && s.front() == '/') {
    s.remove_prefix(1);
    auto n = take_number(s, 1 << 16);
    if (!n) return false;
    second = static_cast<int>(*n);
  }
  if (!take(s, ":")) return false;
  s = trim_left(s);

  if (s.find("->") == std::string_view::npos) {
    // Listing: only ranks follow.
    c.kind = ChannelKind::kListing;
    c.total = second;
    int count = 0;
    while (!trim(s).empty()) {
      auto r = take_number(s, kMaxRank);
      if (!r) return false;
      c.max_rank = std::max(c.max_rank, static_cast<int>(*r));
      ++count;
    }
    if (count == 0) return false;
    out = c;
    return true;
  }

  if (!take_rank(s, c.src) || !take(s, "->")) return false;
  if (!take_rank(s, c.dst)) return false;
  c.max_rank = std::max(c.src, c.dst);
  if (take(s, "->")) {
    int next = -1;
    if (!take_rank(s, next)) return false;
    c.kind = ChannelKind::kGraphRing;
    c.max_rank = std::max(c.max_rank, next);
    out = c;
    return true;
  }
  if (take(s, "[send]")) {
    c.dir = Dir::kSend;
  } else if (take(s, "[receive]")) {
    c.dir = Dir::kReceive;
  }
  if (!take(s, "via ")) return false;
  c.via = trim(s);
  if (c.via.empty()) return false;
  c.kind = ChannelKind::kConnection;
  out = c;
  return true;
}

bool parse_net_path(std::string_view via, NetPath& out) {
  if (!via.starts_with("NET/")) return false;
  std::string_view rest = via.substr(4);
  size_t slash = rest.find('/');
  NetPath p;
  p.name = rest.substr(0, slash);
  if (p.name.empty()) return false;
  if (slash != std::string_view::npos) {
    std::string_view d = rest.substr(slash + 1);
    if (auto n = take_number(d, 1 << 16)) p.dev = static_cast<int>(*n);
    p.gdr = d.find("/GDRDMA") != std::string_view::npos;
  }
  out = p;
  return true;
}

std::string_view short_path(std::string_view via) {
  if (via.starts_with("P2P/indirect")) return via.substr(0, 12);
  return via;
}

}  // namespace gpulens::nccl
