// `gpulens top`'s model and screen from documents shaped as the agent
// serves them: fields, processes, sparklines, findings, widths, scrolling.
#include <gtest/gtest.h>

#include <algorithm>

#include "top/top_model.h"
#include "top/top_view.h"
#include "top/service_lines.h"

namespace gpulens::top {
namespace {

constexpr const char* kCurrent = R"({"time":"1796129665","simulated":true,
 "sources":[{"name":"sim","up":true,"error":""},{"name":"host","up":false,"error":"no /proc"}],
 "gpus":[
  {"gpu":"0","uuid":"GPU-a","name":"NVIDIA H100 80GB HBM3","fields":{"gpu_up":1,"gpu_utilization_ratio":0.99,
    "gpu_sm_active_ratio":0.875,"gpu_memory_total_bytes":85899345920,"gpu_memory_used_bytes":64424509440,
    "gpu_mem_bandwidth_util_ratio":0.4,"gpu_pcie_rx_bandwidth_util_ratio":0.02,"gpu_pcie_tx_bandwidth_util_ratio":0.05,
    "gpu_temperature_celsius":65,"gpu_power_watts":350,"gpu_sm_clock_hertz":1.98e9,"gpu_sm_clock_max_hertz":1.98e9,
    "gpu_clock_event_active{reason=\"gpu_idle\"}":1,
    "gpu_process_memory_used_bytes{pid=\"4242\",namespace=\"ml\",pod=\"trainer-0\",container=\"main\"}":42949672960}},
  {"gpu":"1","uuid":"GPU-b","name":"NVIDIA H100 80GB HBM3","fields":{"gpu_up":1,"gpu_utilization_ratio":0.5,
    "gpu_memory_total_bytes":85899345920,"gpu_memory_used_bytes":1073741824,"gpu_temperature_celsius":91,
    "gpu_power_watts":500,"gpu_clock_event_active{reason=\"sw_thermal\"}":1}},
  {"gpu":"2","uuid":"GPU-c","name":"NVIDIA H100 80GB HBM3","fields":{"gpu_up":0,"gpu_last_xid":79}}],
 "node":{"fields":{"host_gpu_process_affinity_info{pid=\"4242\",gpu=\"0\",cpus=\"0-47\",numa_nodes=\"0\"}":1}}})";

constexpr const char* kHistory = R"({"start":0,"step":10000,"end":40000,"interval":1000,"series":[
 {"name":"gpu_sm_active_ratio","gpu":"0","labels":{},"values":[0.1,0.5,null,1.0]},
 {"name":"gpu_utilization_ratio","gpu":"1","labels":{},"values":[0.0,0.25,0.5,0.75]},
 {"name":"gpu_pcie_rx_bandwidth_util_ratio","gpu":"0","labels":{},"values":[0.1,0.9,0.1,0.1]},
 {"name":"gpu_pcie_tx_bandwidth_util_ratio","gpu":"0","labels":{},"values":[0.2,0.1,0.1,0.3]}]})";

constexpr const char* kFindings = R"({"hosts":[{"host":"h","gpus":[
 {"gpu":"0","uuid":"GPU-a","findings":[],"model":"m","waste_gpu_hours":0,"covered_seconds":1800},
 {"gpu":"1","uuid":"GPU-b","model":"m","waste_gpu_hours":0.1,"covered_seconds":1800,"findings":[
  {"cause":"thermal_throttle","layer":"health","severity":"warning","since":"2026-12-01T12:35:22Z",
   "evidence":[{"signal":"temperature","value":90.5,"threshold":80}],
   "action":"Clocks are cut by temperature on this GPU: check airflow. Then more.","held_seconds":1170,
   "waste_gpu_hours":0.09,"state":"firing","for_seconds":300,"explained_by":null,"periods":[]}]}]}],
 "window":{"from":"2026-12-01T12:24:25Z","to":"2026-12-01T12:54:25Z"}})";

TopModel model() {
  TopModel m;
  EXPECT_TRUE(read_current(kCurrent, m).is_ok());
  EXPECT_TRUE(read_history(kHistory, 40000, m).is_ok());
  EXPECT_TRUE(read_findings(kFindings, m).is_ok());
  return m;
}

