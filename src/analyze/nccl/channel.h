// Parser for NCCL's channel and ring lines, the main evidence for paths.
//
// Three shapes share the "Channel NN" / "Ring NN" start (line formats by version
// are in the project's reference notes):
//
//   connection  "Channel 03/0 : 8[0] -> 0[0] [send] via NET/Socket/3"   (2.7+)
//               "Ring 00 : 7 -> 8 [send] via NET/AWS Libfabric/0"       (2.4, bare ranks)
//   listing     "Channel 00/02 :    0   1"   (ring order; NN is the channel count)
//   graph ring  "Ring 00 : 7 -> 0 -> 1"      (GRAPH summary: never a transport)
//
//   ChannelLine c;
//   parse_channel("Channel 05/0 : 6[6] -> 5[5] via P2P/CUMEM", c);
//   // c.kind == kConnection, c.src == 6, c.dst == 5, c.via == "P2P/CUMEM"
#pragma once

#include <string_view>

namespace gpulens::nccl {

enum class ChannelKind { kConnection, kListing, kGraphRing };
enum class Dir { kNone, kSend, kReceive };

struct ChannelLine {
  ChannelKind kind = ChannelKind::kConnection;
  bool ring_word = false;  // the line starts with "Ring" (2.4 / GRAPH) rather than "Channel"
  int index = -1;          // channel or ring index
  int total = -1;          // listing only: NN of "Channel xx/NN :", -1 when absent
  int src = -1, dst = -1;  // connection: global ranks
  int max_rank = -1;       // highest rank named on the line
  Dir dir = Dir::kNone;
  std::string_view via;    // connection: text after "via ", e.g. "NET/IB/5/GDRDMA"
};

// Parses msg (an INFO message starting with "Channel " or "Ring "); false when
// the line has none of the three shapes, e.g. truncated in the middle.
bool parse_channel(std::string_view msg, ChannelLine& out);

// The pieces of a "NET/<name>/<dev>[(proxy)][/GDRDMA][/Shared]" path.
struct NetPath {
  std::string_view name;  // "IB", "Socket", "IBext_v8", "AWS Libfabric"
  int dev = -1;
  bool gdr = false;
};

// Splits a path that starts with "NET/"; false for other paths.
bool parse_net_path(std::string_view via, NetPath& out);

// The intra-node path as reported: "P2P/indirect/3[3]" becomes "P2P/indirect",
// other paths are kept as printed.
std::string_view short_path(std::string_view via);

}  // namespace gpulens::nccl
