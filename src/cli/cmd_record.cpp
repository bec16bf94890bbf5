// `gpulens record`: write the agent's series over a duration to an
// OpenMetrics file with a timestamp on every sample, ending in "# EOF" —
// the format `promtool tsdb create-blocks-from openmetrics` and
// `gpulens diagnose --replay` read.
//
// Three ways to get the samples:
//   - local sources in real time (the default with a GPU): one sample per
//     interval, written to disk as it is taken (see export/recording.h);
//     SIGINT, SIGTERM or SIGHUP end the recording early with a valid file;
//   - the simulator on a virtual clock (the default without one): the whole
//     duration of scenario time, ending now, computed at once — announced
//     on stderr, since `--duration 30m` then takes a second; --realtime
//     samples it at the wall clock's pace instead;
//   - --url: a running agent's in-memory history, read page by page from its
//     /api/v1/export (no new sampling).
// A progress line goes to stderr when it is a terminal, nothing otherwise.
// A file name ending in ".gz" is written gzip-compressed (export/gzip_file.h);
// `diagnose --replay` reads either.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "cli/agent_findings.h"
#include "cli/command.h"
#include "cli/setup.h"
#include "export/exposition.h"
#include "export/gzip_file.h"
#include "export/recording.h"
#include "expfmt/text.h"
#include "util/duration.h"
#include "util/http_client.h"

namespace gpulens::cli {
namespace {

// Stop signals are blocked and waited for, so a signal can only end the
// loop between samples and the file is always completed.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, s);
    sigprocmask(SIG_BLOCK, &set_, &old_);
  }
  ~StopSignals() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  // Waits up to `ms` for a stop signal; returns it, or 0.
  int wait(int64_t ms) {
    if (received_) return received_;
    timespec ts{static_cast<time_t>(std::max<int64_t>(ms, 0) / 1000), static_cast<long>(std::max<int64_t>(ms, 0) % 1000 * 1'000'000)};
    const int s = sigtimedwait(&set_, nullptr, &ts);
    if (s > 0) received_ = s;
    return received_;
  }
  int received() const { return received_; }

 private:
  sigset_t set_{}, old_{};
  int received_ = 0;
};

// "\r12s of 10m, 8412 samples, 0.2 MiB" on a terminal, at most once a second.
class Progress {
 public:
  explicit Progress(int64_t total_ms) : total_ms_(total_ms), tty_(isatty(STDERR_FILENO) == 1) {}
  void update(int64_t done_ms, uint64_t samples, uint64_t bytes) {
    if (!tty_) return;
    const int64_t now = wall_ms();
    if (now - last_ms_ < 1000 && done_ms < total_ms_) return;
    last_ms_ = now;
    std::fprintf(stderr, "\rgpulens record: %s of %s, %llu samples, %.1f MiB   ", format_duration(done_ms / 1000 * 1000).c_str(),
                 format_duration(total_ms_).c_str(), static_cast<unsigned long long>(samples), static_cast<double>(bytes) / (1 << 20));
    shown_ = true;
  }
  void done() {
    if (shown_) std::fputc('\n', stderr);
    shown_ = false;
  }

 private:
  int64_t total_ms_;
  bool tty_;
  bool shown_ = false;
  int64_t last_ms_ = 0;
};

std::string spool_dir(const std::string& out_path) {
  if (out_path == "-") {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
  }
  const size_t slash = out_path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : out_path.substr(0, slash);
}

// Samples the local sources into `w` until the duration or a stop signal.
Status record_local(Agent& a, RecordingWriter& w, int64_t duration_ms, int64_t interval_ms, bool virtual_clock,
                    StopSignals& signals, Progress& progress, int64_t& steps_done) {
  std::vector<int64_t> ids;  // recording series per slot, -1 when not declared yet
  const int64_t steps = duration_ms / interval_ms + 1;
  const int64_t end = wall_ms() / 1000 * 1000;
  const int64_t start = virtual_clock ? end - (steps - 1) * interval_ms : wall_ms();
  for (const FieldDef& f : catalog()) {
    if (f.native) w.family(family_name(f, true), type_name(f.type), f.help);
  }
  for (int64_t i = 0; i < steps; ++i) {
    int64_t t = start + i * interval_ms;
    if (!virtual_clock) {
      if (signals.wait(t - wall_ms())) break;
      t = wall_ms();
    } else if (i % 256 == 0 && signals.wait(0)) {
      break;
    }
    a.collect_once(t);
    std::scoped_lock lock(a.registry().mutex(), a.live().mutex());
    const auto& live = a.live();
    const auto& reg = a.registry();
    if (ids.size() < live.size()) ids.resize(live.size(), -1);
    for (uint32_t s = 0; s < live.size(); ++s) {
      if (!live.present(s) || live.time_ms(s) != t) continue;
      if (ids[s] < 0) {
        const FieldDef& f = field(reg.series(s).field);
        if (!f.native) continue;
        const uint32_t fam = w.family(family_name(f, true), type_name(f.type), f.help);
        for (uint32_t slot : recording_slots(reg, f)) {
          if (slot < ids.size() && ids[slot] < 0) ids[slot] = w.series(fam, recording_series_text(reg, slot));
        }
        if (ids[s] < 0) continue;
      }
      if (Status st = w.add(static_cast<uint32_t>(ids[s]), t, live.value(s)); !st) return st;
    }
    steps_done = i + 1;
    progress.update(i * interval_ms, w.samples(), w.spool_bytes());
  }
  return Status::ok();
}

