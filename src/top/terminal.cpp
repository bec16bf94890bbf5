// Raw terminal handling for `gpulens top` (termios, xterm sequences, poll).
#include "top/terminal.h"

#include <langinfo.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <clocale>
#include <cstring>

namespace gpulens::top {
namespace {

std::atomic<int> g_stop{0};
std::atomic<bool> g_resized{false};

void on_stop(int sig) { g_stop = sig; }
void on_winch(int) { g_resized = true; }

void write_all(std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(STDOUT_FILENO, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s.remove_prefix(static_cast<size_t>(n));
  }
}

void handle(int sig, void (*fn)(int)) {
  struct sigaction sa{};
  sa.sa_handler = fn;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: poll() returns at once with EINTR
  sigaction(sig, &sa, nullptr);
}

}  // namespace

bool utf8_locale() {
  std::setlocale(LC_CTYPE, "");
  const char* cs = nl_langinfo(CODESET);
  const bool utf8 = cs && (std::strcmp(cs, "UTF-8") == 0 || std::strcmp(cs, "utf8") == 0);
  std::setlocale(LC_CTYPE, "C");
  return utf8;
}

Terminal::~Terminal() { leave(); }

Status Terminal::enter() {
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
    return not_supported("stdin and stdout must be a terminal (--once prints one screen to a pipe)");
  }
  if (tcgetattr(STDIN_FILENO, &saved_) != 0) return not_supported(std::string("tcgetattr: ") + std::strerror(errno));
  termios raw = saved_;
  raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO | ISIG | IEXTEN));
  raw.c_iflag &= static_cast<tcflag_t>(~(IXON | ICRNL));
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) != 0) return not_supported(std::string("tcsetattr: ") + std::strerror(errno));
  active_ = true;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) handle(s, on_stop);
  handle(SIGWINCH, on_winch);
  write_all("\033[?1049h\033[?25l");  // alternate screen, hide the cursor
  update_size();
  clear_next_ = true;
  return Status::ok();
}

void Terminal::leave() {
  if (!active_) return;
  active_ = false;
  write_all("\033[0m\033[?25h\033[?1049l");
  tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGWINCH}) handle(s, SIG_DFL);
}

bool Terminal::update_size() {
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return false;
  const bool changed = ws.ws_col != width_ || ws.ws_row != height_;
  width_ = ws.ws_col;
  height_ = ws.ws_row;
  if (changed) clear_next_ = true;
  return changed;
}

void Terminal::draw(const std::vector<std::string>& lines) {
  frame_.clear();
  frame_ += clear_next_ ? "\033[H\033[2J" : "\033[H";
  clear_next_ = false;
  const size_t n = std::min(lines.size(), static_cast<size_t>(height_));
  for (size_t i = 0; i < n; ++i) {
    frame_ += lines[i];
    frame_ += "\033[0m\033[K";
    if (i + 1 < n) frame_ += "\r\n";
  }
  frame_ += "\033[J";  // below the last line
  write_all(frame_);
}

Key Terminal::read_key(int timeout_ms) {
  if (g_resized.exchange(false)) return Key::kResize;
  pollfd p{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
  const int r = poll(&p, 1, timeout_ms);
  if (g_resized.exchange(false)) return Key::kResize;
  if (r <= 0) return Key::kNone;
  if (p.revents & (POLLHUP | POLLERR)) return Key::kQuit;  // the terminal went away
  char buf[16];
  const ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  if (n == 0) return Key::kQuit;
  if (n < 0) return Key::kNone;
  const std::string_view k(buf, static_cast<size_t>(n));
  if (k == "q" || k == "Q" || k == "\x03" || k == "\x04" || k == "\033") return Key::kQuit;
  if (k == "p" || k == "P" || k == " ") return Key::kPause;
  if (k == "k" || k == "\033[A" || k == "\033OA") return Key::kUp;
  if (k == "j" || k == "\033[B" || k == "\033OB") return Key::kDown;
  if (k == "\033[5~" || k == "b") return Key::kPageUp;
  if (k == "\033[6~" || k == "f") return Key::kPageDown;
  if (k == "g" || k == "\033[H" || k == "\033[1~") return Key::kHome;
  if (k == "G" || k == "\033[F" || k == "\033[4~") return Key::kEnd;
  if (k == "r" || k == "\x0c") return Key::kRefresh;
  return Key::kNone;
}

bool Terminal::interrupted() const { return g_stop.load() != 0; }

}  // namespace gpulens::top
