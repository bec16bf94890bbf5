// `gpulens top`: the agent's overview live in the terminal — per-GPU bars
// for the three layers and health, a short history, the findings and the
// processes — refreshed every second. Reads a running agent's JSON API with
// --url, else runs the agent's sources inside the command and reads the
// same documents from it. --once prints one screen and exits (pipes,
// scripts).
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <iostream>
#include <functional>
#include <mutex>
#include <thread>

#include "cli/agent_findings.h"
#include "cli/command.h"
#include "cli/setup.h"
#include "top/terminal.h"
#include "top/top_model.h"
#include "top/top_view.h"
#include "util/duration.h"
#include "util/http_client.h"
#include "util/log.h"

namespace gpulens::cli {
namespace {

constexpr int64_t kHistoryRangeMs = 5 * 60'000;

// GET path -> body; an HTTP status other than 200 is an error with its text.
using Fetch = std::function<Result<std::string>(const std::string& path)>;

std::string first_line(std::string s) {
  s = s.substr(0, s.find('\n'));
  return s.size() > 200 ? s.substr(0, 200) : s;
}

// One refresh: current values (required: an error when they fail), then
// the history and findings, shown when they come; `problem` receives what
// went wrong with those, "" when nothing.
Status refresh(const Fetch& fetch, top::TopModel& m, int spark_points, std::string& problem) {
  problem.clear();
  auto cur = fetch("/api/v1/current");
  if (!cur) return cur.status();
  if (Status s = top::read_current(*cur, m); !s) return s;
  if (auto h = fetch(top::history_query(kHistoryRangeMs, spark_points))) {
    if (Status s = top::read_history(*h, kHistoryRangeMs, m); !s) problem = s.message();
  } else {
    m.history_range_ms = 0;  // an agent keeping less history: no sparklines
  }
  auto f = fetch("/api/v1/findings");
  if (!f) {
    m.have_findings = false;
    m.findings_note = f.status().message();
  } else if (Status s = top::read_findings(*f, m); !s) {
    problem = s.message();
  }
  return Status::ok();
}

int spark_points(int width) { return std::max(8, width / 5); }

}  // namespace

int run_top(int argc, char** argv) {
  CLI::App app{"The overview live in the terminal: per-GPU bars for compute, memory, IO and health, "
               "a short history, the findings and the processes.",
               "gpulens top"};
  CommonFlags flags;
  std::string url, refresh_text = "1s", prefill;
  bool once = false;
  flags.add_to(app);
  app.add_option("--url", url, "read a running agent (e.g. http://10.0.0.7:9400) instead of running the sources here");
  app.add_option("--refresh", refresh_text, "time between screens (default 1s)");
  app.add_flag("--once", once, "print one screen to stdout and exit (also when stdout is not a terminal)");
  app.add_option("--sim-prefill", prefill,
                 "simulator only, without --url: start with this much history (e.g. 30m) on a virtual clock");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto refresh_ms = parse_duration_ms(refresh_text);
  if (!refresh_ms || *refresh_ms < 100 || *refresh_ms > 3'600'000) {
    std::cerr << "gpulens top: --refresh: " << (refresh_ms ? "between 100ms and 1h" : refresh_ms.status().message()) << "\n";
    return kExitUsage;
  }
  if (!url.empty() && !prefill.empty()) {
    std::cerr << "gpulens top: --sim-prefill runs the simulator here; it does not go with --url\n";
    return kExitUsage;
  }
  const bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  if (!once && !tty) {
    std::cerr << "gpulens top: stdin and stdout must be a terminal; --once prints one screen to a pipe\n";
    return kExitUsage;
  }

  Fetch fetch;
  std::string origin;
  std::unique_ptr<AgentRuntime> local;
  HttpClient client({.timeout_ms = 5000, .max_body_bytes = 16u << 20});
  // The local agent's last log line, shown in the footer for 10 s.
  struct LastLog {
    std::mutex mu;
    std::string line;
    int64_t at_ms = 0;
    std::string recent() {
      std::lock_guard lock(mu);
      return wall_ms() - at_ms < 10'000 ? line.substr(0, 200) : "";
    }
  } last_log;
  if (!url.empty()) {
    const std::string base = agent_base_url(url);
    if (!base.starts_with("http://")) {
      std::cerr << "gpulens top: --url " << url << ": only http:// is supported\n";
      return kExitUsage;
    }
    origin = base;
    fetch = [&client, base](const std::string& path) -> Result<std::string> {
      auto r = client.get(base + path);
      if (!r) return unavailable(base + ": " + r.status().message());
      if (r->status != 200) return unavailable(base + path.substr(0, path.find('?')) + ": HTTP " + std::to_string(r->status) + ": " + first_line(r->body));
      return std::move(r->body);
    };
  } else {
    auto config = flags.resolve();
    if (!config) {
      std::cerr << "gpulens top: " << config.status().message() << "\n";
      return kExitUsage;
    }
    // The agent's log would scribble over the screen: its last line goes
    // into the footer instead (the findings are on the screen anyway).
    log::set_sink([&last_log](const std::string& line) {
      std::lock_guard lock(last_log.mu);
      last_log.line = line.substr(0, line.find('\n'));
      last_log.at_ms = wall_ms();
    });
    AgentOptions options{.listen = "", .interval_ms = config->interval_ms, .history_ms = config->history_ms,
                         .dcgm_names = false, .scenario_label = ""};
    auto agent = make_agent(*config, options, true);
    if (!agent) {
      log::set_sink(nullptr);
      std::cerr << "gpulens top: " << agent.status().message() << "\n";
      return kExitFailure;
    }
    if (!prefill.empty()) {
      auto d = parse_duration_ms(prefill);
      if (!d || *d <= 0 || *d > config->history_ms || !(*agent)->simulated()) {
        log::set_sink(nullptr);
        std::cerr << "gpulens top: --sim-prefill: "
                  << (!d ? d.status().message() : !(*agent)->simulated() ? "needs the simulator (--source sim)"
                                                                         : "must be positive and at most the history kept")
                  << "\n";
        return kExitUsage;
      }
      (*agent)->prefill(*d);
    }
    RuntimeSettings settings = runtime_settings(*config, agent_host(**agent));
    auto runtime = AgentRuntime::create(std::move(*agent), std::move(settings));
    if (!runtime) {
      log::set_sink(nullptr);
      std::cerr << "gpulens top: " << runtime.status().message() << "\n";
      return kExitUsage;
    }
    if (Status s = (*runtime)->start(); !s) {
      log::set_sink(nullptr);
      std::cerr << "gpulens top: " << s.message() << "\n";
      return kExitFailure;
    }
    local = std::move(*runtime);
    origin = "local sources";
    Agent* a = &local->agent();
    fetch = [a](const std::string& target) -> Result<std::string> {
      const size_t q = target.find('?');
      ServerRequest req;
      req.method = "GET";
      req.path = std::string_view(target).substr(0, q);
      req.query = q == std::string::npos ? std::string_view{} : std::string_view(target).substr(q + 1);
      ServerResponse res;
      a->handle(req, res);
      if (res.status != 200) return unavailable(std::string(req.path) + ": " + first_line(res.body));
      return std::move(res.body);
    };
  }
  auto stop_local = [&] {
    if (local) local->stop();
    log::set_sink(nullptr);
  };

  top::TopModel model;
  top::ViewOptions view{.width = 120, .height = 0, .colour = false, .unicode = top::utf8_locale(), .scroll = 0,
                        .origin = origin, .refresh_ms = *refresh_ms, .paused = false, .status = ""};
  if (once) {
    winsize ws{};
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) view.width = ws.ws_col;
    if (const char* c = std::getenv("COLUMNS"); c && std::atoi(c) >= 40) view.width = std::atoi(c);
    view.colour = isatty(STDOUT_FILENO) && !std::getenv("NO_COLOR");
    // Local sources: a second sample first, for the rates.
    if (local) std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(local->agent().interval_ms(), 1000) + 100));
    std::string problem;
    const Status s = refresh(fetch, model, spark_points(view.width), problem);
    stop_local();
    if (!s) {
      std::cerr << "gpulens top: " << s.message() << "\n";
      return kExitFailure;
    }
    view.status = problem;
    for (const std::string& line : top::render(model, view).lines) std::cout << line << "\n";
    return kExitOk;
  }

  top::Terminal term;
  if (Status s = term.enter(); !s) {
    stop_local();
    std::cerr << "gpulens top: " << s.message() << "\n";
    return kExitUsage;
  }
  view.colour = !std::getenv("NO_COLOR");
  using Clock = std::chrono::steady_clock;
  auto next = Clock::now();
  int max_scroll = 0;
  std::string problem;
  for (;;) {
    if (!view.paused && Clock::now() >= next) {
      // When the agent does not answer, the last screen stays, marked.
      top::TopModel fresh = model;
      if (Status s = refresh(fetch, fresh, spark_points(term.width()), problem); s) {
        model = std::move(fresh);
      } else {
        problem = s.message() + (model.time_s ? " (showing " + format_rfc3339(model.time_s * 1000) + ")" : "");
      }
      next = Clock::now() + std::chrono::milliseconds(*refresh_ms);
    }
    view.width = term.width();
    view.height = term.height();
    view.status = problem.empty() ? last_log.recent() : problem;
    const top::Screen screen = top::render(model, view);
    max_scroll = screen.max_scroll;
    view.scroll = std::min(view.scroll, max_scroll);
    term.draw(screen.lines);
    const int wait = static_cast<int>(std::clamp<int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count(), 0, *refresh_ms));
    const top::Key key = term.read_key(view.paused ? 1000 : wait);
    if (term.interrupted() || key == top::Key::kQuit) break;
    const int page = std::max(1, term.height() - 4);
    switch (key) {
      case top::Key::kPause: view.paused = !view.paused; next = Clock::now(); break;
      case top::Key::kUp: view.scroll = std::max(0, view.scroll - 1); break;
      case top::Key::kDown: view.scroll = std::min(max_scroll, view.scroll + 1); break;
      case top::Key::kPageUp: view.scroll = std::max(0, view.scroll - page); break;
      case top::Key::kPageDown: view.scroll = std::min(max_scroll, view.scroll + page); break;
      case top::Key::kHome: view.scroll = 0; break;
      case top::Key::kEnd: view.scroll = max_scroll; break;
      case top::Key::kRefresh: next = Clock::now(); term.update_size(); break;
      case top::Key::kResize: term.update_size(); break;
      default: break;
    }
  }
  term.leave();
  stop_local();
  return kExitOk;
}

}  // namespace gpulens::cli
