// The terminal `gpulens top` draws on: raw keyboard input, the alternate
// screen, the window size, and a frame written in one piece so nothing
// flickers (the cursor goes home and each line overwrites the last frame's,
// clearing only what is left of it; no full clear except after a resize).
//
//   Terminal t;
//   if (Status s = t.enter(); !s) ...          // "stdin is not a terminal"
//   for (;;) {
//     t.draw(lines);
//     Key k = t.read_key(1000);                // waits up to 1 s
//     if (k == Key::kQuit || t.interrupted()) break;
//   }
//   // the destructor restores the terminal (also after SIGINT/SIGTERM/SIGHUP)
//
// Works over SSH and in tmux: only VT100/xterm sequences every terminal
// emulator knows. SIGWINCH marks the size as changed; SIGINT, SIGTERM and
// SIGHUP end the loop through interrupted().
//
// Thread-safety: one Terminal per process, used from one thread.
#pragma once

#include <termios.h>

#include <string>
#include <vector>

#include "util/status.h"

namespace gpulens::top {

enum class Key { kNone, kQuit, kPause, kUp, kDown, kPageUp, kPageDown, kHome, kEnd, kRefresh, kResize };

class Terminal {
 public:
  Terminal() = default;
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // Raw mode, alternate screen, hidden cursor, signal handlers.
  Status enter();
  void leave();

  int width() const { return width_; }
  int height() const { return height_; }
  // Re-reads the size; true when it changed since the last call.
  bool update_size();
  // Replaces the screen with `lines` (at most height() of them).
  void draw(const std::vector<std::string>& lines);
  // Waits up to `timeout_ms` for a key; kResize when the window changed
  // size meanwhile, kNone on timeout or a key without a meaning.
  Key read_key(int timeout_ms);
  // A stop signal arrived (SIGINT, SIGTERM, SIGHUP).
  bool interrupted() const;

 private:
  bool active_ = false;
  bool clear_next_ = true;
  termios saved_{};
  int width_ = 80, height_ = 24;
  std::string frame_;
};

// Whether the locale's character set is UTF-8 (block characters then).
bool utf8_locale();

}  // namespace gpulens::top