std::string joined(const Screen& s) {
  std::string out;
  for (const auto& l : s.lines) out += l + "\n";
  return out;
}

TEST(TopModel, ReadsGpusSourcesAndProcesses) {
  TopModel m = model();
  ASSERT_EQ(m.gpus.size(), 3u);
  EXPECT_TRUE(m.simulated);
  EXPECT_EQ(m.time_s, 1796129665);
  EXPECT_DOUBLE_EQ(m.gpus[0].get("gpu_sm_active_ratio"), 0.875);
  EXPECT_TRUE(std::isnan(m.gpus[1].get("gpu_sm_active_ratio")));  // absent, not 0
  ASSERT_EQ(m.sources.size(), 2u);
  EXPECT_FALSE(m.sources[1].up);
  ASSERT_EQ(m.processes.size(), 1u);  // NVML's process and the host's affinity joined by pid and GPU
  EXPECT_EQ(m.processes[0].pod, "ml/trainer-0");
  EXPECT_EQ(m.processes[0].cpus, "0-47");
  EXPECT_DOUBLE_EQ(m.processes[0].memory_bytes, 42949672960.0);
}

TEST(TopModel, HistoryTakesTheBusierDirectionAndFallsBackToUtilisation) {
  TopModel m = model();
  const auto& io = m.gpus[0].history[kIo];
  ASSERT_EQ(io.size(), 4u);
  EXPECT_DOUBLE_EQ(io[0], 0.2);
  EXPECT_DOUBLE_EQ(io[1], 0.9);
  EXPECT_TRUE(std::isnan(m.gpus[0].history[kCompute][2]));
  ASSERT_EQ(m.gpus[1].history[kCompute].size(), 4u);  // no SM activity: the coarse utilisation
  EXPECT_DOUBLE_EQ(m.gpus[1].history[kCompute][3], 0.75);
  // A refresh of the current values keeps the history until the next read.
  ASSERT_TRUE(read_current(kCurrent, m).is_ok());
  EXPECT_EQ(m.gpus[0].history[kIo].size(), 4u);
}

TEST(TopModel, BadDocumentsAreErrors) {
  TopModel m;
  EXPECT_EQ(read_current("<html>", m).message(), "the agent answered something that is not JSON");
  EXPECT_FALSE(read_current("{}", m).is_ok());
  EXPECT_FALSE(read_history("{\"x\":1}", 1000, m).is_ok());
  EXPECT_FALSE(read_findings("[]", m).is_ok());
}

TEST(TopView, ShowsEveryGpuTheFindingAndTheProcess) {
  ViewOptions o{.width = 160, .height = 0, .origin = "http://127.0.0.1:9400"};
  const std::string s = joined(render(model(), o));
  EXPECT_NE(s.find("gpulens top  SIMULATED  · http://127.0.0.1:9400 · 3 GPUs · 12:54:25 UTC · every 1s"), std::string::npos) << s;
  EXPECT_NE(s.find("SIMULATED"), std::string::npos);
  EXPECT_NE(s.find("host DOWN (no /proc)"), std::string::npos);
  EXPECT_NE(s.find("  0 H100 80GB HBM3"), std::string::npos) << s;
  EXPECT_NE(s.find("88% "), std::string::npos);     // SM active of GPU 0
  EXPECT_NE(s.find("50%*"), std::string::npos);     // GPU 1: the coarse utilisation, marked
  EXPECT_NE(s.find("60/80G"), std::string::npos);
  EXPECT_NE(s.find("91°C 500W sw_thermal"), std::string::npos) << s;
  EXPECT_NE(s.find("65°C 350W ok"), std::string::npos);  // gpu_idle is not a throttle
  EXPECT_NE(s.find("LOST: not answering (XID 79)"), std::string::npos);
  EXPECT_NE(s.find("GPU 1"), std::string::npos);
  EXPECT_NE(s.find("thermal_throttle"), std::string::npos);
  EXPECT_NE(s.find("since 12:35:22 (20m)"), std::string::npos) << s;
  EXPECT_NE(s.find("temperature 90.50 vs 80"), std::string::npos);
  EXPECT_NE(s.find("check airflow."), std::string::npos);
  EXPECT_EQ(s.find("Then more."), std::string::npos);  // the action's first sentence only
  EXPECT_NE(s.find("ml/trainer-0"), std::string::npos);
  EXPECT_NE(s.find("0-47 (0)"), std::string::npos);
  EXPECT_EQ(s.find("\033["), std::string::npos);  // no colour unless asked
}

