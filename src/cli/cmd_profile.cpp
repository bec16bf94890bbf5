// gpulens profile: asks the agent for a capture inside a process running
// gpulens_client, waits for it and prints the analysis (docs/profiling.md).
// A torch trace goes through the same reader and analysis as `gpulens trace`.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include <simdjson.h>
#include <stdlib.h>
#include <unistd.h>

#include "analyze/trace/files.h"
#include "analyze/trace/report.h"
#include "cli/command.h"
#include "agent/profile_stacks.h"
#include "agent/profile_trigger.h"
#include "util/duration.h"
#include "util/http_client.h"
#include "util/json.h"

namespace gpulens::cli {

namespace {

int fail(const std::string& why) {
  std::cerr << "gpulens profile: " << why << "\n";
  return kExitFailure;
}

std::string state_of(const std::string& body, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(body).get(doc) != simdjson::SUCCESS) return "";
  std::string_view s;
  if (doc["error"].get_string().get(s) == simdjson::SUCCESS) error = std::string(s);
  if (doc["state"].get_string().get(s) != simdjson::SUCCESS) return "";
  return std::string(s);
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "window: 5 optimizer steps in 1.234 s" or, when the time limit came
// first, "window: the 10s time limit, after 3 of 5 optimizer steps".
std::string window_line(const std::string& capture_json, uint64_t steps, const std::string& duration) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  double seconds = -1;
  int64_t done = -1;
  if (parser.parse(capture_json).get(doc) == simdjson::SUCCESS) {
    if (doc["window_s"].get_double().get(seconds) != simdjson::SUCCESS) seconds = -1;
    if (doc["steps_done"].get_int64().get(done) != simdjson::SUCCESS) done = -1;
  }
  if (done < 0) return "window: the client did not count optimizer steps\n";
  char s[32] = "";
  if (seconds >= 0) std::snprintf(s, sizeof s, " in %.3f s", seconds);
  if (static_cast<uint64_t>(done) >= steps) return "window: " + std::to_string(done) + " optimizer steps" + s + "\n";
  return "window: the " + duration + " time limit, after " + std::to_string(done) + " of " + std::to_string(steps) +
         " optimizer steps" + (done == 0 ? " (no torch.optim step ran)" : "") + "\n";
}

}  // namespace