// Adds one page of the agent's /api/v1/export (OpenMetrics with timestamps)
// to `w`, each series' text kept as written. `newest` receives the newest
// timestamp seen.
Status ingest_page(std::string_view body, RecordingWriter& w, int64_t& newest, uint64_t& added) {
  std::string type, help;
  std::string_view family_name_seen;
  int64_t family = -1;
  size_t line_no = 0;
  expfmt::SampleLine sample;
  expfmt::OwnedLabels labels;
  while (!body.empty()) {
    const size_t nl = body.find('\n');
    std::string_view line = body.substr(0, nl);
    body = nl == body.npos ? std::string_view{} : body.substr(nl + 1);
    ++line_no;
    if (line.empty()) continue;
    auto bad = [&](std::string_view what) {
      return invalid_argument("the agent's /api/v1/export, line " + std::to_string(line_no) + ": " + std::string(what));
    };
    if (line[0] == '#') {
      const expfmt::Comment c = expfmt::parse_comment(line);
      if (c.kind == expfmt::Comment::kType) {
        if (c.text.empty()) return bad("TYPE without a type");
        family_name_seen = c.name;
        type = std::string(c.text);
        help.clear();
        family = -1;
      } else if (c.kind == expfmt::Comment::kHelp) {
        help = std::string(c.text);
      }
      continue;
    }
    if (family_name_seen.empty()) return bad("a sample before any # TYPE");
    if (family < 0) family = w.family(family_name_seen, type, help);
    switch (expfmt::split_sample(line, sample)) {
      case expfmt::LineProblem::kNone: break;
      case expfmt::LineProblem::kNoName: return bad("a sample without a metric name");
      case expfmt::LineProblem::kUnterminatedLabelSet:
      case expfmt::LineProblem::kNoSpace:
      case expfmt::LineProblem::kNoValue: return bad("a sample without a value");
      case expfmt::LineProblem::kBadValue: return bad("a bad value");
      case expfmt::LineProblem::kTrailingText: return bad("a bad timestamp");
    }
    if (expfmt::parse_labels(sample.labels, {}, labels)) return bad("a bad label set");
    if (sample.timestamp_text.empty()) return bad("a sample without a timestamp");
    double ts = 0;
    if (!expfmt::parse_float(sample.timestamp_text, ts) || !(std::abs(ts) < 1e11)) return bad("a bad timestamp");
    const int64_t t_ms = std::llround(ts * 1000);
    if (Status s = w.add(w.series(static_cast<uint32_t>(family), sample.series), t_ms, sample.value); !s) return s;
    newest = std::max(newest, t_ms);
    ++added;
  }
  return Status::ok();
}

// Reads the agent's history of the last `duration_ms` (its clock) into `w`.
Status record_url(const std::string& url, RecordingWriter& w, int64_t duration_ms, StopSignals& signals,
                  Progress& progress, bool& simulated) {
  HttpClient client({.timeout_ms = 10000, .max_body_bytes = 64u << 20});
  auto cur = client.get(url + "/api/v1/current");
  if (!cur) return unavailable(url + ": " + cur.status().message());
  if (cur->status != 200) return unavailable(url + "/api/v1/current answered " + std::to_string(cur->status));
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view time_text;
  if (parser.parse(cur->body).get(doc) || doc["time"].get_string().get(time_text)) {
    return unavailable(url + "/api/v1/current: not a gpulens agent's answer (no \"time\")");
  }
  bool sim = false;
  if (!doc["simulated"].get_bool().get(sim)) simulated = sim;
  int64_t now_s = 0;
  std::from_chars(time_text.data(), time_text.data() + time_text.size(), now_s);
  const int64_t to = now_s * 1000 + 999;
  int64_t from = to - duration_ms;
  uint64_t total = 0;
  while (from <= to) {
    if (signals.wait(0)) break;
    const std::string page = url + "/api/v1/export?from=" + std::to_string(from) + "&to=" + std::to_string(to);
    auto r = client.get(page);
    if (!r) return unavailable(url + ": " + r.status().message());
    if (r->status == 404) return unavailable(url + " has no /api/v1/export (an older gpulens, or not a gpulens agent)");
    if (r->status != 200) {
      return unavailable(page + " answered " + std::to_string(r->status) + ": " + r->body.substr(0, 200));
    }
    int64_t newest = INT64_MIN;
    uint64_t added = 0;
    if (Status s = ingest_page(r->body, w, newest, added); !s) return s;
    if (added == 0) break;
    total += added;
    from = newest + 1;
    progress.update(std::min(duration_ms, newest - (to - duration_ms)), w.samples(), w.spool_bytes());
  }
  return Status::ok();
}

}  // namespace