TEST(TopView, ReadsTheSeriesObjectsTheAgentServes) {
  // As /api/v1/current writes them now: labels as objects; a histogram part
  // or a labelled series is not the label-free value of its name.
  constexpr const char* kSeries = R"({"gpus":[{"gpu":"0","uuid":"GPU-a","name":"NVIDIA H100","series":[
   {"name":"gpu_up","labels":{},"value":1},
   {"name":"gpu_temperature_celsius","labels":{},"value":91},
   {"name":"gpu_power_watts","labels":{},"value":500},
   {"name":"gpu_power_watts","labels":{"pid":"7"},"value":9},
   {"name":"gpu_clock_event_active","labels":{"reason":"gpu_idle"},"value":1},
   {"name":"gpu_clock_event_active","labels":{"reason":"hw_thermal"},"value":1},
   {"name":"gpu_clock_event_active","labels":{"reason":"sw_power_cap"},"value":0}]}]})";
  TopModel m;
  ASSERT_TRUE(read_current(kSeries, m).is_ok());
  ASSERT_EQ(m.gpus.size(), 1u);
  EXPECT_DOUBLE_EQ(m.gpus[0].get("gpu_power_watts"), 500);
  EXPECT_TRUE(std::isnan(m.gpus[0].get("gpu_clock_event_active")));  // only labelled ones
  const std::string s = joined(render(m, {.width = 160, .height = 0, .origin = "x"}));
  EXPECT_NE(s.find("91°C 500W hw_thermal"), std::string::npos) << s;
}

TEST(TopView, EachGpuShowsItsJobs) {
  constexpr const char* kJobs = R"({"gpus":[
  {"gpu":"0","uuid":"GPU-a","name":"NVIDIA H100","fields":{"gpu_up":1,"gpu_temperature_celsius":60,
    "gpu_job_info{job_id=\"81234\",source=\"slurm\",rank=\"3\",world_size=\"16\"}":1}},
  {"gpu":"1","uuid":"GPU-b","name":"NVIDIA H100","fields":{"gpu_up":1,"gpu_temperature_celsius":60,
    "gpu_job_info{job_id=\"a\",source=\"environment\"}":1,"gpu_job_info{job_id=\"b\",source=\"environment\"}":1}},
  {"gpu":"2","uuid":"GPU-c","name":"NVIDIA H100","fields":{"gpu_up":0,"gpu_last_xid":79,
    "gpu_job_info{job_id=\"81234\",source=\"slurm\",rank=\"4\"}":1}},
  {"gpu":"3","uuid":"GPU-d","name":"NVIDIA H100","fields":{"gpu_up":1}}]})";
  TopModel m;
  ASSERT_TRUE(read_current(kJobs, m).is_ok());
  ASSERT_EQ(m.gpus.size(), 4u);
  EXPECT_EQ(m.gpus[0].job, "81234 rank 3");
  EXPECT_EQ(m.gpus[1].job, "a, b");  // two jobs claim it: both shown
  EXPECT_EQ(m.gpus[3].job, "");
  const std::string s = joined(render(m, {.width = 160}));
  EXPECT_NE(s.find("60°C ok  job 81234 rank 3"), std::string::npos) << s;
  EXPECT_NE(s.find("LOST: not answering (XID 79)  job 81234 rank 4"), std::string::npos) << s;
  EXPECT_NE(s.find("60°C ok  job a, b"), std::string::npos) << s;
  size_t shown = 0;
  for (size_t at = s.find("  job "); at != std::string::npos; at = s.find("  job ", at + 1)) ++shown;
  EXPECT_EQ(shown, 3u);  // GPU 3 has none
}

