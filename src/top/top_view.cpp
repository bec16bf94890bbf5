// Drawing `gpulens top`: columns sized from the width, bars and sparklines,
// the findings and processes below, clipped and scrolled to the height.
#include "top/top_view.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "diagnose/report_format.h"
#include "top/service_lines.h"
#include "util/duration.h"
#include "util/terminal_text.h"
#include "util/text_fit.h"

namespace gpulens::top {
namespace {

constexpr const char* kReset = "\033[0m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kDim = "\033[2m";
constexpr const char* kRed = "\033[31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kCyan = "\033[36m";
constexpr const char* kGreen = "\033[32m";
constexpr const char* kReverse = "\033[7m";

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// Whether the character starting at `i` belongs to a word (a number, a
// name): anything but a space, a box-drawing or a block character
// (U+2500..U+259F: separators, bars, sparklines), which may be cut anywhere.
bool word_char(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ') return false;
  if (c == 0xE2 && i + 1 < s.size()) {
    const auto d = static_cast<unsigned char>(s[i + 1]);
    if (d >= 0x94 && d <= 0x96) return false;
  }
  return true;
}

// One screen line: text added piece by piece, clipped at the width, each
// piece in its own style. A piece that does not fit is cut before the word
// it would split ("0.09 GPU-h lost" never becomes "0"), and the line is full.
class Line {
 public:
  Line(int width, bool colour) : width_(width), colour_(colour) {}
  // Every piece of text passes the terminal rule here, so a name or label
  // from the agent cannot carry an escape sequence onto the screen.
  Line& add(std::string_view text, const char* style = nullptr) {
    if (col_ >= width_ || text.empty()) return *this;
    const std::string safe = terminal_safe(text);
    const std::string_view s = safe;
    size_t end = 0;
    int cols = 0;
    std::vector<size_t> starts;  // where each character shown starts
    while (end < s.size() && cols < width_ - col_) {
      starts.push_back(end);
      ++end;
      while (end < s.size() && continuation(s[end])) ++end;
      ++cols;
    }
    const bool clipped = end < s.size();
    if (clipped && word_char(s, end)) {
      // Back to the start of the word the width cuts (words before this
      // piece were whole: a cut there is at a piece boundary).
      // Where the character before the cut ends a word already (a space),
      // the cut is at the word's start: `end` stays, and starts[cols] would
      // be one past the characters shown.
      while (cols > 0 && word_char(s, starts[static_cast<size_t>(cols - 1)])) --cols;
      if (static_cast<size_t>(cols) < starts.size()) end = starts[static_cast<size_t>(cols)];
    }
    const bool styled = colour_ && style && *style;
    if (styled) out_ += style;
    out_.append(s.substr(0, end));
    if (styled) out_ += kReset;
    col_ = clipped ? width_ : col_ + cols;
    return *this;
  }
  // `text` only if all of it fits; else nothing, and the line is full.
  Line& whole(std::string_view text, const char* style = nullptr) {
    if (width_of(text) > width_ - col_) {
      col_ = width_;
      return *this;
    }
    return add(text, style);
  }
  // Columns `text` takes, as add() counts them.
  static int width_of(std::string_view text) {
    int n = 0;
    for (char c : terminal_safe(text)) n += continuation(c) ? 0 : 1;
    return n;
  }
  // `s` clipped or padded to exactly `w` columns.
  Line& cell(std::string_view s, int w, const char* style = nullptr) {
    const int end = std::min(width_, col_ + w);
    Line clip(end - col_, false);
    clip.add(s);
    add(clip.out_, style);
    return to(end);
  }
  Line& to(int col) {
    if (col > col_) add(std::string(static_cast<size_t>(std::min(col, width_) - col_), ' '));
    return *this;
  }
  int col() const { return col_; }
  std::string str() const {
    std::string s = out_;
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
  }

 private:
  int width_, col_ = 0;
  bool colour_;
  std::string out_;
};

std::string fmt(const char* f, double v) {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string pct(double v) { return std::isnan(v) ? "-" : fmt("%.0f%%", v * 100); }

std::string right(std::string s, size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }

// A bar of `n` cells filled to `f` (0..1); eighths at the edge in Unicode.
std::string bar(double f, int n, bool unicode) {
  if (n <= 0) return "";
  static const char* const kEighths[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  std::string out;
  if (std::isnan(f)) {
    for (int i = 0; i < n; ++i) out += unicode ? " " : " ";
    return out;
  }
  const int eighths = static_cast<int>(std::lround(std::clamp(f, 0.0, 1.0) * n * 8));
  int cells = 0;
  for (; cells < eighths / 8; ++cells) out += unicode ? "█" : "#";
  if (cells < n && eighths % 8) {
    out += unicode ? kEighths[eighths % 8] : (eighths % 8 >= 4 ? "#" : ".");
    ++cells;
  }
  for (; cells < n; ++cells) out += unicode ? "░" : ".";
  return out;
}

// The last `n` values as a sparkline over [lo, hi]; blank where unknown.
std::string spark(const std::vector<double>& v, int n, double lo, double hi, bool unicode) {
  static const char* const kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  static const char kAscii[] = "_.-:=+*#";
  std::string out;
  const int have = static_cast<int>(v.size());
  for (int i = 0; i < n; ++i) {
    const int k = have - n + i;
    if (k < 0 || std::isnan(v[static_cast<size_t>(k)])) {
      out += ' ';
      continue;
    }
    const double f = std::clamp((v[static_cast<size_t>(k)] - lo) / (hi - lo), 0.0, 1.0);
    const int level = std::min(7, static_cast<int>(f * 8));
    if (unicode) out += kBlocks[level];
    else out += kAscii[level];
  }
  return out;
}

std::string clock_of(int64_t ms) {
  const std::string t = format_rfc3339(ms);  // 2026-12-01T12:35:22Z
  return t.size() >= 19 ? t.substr(11, 8) : t;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string gib(double bytes) {
  if (std::isnan(bytes)) return "-";
  const double g = bytes / (1 << 30);
  return g >= 10 ? fmt("%.0fG", g) : fmt("%.1fG", g);
}

// The clock-event reasons that cut clocks now ("sw_thermal,hw_slowdown").
std::string throttled(const TopGpu& g) {
  std::string out;
  for (const NodeSeries& s : g.series) {
    if (s.name != "gpu_clock_event_active" || s.value <= 0) continue;
    const std::string_view reason = s.labels.get("reason");
    if (reason.empty() || reason == "gpu_idle" || reason == "applications_clocks" || reason == "display_clocks") continue;
    out += (out.empty() ? "" : ",") + std::string(reason);
  }
  return out;
}

struct Columns {
  int name, layer, bar;  // widths
  int x_compute, x_memory, x_io, x_health;
};

// Narrower than the layers' bars need, the bars go first (a layer is then
// its values alone, 11 columns); narrower still, the layers that do not fit
// whole are left out from the right: HEALTH, then IO, then MEMORY.
Columns columns_for(int width) {
  Columns c{};
  c.name = std::clamp(width / 8, 8, 20);
  const int health = std::clamp(width / 5, 16, 30);
  c.layer = std::max(11, (width - 4 - c.name - 1 - health) / 3);
  c.bar = c.layer - 11;  // " 100%" value column and the "│ " separator
  if (c.bar < 3) c.bar = 0;
  c.x_compute = 4 + c.name + 1;
  c.x_memory = c.x_compute + c.layer;
  c.x_io = c.x_memory + c.layer;
  c.x_health = c.x_io + c.layer;
  return c;
}

// The shortest health text shown: "65°C 350W ok".
constexpr int kHealthMin = 12;

// At most `w` columns of a GPU's name, cut between words ("A100-SXM4-80GB"
// at 8: "A100"), never inside one ("80GB" does not become "80G").
std::string short_name(const std::string& name, int w) {
  if (static_cast<int>(name.size()) <= w) return name;
  size_t cut = static_cast<size_t>(std::max(0, w));
  while (cut > 0 && name[cut] != ' ' && name[cut] != '-') --cut;
  return name.substr(0, cut);
}

// The GPU's line (`true`), or its LOST line (`false`: no history under it).
bool gpu_line(const TopGpu& g, const Columns& c, const ViewOptions& o, std::vector<std::string>& out) {
  const char* sep = o.unicode ? "│ " : "| ";
  Line l(o.width, o.colour);
  auto done = [&](const Line& line) {
    out.push_back(line.str());
    return true;
  };
  l.add(right(g.index, 3), kBold).add(" ");
  std::string name = g.name;
  if (name.starts_with("NVIDIA ")) name = name.substr(7);
  l.add(short_name(name, c.name)).to(c.x_compute);
  if (g.get("gpu_up") == 0) {
    char xid[48] = "";
    if (!std::isnan(g.get("gpu_last_xid"))) std::snprintf(xid, sizeof xid, " (XID %.0f)", g.get("gpu_last_xid"));
    l.add("LOST: not answering", kRed).whole(xid, kRed);
    if (!g.job.empty()) l.whole("  job " + g.job, kDim);
    out.push_back(l.str());
    return false;
  }
  // Compute: SM active (the coarse utilisation where it is absent).
  double sm = g.get("gpu_sm_active_ratio");
  const bool coarse = std::isnan(sm);
  if (coarse) sm = g.get("gpu_utilization_ratio");
  l.add(bar(sm, c.bar, o.unicode), kGreen).cell(right(pct(sm), 5) + (coarse ? "*" : " "), c.x_memory - 2 - l.col());
  l.add(sep, kDim);
  if (c.x_io > o.width) return done(l);
  // Memory: framebuffer used of total.
  const double used = g.get("gpu_memory_used_bytes"), total = g.get("gpu_memory_total_bytes");
  const double fill = total > 0 ? used / total : std::nan("");
  std::string mem = std::isnan(fill) ? "-" : fmt("%.0f", used / (1 << 30)) + "/" + fmt("%.0fG", total / (1 << 30));
  l.add(bar(fill, c.bar - 2, o.unicode), fill >= 0.95 ? kRed : kCyan).cell(right(mem, 8), c.x_io - 2 - l.col());
  l.add(sep, kDim);
  if (c.x_health > o.width) return done(l);
  // IO: the busier PCIe direction, of the link's measured or nominal peak.
  const double rx = g.get("gpu_pcie_rx_bandwidth_util_ratio"), tx = g.get("gpu_pcie_tx_bandwidth_util_ratio");
  const double io = std::isnan(rx) ? tx : std::isnan(tx) ? rx : std::max(rx, tx);
  l.add(bar(io, c.bar, o.unicode), io >= 0.8 ? kYellow : kCyan).cell(right(pct(io), 5), c.x_health - 2 - l.col());
  l.add(sep, kDim);
  if (c.x_health + kHealthMin > o.width) return done(l);
  // Health: temperature, power, clock events.
  const double temp = g.get("gpu_temperature_celsius"), power = g.get("gpu_power_watts");
  if (!std::isnan(temp)) l.add(fmt(o.unicode ? "%.0f°C" : "%.0fC", temp), temp > 80 ? kRed : nullptr).add(" ");
  if (!std::isnan(power)) l.add(fmt("%.0fW", power)).add(" ");
  const std::string events = throttled(g);
  l.add(events.empty() ? "ok" : events, events.empty() ? kDim : kRed);
  if (!g.job.empty()) l.whole("  job " + g.job, kDim);
  return done(l);
}

void history_line(const TopGpu& g, const Columns& c, const ViewOptions& o, std::vector<std::string>& out) {
  const char* sep = o.unicode ? "│ " : "| ";
  const double temp = g.get("gpu_temperature_celsius");
  Line h(o.width, o.colour);
  auto done = [&] { out.push_back(h.str()); };
  h.to(c.x_compute);
  h.add(spark(g.history[kCompute], c.bar, 0, 1, o.unicode), kGreen);
  h.cell(right("u" + pct(g.get("gpu_utilization_ratio")), 6), c.x_memory - 2 - h.col(), kDim);
  h.add(sep, kDim);
  if (c.x_io > o.width) return done();
  h.add(spark(g.history[kMemory], c.bar - 2, 0, 1, o.unicode), kCyan);
  h.cell(right("BW " + pct(g.get("gpu_mem_bandwidth_util_ratio")), 8), c.x_io - 2 - h.col(), kDim);
  h.add(sep, kDim);
  if (c.x_health > o.width) return done();
  h.add(spark(g.history[kIo], c.bar, 0, 1, o.unicode), kCyan);
  h.cell(right("nvl " + pct(g.get("gpu_nvlink_bandwidth_util_ratio")), 8), c.x_health - 2 - h.col(), kDim);
  h.add(sep, kDim);
  if (c.x_health + kHealthMin > o.width) return done();
  const double clk = g.get("gpu_sm_clock_hertz") / g.get("gpu_sm_clock_max_hertz");
  h.add(spark(g.history[kHealth], std::max(4, std::min(12, o.width - c.x_health - 12)), 30, 95, o.unicode),
        temp > 80 ? kRed : kYellow)
      .add(" clk " + pct(clk));
  done();
}

void finding_lines(const TopModel& m, const ViewOptions& o, std::vector<std::string>& out) {
  Line title(o.width, o.colour);
  title.add("FINDINGS", kBold);
  if (m.have_findings && m.findings.to_ms > m.findings.from_ms) {
    title.add("  last " + diagnose::human(m.findings.to_ms - m.findings.from_ms), kDim);
  }
  out.push_back(title.str());
  if (!m.have_findings) {
    Line l(o.width, o.colour);
    out.push_back(l.add("  " + (m.findings_note.empty() ? std::string("not available") : m.findings_note), kDim).str());
    return;
  }
  size_t shown = 0;
  for (const diagnose::HostReport& host : m.findings.hosts) {
    for (const diagnose::GpuReport& g : host.gpus) {
      for (const diagnose::Finding& f : g.findings) {
        Line l(o.width, o.colour);
        const bool pending = f.state == diagnose::State::kPending;
        const char* sev = f.severity == diagnose::Severity::kCritical ? kRed
                          : f.severity == diagnose::Severity::kWarning ? kYellow
                                                                        : kCyan;
        l.add("  GPU " + g.gpu).to(10);
        l.add(upper(diagnose::severity_name(f.severity)), pending ? kDim : sev).to(20);
        l.add(f.cause, kBold).to(std::max(l.col() + 2, 40));
        if (pending) {
          l.add("pending " + diagnose::human(f.held_ms) + " of " + diagnose::human(f.for_ms) + "  ", kDim);
        } else {
          l.add("since " + clock_of(f.since_ms) + " (" + diagnose::human(f.held_ms) + ")  ");
        }
        if (!f.explained_by.cause.empty()) {
          l.add(f.explained_by.host.empty()
                    ? "from " + f.explained_by.cause + " on GPU " + f.explained_by.gpu + "  "
                    : "waiting for GPU " + f.explained_by.gpu + " of " + f.explained_by.host + " (" +
                          f.explained_by.cause + ")  ",
                kDim);
        }
        // Two numbers of evidence (a flag that merely repeats the cause says
        // nothing) and the GPU-hours lost, each whole or not at all: where
        // they do not all fit, the second evidence goes first, then the
        // first, then the GPU-hours.
        struct Piece {
          std::string text;
          int keep;  // the higher, the later it goes
          const char* style;
        };
        std::vector<Piece> pieces;
        size_t first = !f.evidence.empty() && f.evidence[0].signal == f.cause ? 1 : 0;
        for (size_t i = first; i < std::min<size_t>(f.evidence.size(), first + 2); ++i) {
          const diagnose::Evidence& e = f.evidence[i];
          pieces.push_back({e.signal + " " + diagnose::num(e.value) + " vs " + diagnose::num(e.threshold) + "  ",
                            i == first ? 2 : 1, nullptr});
        }
        if (f.waste_gpu_seconds > 0) pieces.push_back({diagnose::num(f.waste_gpu_seconds / 3600) + " GPU-h lost  ", 3, kDim});
        auto room_needed = [&] {
          int n = 0;
          for (const Piece& p : pieces) n += Line::width_of(p.text);
          return n - 2;  // the last piece's trailing spaces are not drawn
        };
        while (!pieces.empty() && room_needed() > o.width - l.col()) {
          pieces.erase(std::min_element(pieces.begin(), pieces.end(),
                                        [](const Piece& a, const Piece& b) { return a.keep < b.keep; }));
        }
        for (const Piece& p : pieces) l.add(p.text, p.style);
        out.push_back(l.str());
        // The action's first sentence, under it.
        Line act(o.width, o.colour);
        const size_t stop = f.action.find(". ");
        act.to(10).add(o.unicode ? "→ " : "-> ", kDim).add(f.action.substr(0, stop == std::string::npos ? stop : stop + 1), kDim);
        out.push_back(act.str());
        ++shown;
      }
    }
  }
  if (shown == 0) {
    Line l(o.width, o.colour);
    out.push_back(l.add("  none: every GPU is doing what it can", kGreen).str());
  }
}

void process_lines(const TopModel& m, const ViewOptions& o, std::vector<std::string>& out) {
  Line title(o.width, o.colour);
  out.push_back(title.add("PROCESSES", kBold).str());
  if (m.processes.empty()) {
    Line l(o.width, o.colour);
    out.push_back(l.add("  none reported", kDim).str());
    return;
  }
  Line head(o.width, o.colour);
  head.add("  GPU", kDim).to(8).add("PID", kDim).to(17).add("MEMORY", kDim).to(25).add("SM", kDim).to(31);
  head.add("POD", kDim).to(64).add("CPUS (NUMA)", kDim);
  out.push_back(head.str());
  for (const TopProcess& p : m.processes) {
    Line l(o.width, o.colour);
    l.add(right(p.gpu, 5)).to(8).add(p.pid).to(17).add(gib(p.memory_bytes)).to(25).add(pct(p.sm_ratio)).to(31);
    l.add(p.pod.empty() ? "-" : p.pod).to(std::max(l.col() + 1, 64));
    l.add(p.cpus.empty() ? "-" : p.cpus + (p.numa.empty() ? "" : " (" + p.numa + ")"));
    out.push_back(l.str());
  }
}

}  // namespace

int columns(std::string_view s) {
  int n = 0;
  for (char c : s) n += continuation(c) ? 0 : 1;
  return n;
}

Screen render(const TopModel& m, const ViewOptions& o) {
  std::vector<std::string> top, body;
  const Columns c = columns_for(o.width);
  {
    Line l(o.width, o.colour);
    l.add("gpulens top", kBold);
    if (m.simulated) l.add(" ").add(" SIMULATED ", kReverse);
    const char* dot = o.unicode ? " · " : " - ";
    if (!o.origin.empty()) l.add(dot + o.origin);
    l.add(dot + std::to_string(m.gpus.size()) + (m.gpus.size() == 1 ? " GPU" : " GPUs"));
    if (m.time_s > 0) l.add(dot + clock_of(m.time_s * 1000) + " UTC");
    l.add(dot + (o.paused ? std::string("PAUSED") : "every " + format_duration(o.refresh_ms)), o.paused ? kYellow : nullptr);
    top.push_back(l.str());
  }
  {
    Line l(o.width, o.colour);
    l.add("sources: ", kDim);
    for (size_t i = 0; i < m.sources.size(); ++i) {
      const TopSource& s = m.sources[i];
      if (i) l.add(", ");
      l.add(s.name + (s.up ? " up" : " DOWN"), s.up ? nullptr : kRed);
      if (!s.up && !s.error.empty()) l.add(" (" + s.error + ")", kRed);
    }
    if (m.sources.empty()) l.add("none", kDim);
    top.push_back(l.str());
  }
  {
    Line l(o.width, o.colour);
    const char* sep = o.unicode ? "│ " : "| ";
    const std::string hist = m.history_range_ms > 0 ? " (" + format_duration(m.history_range_ms) + ")" : "";
    const std::string dot = o.unicode ? " · " : ", ";
    // The long label where it fits, else the layer's name; a layer the
    // rows leave out (it does not fit) has no label either.
    auto label = [&](const std::string& full, const char* brief, int w) {
      l.cell(columns(full) < w ? full : brief, w, kBold).add(sep, kDim);
    };
    l.add("GPU NAME", kBold).to(c.x_compute);
    label("COMPUTE SM active" + hist, "COMPUTE", c.x_memory - 2 - c.x_compute);
    if (c.x_io <= o.width) label("MEMORY used" + dot + "BW", "MEMORY", c.x_io - 2 - l.col());
    if (c.x_health <= o.width) label("IO PCIe" + dot + "NVLink", "IO", c.x_health - 2 - l.col());
    if (c.x_health + kHealthMin <= o.width) l.add(o.width - l.col() >= 24 ? "HEALTH temp power clocks" : "HEALTH", kBold);
    top.push_back(l.str());
  }
  // The history lines go when they would push the GPUs off the screen.
  const int room = o.height > 0 ? o.height - static_cast<int>(top.size()) - 1 : 1 << 20;
  const bool with_history = m.history_range_ms > 0 && static_cast<int>(m.gpus.size()) * 2 + 4 <= room;
  for (const TopGpu& g : m.gpus) {
    const bool up = gpu_line(g, c, o, body);
    if (with_history && up) history_line(g, c, o, body);
    if (with_history && !up) body.emplace_back();
  }
  if (m.gpus.empty()) {
    Line l(o.width, o.colour);
    body.push_back(l.add("  no GPUs: the sources report none", kDim).str());
  }
  if (const auto lines = service_lines(m.node, m.gpus.size()); !lines.empty()) {
    body.emplace_back();
    Line title(o.width, o.colour);
    body.push_back(title.add("SERVING", kBold).str());
    // Wrapped between words (never a value without its name), like the
    // lines under snapshot's table.
    for (const std::string& text : lines) {
      const std::string wrapped = fit_lines("  " + terminal_safe(text) + "\n", o.width);
      for (size_t at = 0; at < wrapped.size();) {
        const size_t nl = wrapped.find('\n', at);
        const size_t end = nl == std::string::npos ? wrapped.size() : nl;
        body.push_back(wrapped.substr(at, end - at));
        at = end + 1;
      }
    }
  }
  body.emplace_back();
  finding_lines(m, o, body);
  body.emplace_back();
  process_lines(m, o, body);

  Screen s;
  if (o.height <= 0) {
    s.lines = std::move(top);
    s.lines.insert(s.lines.end(), body.begin(), body.end());
    if (!o.status.empty()) s.lines.push_back(terminal_safe(o.status));
    return s;
  }
  const int visible = std::max(0, o.height - static_cast<int>(top.size()) - 1);
  s.max_scroll = std::max(0, static_cast<int>(body.size()) - visible);
  const int scroll = std::clamp(o.scroll, 0, s.max_scroll);
  s.lines = std::move(top);
  s.lines.resize(std::min<size_t>(s.lines.size(), static_cast<size_t>(o.height)));
  for (int i = 0; i < visible; ++i) {
    const size_t k = static_cast<size_t>(scroll + i);
    s.lines.push_back(k < body.size() ? body[k] : "");
  }
  if (static_cast<int>(s.lines.size()) < o.height) {
    Line f(o.width, o.colour);
    const char* keys = o.unicode ? "q quit · p pause · ↑↓ PgUp PgDn scroll" : "q quit - p pause - up/down PgUp/PgDn scroll";
    if (!o.status.empty()) f.add(o.status + "  ", kRed);
    f.add(keys, kDim);
    if (s.max_scroll > 0) f.add(fmt("  (%.0f more lines)", static_cast<double>(s.max_scroll - scroll)), kDim);
    s.lines.push_back(f.str());
  }
  return s;
}

}  // namespace gpulens::top
