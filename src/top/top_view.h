// The screen of `gpulens top`: a TopModel drawn into the terminal's width
// and height, as lines of text (with colour escapes when asked).
//
//   gpulens top · http://10.0.0.7:9400 · 8 GPUs · 12:55:01 UTC · every 1s     SIMULATED
//   sources: sim up
//   GPU NAME            COMPUTE SM active  │ MEMORY used · BW   │ IO PCIe · NVLink   │ HEALTH
//     0 H100 80GB HBM3  ████████▍░░  88%   │ ███████░░░ 60/80G  │ ░░░░░░░░░░   2%    │ 65°C 350W ok
//                       ▇▇▇▇▇▇▇▇▇▇ u100%   │ ▄▄▄▄▄▄▄▄▄▄ BW 40%  │ ▁▁▁▁▁▁▁▁▁▁ nvl 0%  │ ▅▅▅▅▅ clk 100%
//   ...
//   FINDINGS  last 30m
//     GPU 5  WARNING  thermal_throttle  since 12:35:22 (19m) ...
//   PROCESSES
//     GPU  PID   MEMORY  SM   POD  CPUS (NUMA)
//   q quit · p pause · ↑↓ scroll
//
// The second line of each GPU is its history (sparklines over the history
// range, oldest left); it is left out when the GPUs would not fit otherwise.
// Every line is at most `width` columns; with `height` > 0 there are exactly
// `height` lines (the header and the footer stay, the rest scrolls), with 0
// everything is drawn and no footer (--once).
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "top/top_model.h"

namespace gpulens::top {

struct ViewOptions {
  int width = 120;
  int height = 0;          // 0: as many lines as the content needs, no footer
  bool colour = false;     // ANSI colours and reverse video
  bool unicode = true;     // block and sparkline characters; else ASCII
  int scroll = 0;          // body lines scrolled off the top (clamped)
  std::string origin;      // "http://10.0.0.7:9400", "local sources"
  int64_t refresh_ms = 1000;
  bool paused = false;
  std::string status;      // a problem to show in the footer, "" for none
};

struct Screen {
  std::vector<std::string> lines;
  int max_scroll = 0;      // the largest useful ViewOptions::scroll
};

Screen render(const TopModel& model, const ViewOptions& options);

// Display columns of UTF-8 text without escapes (one per code point).
int columns(std::string_view utf8);

}  // namespace gpulens::top