TEST(TopView, EveryLineFitsTheWidth) {
  for (int width : {40, 80, 100, 200}) {
    for (bool unicode : {true, false}) {
      ViewOptions o{.width = width, .height = 30, .unicode = unicode, .origin = "http://127.0.0.1:9400"};
      const Screen s = render(model(), o);
      ASSERT_EQ(s.lines.size(), 30u);
      for (const auto& l : s.lines) EXPECT_LE(columns(l), width) << width << ": " << l;
      if (!unicode) {
        for (const auto& l : s.lines) {
          EXPECT_TRUE(std::all_of(l.begin(), l.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })) << l;
        }
      }
    }
  }
}

// The words of a line: split at spaces and at box-drawing and block
// characters (separators, bars, sparklines).
std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::string w;
  for (size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    const bool drawing = c == 0xE2 && i + 2 < line.size() && static_cast<unsigned char>(line[i + 1]) >= 0x94 &&
                         static_cast<unsigned char>(line[i + 1]) <= 0x96;
    if (c == ' ' || drawing) {
      if (!w.empty()) out.push_back(w);
      w.clear();
      if (drawing) i += 2;
      continue;
    }
    w += line[i];
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

TEST(TopView, NarrowScreensLeaveOutWholeWordsNeverPartsOfThem) {
  for (bool unicode : {true, false}) {
    ViewOptions wide{.width = 1000, .height = 0, .unicode = unicode, .origin = "http://127.0.0.1:9400"};
    const Screen all = render(model(), wide);
    for (int width : {40, 80, 120, 200}) {
      ViewOptions o = wide;
      o.width = width;
      const Screen s = render(model(), o);
      ASSERT_EQ(s.lines.size(), all.lines.size()) << width;
      for (size_t i = 0; i < s.lines.size(); ++i) {
        EXPECT_LE(columns(s.lines[i]), width) << width << ": " << s.lines[i];
        // Every word shown is a word of the same line at full width: a
        // number is whole ("0.09", never "0" or "0.0"), a name is cut between words.
        const auto full = words(all.lines[i]);
        for (const std::string& w : words(s.lines[i])) {
          if (w.find_first_not_of("#._-:=+*") == std::string::npos) continue;  // an ASCII bar or sparkline
          EXPECT_NE(std::find(full.begin(), full.end(), w), full.end())
              << width << ": \"" << w << "\" in \"" << s.lines[i] << "\" is not a word of \"" << all.lines[i] << "\"";
        }
      }
      const std::string text = joined(s);
      // The finding keeps its GPU-hours lost before its evidence.
      if (width >= 80) {
        EXPECT_NE(text.find("0.09 GPU-h lost"), std::string::npos) << width << "\n" << text;
      }
      if (width >= 120) {
        EXPECT_NE(text.find("temperature 90.50 vs 80"), std::string::npos) << width << "\n" << text;
      }
      // The layers leave from the right: COMPUTE and MEMORY are always there.
      EXPECT_NE(text.find("88%"), std::string::npos) << width << "\n" << text;
      EXPECT_NE(text.find("60/80G"), std::string::npos) << width << "\n" << text;
      if (width >= 80) {  // HEALTH: GPU 0's temperature
        EXPECT_NE(text.find(unicode ? "65°C" : "65C"), std::string::npos) << width << "\n" << text;
      }
    }
  }
}

TEST(TopView, HistoryLinesGoWhenTheGpusWouldNotFit) {
  ViewOptions tall{.width = 120, .height = 40};
  ViewOptions short_{.width = 120, .height = 9};
  const Screen a = render(model(), tall), b = render(model(), short_);
  // Tall: GPU 0's line is followed by its sparklines (the 0.1..1.0 ramp).
  auto at = [](const Screen& s, std::string_view what) {
    for (size_t i = 0; i < s.lines.size(); ++i) {
      if (s.lines[i].find(what) != std::string::npos) return static_cast<int>(i);
    }
    return -1;
  };
  EXPECT_EQ(at(a, "  1 H100") - at(a, "  0 H100"), 2);
  EXPECT_NE(a.lines[static_cast<size_t>(at(a, "  0 H100") + 1)].find("▁▅ █"), std::string::npos)
      << a.lines[static_cast<size_t>(at(a, "  0 H100") + 1)];
  EXPECT_EQ(at(b, "  1 H100") - at(b, "  0 H100"), 1);
  EXPECT_NE(b.lines.back().find("q quit"), std::string::npos);
}

TEST(TopView, ScrollingKeepsTheHeaderAndTheFooter) {
  ViewOptions o{.width = 120, .height = 8};
  const Screen first = render(model(), o);
  ASSERT_GT(first.max_scroll, 0);
  o.scroll = 1000;  // clamped
  const Screen last = render(model(), o);
  EXPECT_EQ(last.lines.size(), 8u);
  EXPECT_NE(last.lines[0].find("gpulens top"), std::string::npos);
  EXPECT_NE(last.lines[2].find("GPU NAME"), std::string::npos);
  EXPECT_NE(last.lines.back().find("q quit"), std::string::npos);
  EXPECT_NE(joined(last).find("trainer-0"), std::string::npos);  // the end of the body
  EXPECT_EQ(joined(first).find("trainer-0"), std::string::npos);
}

TEST(TopView, ProblemAndPauseAreShown) {
  ViewOptions o{.width = 120, .height = 20, .colour = true, .paused = true, .status = "agent: connection refused"};
  const std::string s = joined(render(model(), o));
  EXPECT_NE(s.find("PAUSED"), std::string::npos);
  EXPECT_NE(s.find("agent: connection refused"), std::string::npos);
  EXPECT_NE(s.find("\033[31m"), std::string::npos);  // red: the throttle, the problem
}

TEST(TopModel, HistoryQueryAsksForAboutAsManyPointsAsCells) {
  EXPECT_EQ(history_query(300'000, 30),
            "/api/v1/history?series=gpu_sm_active_ratio,gpu_utilization_ratio,gpu_mem_bandwidth_util_ratio,"
            "gpu_pcie_rx_bandwidth_util_ratio,gpu_pcie_tx_bandwidth_util_ratio,gpu_temperature_celsius"
            "&range=300s&step=10s");
}

// The service line: each engine its own, on the GPUs its pid runs on.
TEST(ServiceLines, OneLinePerEngineOnItsGpus) {
  std::map<std::string, double, std::less<>> node = {
      {"host_gpu_process_affinity_info{pid=\"5001\",gpu=\"4\",cpus=\"48-95\",numa_nodes=\"1\"}", 1},
      {"host_gpu_process_affinity_info{pid=\"5001\",gpu=\"5\",cpus=\"48-95\",numa_nodes=\"1\"}", 1},
      {"serving_kv_cache_usage_ratio{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\"}", 0.99},
      {"serving_requests_waiting{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\"}", 31},
      {"serving_requests_running{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\"}", 40},
      {"serving_request_latency_seconds{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\",le=\"10.0\"}", 0},
      {"serving_request_latency_seconds{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\",le=\"20.0\"}", 100},
      {"serving_request_latency_seconds{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\",le=\"+Inf\"}", 100},
      {"serving_requests_waiting{engine=\"sglang\",endpoint=\"http://a:30000/metrics\"}", 2},
      {"serving_engine_info{engine=\"vllm\",endpoint=\"http://a:8001/metrics\",pid=\"5001\",model=\"Qwen/Qwen3-8B\"}", 1},
  };
  EXPECT_EQ(service_lines(series_from_fields(node), 8),
            (std::vector<std::string>{
                "sglang at http://a:30000/metrics on GPUs not known: KV cache -, 2 waiting, - running, p99 -, TTFT p99 -",
                "vllm at http://a:8001/metrics (Qwen/Qwen3-8B) on GPUs 4,5: KV cache 99%, 31 waiting, 40 running, p99 19.9 s, TTFT p99 -"}));
  node.erase("serving_requests_waiting{engine=\"sglang\",endpoint=\"http://a:30000/metrics\"}");
  for (auto it = node.begin(); it != node.end();) {
    it = it->first.starts_with("host_gpu") ? node.erase(it) : std::next(it);
  }
  ASSERT_EQ(service_lines(series_from_fields(node), 8).size(), 1u);
  EXPECT_NE(service_lines(series_from_fields(node), 8)[0].find(" on all 8 GPUs: "), std::string::npos);
  EXPECT_TRUE(service_lines({}, 8).empty());
}

// What only some engines say is shown where they say it: vLLM V1's
// requests waiting for capacity and prefix-cache hits, TGI's batch tokens.
TEST(ServiceLines, WaitingForCapacityPrefixHitsAndBatchTokensWhereSaid) {
  const std::string v = "{engine=\"vllm\",endpoint=\"http://a:8001/metrics\"";
  const std::string t = "{engine=\"tgi\",endpoint=\"http://a:3000/metrics\"";
  const std::map<std::string, double, std::less<>> node = {
      {"serving_kv_cache_usage_ratio" + v + "}", 0.99},
      {"serving_prefix_cache_hit_ratio" + v + "}", 0.124},
      {"serving_requests_waiting" + v + "}", 31},
      {"serving_requests_waiting_by_reason" + v + ",reason=\"capacity\"}", 30},
      {"serving_requests_waiting_by_reason" + v + ",reason=\"deferred\"}", 1},
      {"serving_requests_running" + v + "}", 40},
      {"serving_requests_waiting" + t + "}", 14},
      {"serving_requests_running" + t + "}", 32},
      {"serving_batch_max_tokens" + t + "}", 16000},
  };
  EXPECT_EQ(service_lines(series_from_fields(node), 8),
            (std::vector<std::string>{
                "tgi at http://a:3000/metrics on GPUs not known: KV cache -, 14 waiting, 32 running, batch 16000 "
                "tokens, p99 -, TTFT p99 -",
                "vllm at http://a:8001/metrics on GPUs not known: KV cache 99%, prefix cache hits 12%, 31 waiting (30 "
                "for capacity), 40 running, p99 -, TTFT p99 -"}));
}

}  // namespace
}  // namespace gpulens::top