int run_record(int argc, char** argv) {
  CLI::App app{"Record the agent's series to an OpenMetrics file (timestamps on every sample, # EOF).",
               "gpulens record"};
  CommonFlags flags;
  std::string duration = "10m", out_path = "-", url;
  bool realtime = false;
  flags.add_to(app);
  app.add_option("--duration", duration, "how long to record; with --url, how much of the agent's history (default 10m)");
  app.add_option("-o,--out", out_path, "output file, - for stdout (default); a name ending in .gz is written gzip-compressed");
  app.add_option("--url", url, "export a running agent's in-memory history (http://HOST:PORT) instead of sampling");
  app.add_flag("--realtime", realtime, "sample the simulator in real time instead of a virtual clock");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  auto config = flags.resolve();
  if (!config) {
    std::cerr << "gpulens record: " << config.status().message() << "\n";
    return kExitUsage;
  }
  auto dur = parse_duration_ms(duration);
  if (!dur || *dur <= 0) {
    std::cerr << "gpulens record: --duration: " << (dur ? "must be positive" : dur.status().message()) << "\n";
    return kExitUsage;
  }

  RecordingWriter writer;
  if (Status s = writer.open(spool_dir(out_path)); !s) {
    std::cerr << "gpulens record: " << s.message() << "\n";
    return kExitFailure;
  }
  // Opened before recording, so a bad path fails at once, not after an hour.
  std::ofstream file;
  GzipFileBuf gz;
  const bool gzip = out_path != "-" && gzip_name(out_path);
  if (gzip) {
    if (Status s = gz.open(out_path); !s) {
      std::cerr << "gpulens record: " << s.message() << "\n";
      return kExitFailure;
    }
  } else if (out_path != "-") {
    file.open(out_path, std::ios::binary | std::ios::trunc);
    if (!file) {
      std::cerr << "gpulens record: cannot write " << out_path << "\n";
      return kExitFailure;
    }
  }
  StopSignals signals;
  Progress progress(*dur);
  std::string what;
  Status status;
  if (!url.empty()) {
    url = agent_base_url(url);
    bool simulated = false;
    status = record_url(url, writer, *dur, signals, progress, simulated);
    what = std::to_string(writer.samples()) + " samples of " + std::to_string(writer.series_count()) +
           " series from the history of " + url + (simulated ? " (its data is simulated)" : "");
  } else {
    AgentOptions options{.listen = "", .interval_ms = config->interval_ms, .history_ms = config->interval_ms,
                         .dcgm_names = false, .scenario_label = ""};
    auto agent = make_agent(*config, options, true);
    if (!agent) {
      std::cerr << "gpulens record: " << agent.status().message() << "\n";
      return kExitFailure;
    }
    Agent& a = **agent;
    const bool virtual_clock = a.simulated() && !realtime;
    const int64_t steps = *dur / config->interval_ms + 1;
    if (virtual_clock && steps > 2'000'000) {
      std::cerr << "gpulens record: " << steps << " samples per series is too many; raise --interval\n";
      return kExitUsage;
    }
    if (virtual_clock) {
      std::cerr << "gpulens record: the simulator runs on a virtual clock: " << format_duration(*dur)
                << " of scenario time, ending now, are computed at once (--realtime samples at the wall clock's pace)\n";
    }
    int64_t done = 0;
    status = record_local(a, writer, *dur, config->interval_ms, virtual_clock, signals, progress, done);
    what = std::to_string(done) + " samples per series over " +
           format_duration(std::max<int64_t>(0, done - 1) * config->interval_ms) +
           (virtual_clock ? " (simulated, virtual clock)" : a.simulated() ? " (simulated)" : "");
  }
  progress.done();
  if (!status) {
    std::cerr << "gpulens record: " << status.message() << "\n";
    if (writer.samples() == 0) return kExitFailure;
    std::cerr << "gpulens record: writing the " << writer.samples() << " samples taken so far\n";
  }
  std::ostream gz_out(&gz);
  std::ostream& out = out_path == "-" ? std::cout : gzip ? gz_out : file;
  Status written = writer.finish(out);
  if (written && gzip) written = gz.close();
  if (!written) {
    std::cerr << "gpulens record: " << written.message() << " (" << out_path << ")\n";
    return kExitFailure;
  }
  if (gzip) {
    what += ", " + std::to_string(gz.bytes_out()) + " bytes gzip (" + std::to_string(gz.bytes_in()) + " bytes of text)";
  } else if (out_path != "-") {
    file.flush();
    what += ", " + std::to_string(static_cast<uint64_t>(file.tellp())) + " bytes";
  }
  if (const int sig = signals.received()) {
    std::cerr << "gpulens record: stopped by " << (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP")
              << "; the file is complete up to that point\n";
  }
  if (out_path != "-") std::cerr << "gpulens: recorded " << what << " to " << out_path << "\n";
  return status ? kExitOk : kExitFailure;
}

}  // namespace gpulens::cli