int run_profile(int argc, char** argv) {
  CLI::App app{"Capture inside a running process that uses gpulens_client (Python stacks or a torch.profiler "
               "trace), through the agent it pushes to, and print the analysis.",
               "gpulens profile"};
  std::string url, duration = "10s", kind = "stacks", format = "text", out_path, token_file;
  int64_t pid = 0, gpu = -1;
  uint64_t max_bytes = 16 << 20, steps = 0;
  app.add_option("--url", url, "the agent (serve --push) the process's client pushes to")->required();
  auto* pid_opt = app.add_option("--pid", pid, "the process to capture in");
  auto* gpu_opt = app.add_option("--gpu", gpu,
                                 "or: the GPU (index) whose one process running gpulens_client the agent knows of");
  pid_opt->excludes(gpu_opt);
  app.add_option("--duration", duration, "the capture window (with --steps: its time limit)")->capture_default_str();
  app.add_option("--steps", steps,
                 "end the window after this many optimizer steps (torch.optim), or at --duration if sooner");
  app.add_option("--kind", kind, "stacks (sampled Python stacks) or torch (torch.profiler trace)")
      ->check(CLI::IsMember({"stacks", "torch"}))->capture_default_str();
  app.add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  app.add_option("--out", out_path, "keep the raw capture here (the client's JSON, or the gzip Kineto trace)");
  app.add_option("--max-bytes", max_bytes, "largest result the client may send")->capture_default_str();
  app.add_option("--token-file", token_file, "the push token (push.token_file), when the agent has one");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (pid_opt->count() == 0 && gpu_opt->count() == 0) {
    std::cerr << "gpulens profile: give --pid PID or --gpu N\n";
    return kExitUsage;
  }
  if (gpu_opt->count() && gpu < 0) {
    std::cerr << "gpulens profile: --gpu must be a GPU index (0, 1, ...)\n";
    return kExitUsage;
  }
  auto ms = parse_duration_ms(duration);
  if (!ms) return fail("--duration: " + ms.status().message());
  if (*ms <= 0) return fail("--duration must be positive");
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.find("://") == std::string::npos) url = "http://" + url;

  HttpClientOptions ho;
  ho.timeout_ms = 10000;
  ho.max_body_bytes = max_bytes + 4096;
  if (!token_file.empty()) ho.auth.credentials_file = token_file;
  if (Status s = check_http_client_options(ho, "--token-file"); !s) return fail(s.message());
  HttpClient http(ho);

  std::string body = (gpu >= 0 ? "{\"gpu\":" + std::to_string(gpu) : "{\"pid\":" + std::to_string(pid)) +
                     ",\"kind\":\"" + kind + "\",\"duration_s\":";
  append_json_number(body, static_cast<double>(*ms) / 1000.0);
  body += ",\"max_bytes\":" + std::to_string(max_bytes);
  if (steps > 0) body += ",\"steps\":" + std::to_string(steps);
  body += "}";
  auto made = http.post(url + "/api/v1/profile", body, {{"Content-Type", "application/json"}});
  if (!made) return fail(made.status().message());
  if (made->status != 201) return fail("the agent answered HTTP " + std::to_string(made->status) + ": " + trimmed(made->body));
  std::string id;
  {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string_view s;
    if (parser.parse(made->body).get(doc) != simdjson::SUCCESS || doc["id"].get_string().get(s) != simdjson::SUCCESS) {
      return fail("the agent's answer has no id: " + trimmed(made->body));
    }
    id = std::string(s);
    int64_t chosen = 0;
    if (doc["pid"].get_int64().get(chosen) == simdjson::SUCCESS) pid = chosen;  // the agent's pick for --gpu
  }
  if (::isatty(2) || gpu >= 0) {
    std::cerr << "capture " << id << ": " << kind << " in pid " << pid
              << (gpu >= 0 ? " (the client process on GPU " + std::to_string(gpu) + ")" : std::string()) << " for "
              << duration << "\n";
  }

  // The agent expires a capture nobody took or finished, so this loop ends.
  std::string capture_json;
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    auto st = http.get(url + "/api/v1/profile/" + id);
    if (!st) return fail(st.status().message());
    if (st->status != 200) return fail("the agent answered HTTP " + std::to_string(st->status) + ": " + trimmed(st->body));
    std::string error;
    std::string state = state_of(st->body, error);
    if (state == "done") {
      capture_json = trimmed(st->body);
      break;
    }
    if (state == "failed" || state == "expired") return fail("capture " + id + " " + state + ": " + error);
    if (state != "pending" && state != "running") return fail("unexpected answer: " + trimmed(st->body));
  }
  auto result = http.get(url + "/api/v1/profile/" + id + "/result");
  if (!result) return fail(result.status().message());
  if (result->status != 200) return fail("the agent answered HTTP " + std::to_string(result->status));

  if (steps > 0 && format == "text") std::cout << window_line(capture_json, steps, duration);
  if (!out_path.empty()) {
    std::ofstream f(out_path, std::ios::binary | std::ios::trunc);
    f << result->body;
    if (!f.flush()) return fail("cannot write " + out_path);
  }
  if (kind == "stacks") {
    auto a = analyse_stacks(result->body);
    if (!a) return fail(a.status().message());
    std::cout << (format == "json" ? stacks_json(*a, capture_json) : stacks_text(*a));
    return kExitOk;
  }
  // torch: the trace goes through `gpulens trace`'s path, analyse_files(),
  // from --out or a private temporary file (the diagnosis-triggered captures
  // take the same path).
  auto analysed = analyse_trace_upload(result->body, out_path);
  if (!analysed) return fail(analysed.status().message());
  trace::JobReport job = std::move(analysed).value();
  if (out_path.empty()) {  // the temporary file is gone: name the capture instead
    for (auto& r : job.ranks) r.path = "capture " + id + " (pid " + std::to_string(pid) + ")";
  }
  if (format == "json") {
    std::cout << "{\"capture\":" << capture_json << ",\"trace\":" << trimmed(trace::to_json(job)) << "}\n";
  } else {
    std::cout << trace::to_text(job);
  }
  return kExitOk;
}

}  // namespace gpulens::cli