namespace gpulens::top {
namespace {

// The node's series come from "series" (labels as data); from an agent of
// the previous release, which writes only "fields", from those keys.
TEST(ServiceLines, SeriesAsObjectsAndFromThePreviousReleasesFields) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser
                   .parse(std::string(
                       R"({"node":{"fields":{"ignored":1},"series":[)"
                       R"({"name":"serving_requests_waiting","labels":{"endpoint":"http://a:1/m","engine":"vllm"},"value":3},)"
                       R"({"name":"serving_request_latency_seconds","labels":{"endpoint":"http://a:1/m","engine":"vllm","le":"+Inf"},"part":"bucket","value":9},)"
                       R"({"name":"serving_request_latency_seconds","labels":{"endpoint":"http://a:1/m","engine":"vllm"},"part":"sum","value":4.5}]}})"))
                   .get(doc));
  const std::vector<NodeSeries> s = entity_series(doc["node"]);
  ASSERT_EQ(s.size(), 3u);  // "fields" is not read when "series" is there
  EXPECT_EQ(s[0].labels.get("engine"), "vllm");
  EXPECT_EQ(s[1].part, HistogramPart::kBucket);
  EXPECT_EQ(s[2].part, HistogramPart::kSum);
  EXPECT_EQ(service_lines(s, 1).size(), 1u);
  ASSERT_FALSE(parser
                   .parse(std::string(
                       R"({"node":{"fields":{"serving_requests_waiting{engine=\"vllm\",endpoint=\"http://a:1/m\"}":3,)"
                       R"("serving_request_latency_seconds{sum,engine=\"vllm\",endpoint=\"http://a:1/m\"}":4.5}}})"))
                   .get(doc));
  const std::vector<NodeSeries> old = entity_series(doc["node"]);
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(old[0].name, "serving_request_latency_seconds");
  EXPECT_EQ(old[0].part, HistogramPart::kSum);
  EXPECT_EQ(old[0].labels.get("endpoint"), "http://a:1/m");
  EXPECT_EQ(old[1].labels.get("engine"), "vllm");
}

}  // namespace
}  // namespace gpulens::top
