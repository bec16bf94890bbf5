// Stacks captures: parse the client's JSON, find the waits, render.
#include "agent/profile_stacks.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "util/json.h"

namespace gpulens {
namespace {

constexpr double kVerdictShare = 0.2;

// An optional field: `out` keeps its value when the field is absent or of another type.
template <class T>
void opt(simdjson::simdjson_result<T> r, T& out) {
  if (T v; std::move(r).get(v) == simdjson::SUCCESS) out = v;
}

std::string pct(double share) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%5.1f%%", share * 100);
  return buf;
}

}  // namespace

Result<StacksAnalysis> analyse_stacks(std::string_view json) {
  StacksAnalysis a;
  a.raw = std::string(json);
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return invalid_argument("the stacks capture is not JSON");
  simdjson::dom::array threads;
  if (doc["threads"].get_array().get(threads) != simdjson::SUCCESS) {
    return invalid_argument("the stacks capture has no \"threads\" array");
  }
  opt(doc["duration_s"].get_double(), a.duration_s);
  opt(doc["hz"].get_double(), a.hz);
  opt(doc["rounds"].get_int64(), a.rounds);
  for (simdjson::dom::element t : threads) {
    StackThread st;
    std::string_view name;
    if (t["name"].get_string().get(name) == simdjson::SUCCESS) st.name = std::string(name);
    opt(t["main"].get_bool(), st.main);
    opt(t["samples"].get_int64(), st.samples);
    simdjson::dom::array frames;
    if (t["frames"].get_array().get(frames) != simdjson::SUCCESS) {
      return invalid_argument("a thread of the stacks capture has no \"frames\" array");
    }
    for (simdjson::dom::element f : frames) {
      StackFrame sf;
      std::string_view s;
      if (f["function"].get_string().get(s) == simdjson::SUCCESS) sf.function = std::string(s);
      if (f["file"].get_string().get(s) == simdjson::SUCCESS) sf.file = std::string(s);
      opt(f["line"].get_int64(), sf.line);
      opt(f["self"].get_double(), sf.self);
      opt(f["total"].get_double(), sf.total);
      if (st.main) {
        if (sf.file.ends_with("torch/utils/data/dataloader.py")) a.dataloader_wait = std::max(a.dataloader_wait, sf.total);
        if (sf.function == "synchronize" && sf.file.find("torch/cuda/") != std::string::npos) {
          a.device_sync = std::max(a.device_sync, sf.total);
        }
      }
      st.frames.push_back(std::move(sf));
    }
    a.threads.push_back(std::move(st));
  }
  if (a.dataloader_wait >= kVerdictShare && a.dataloader_wait >= a.device_sync) {
    a.verdict = "dataloader";
  } else if (a.device_sync >= kVerdictShare) {
    a.verdict = "device_sync";
  }
  return a;
}

std::string stacks_text(const StacksAnalysis& a, size_t top) {
  std::string out;
  char head[160];
  std::snprintf(head, sizeof head, "Python stacks over %.1f s (%lld rounds at %.0f Hz, %zu threads)\n", a.duration_s,
                static_cast<long long>(a.rounds), a.hz, a.threads.size());
  out += head;
  for (const StackThread& t : a.threads) {
    out += "\n" + std::string(t.main ? "main thread" : "thread") + " " + t.name + " (" + std::to_string(t.samples) +
           " samples)\n    self  on-stack  frame\n";
    std::vector<const StackFrame*> frames;
    for (const StackFrame& f : t.frames) frames.push_back(&f);
    // Hottest first: where the thread is (self), then what it is inside of.
    std::stable_sort(frames.begin(), frames.end(), [](auto* x, auto* y) {
      return x->self != y->self ? x->self > y->self : x->total > y->total;
    });
    for (size_t i = 0; i < frames.size() && i < top; ++i) {
      out += "  " + pct(frames[i]->self) + "  " + pct(frames[i]->total) + "  " + frames[i]->function + "  " +
             frames[i]->file + ":" + std::to_string(frames[i]->line) + "\n";
    }
  }
  out += "\nmain thread inside the DataLoader (torch/utils/data/dataloader.py): " + pct(a.dataloader_wait) +
         " of its samples; inside a device sync (torch.cuda synchronize): " + pct(a.device_sync) + "\n";
  if (a.verdict == "dataloader") {
    out += "verdict: the main thread waits on the DataLoader: the input pipeline starves the program "
           "(more workers, pin_memory, prefetch, faster decoding)\n";
  } else if (a.verdict == "device_sync") {
    out += "verdict: the main thread waits on device syncs (.item(), .cpu(), torch.cuda.synchronize)\n";
  } else {
    out += "verdict: the main thread is not waiting on the DataLoader or a device sync\n";
  }
  return out;
}

std::string stacks_json(const StacksAnalysis& a, std::string_view capture_json) {
  std::string out = "{\"capture\":";
  out += capture_json;
  out += ",\"analysis\":{\"dataloader_wait_share\":";
  append_json_number(out, a.dataloader_wait);
  out += ",\"device_sync_share\":";
  append_json_number(out, a.device_sync);
  out += ",\"verdict\":";
  if (a.verdict.empty()) {
    out += "null";
  } else {
    append_json_string(out, a.verdict);
  }
  out += "},\"stacks\":";
  out += a.raw;
  out += "}\n";
  return out;
}

}  // namespace gpulens
