// Tests for reading traces: formats, skipping with counts, and bad input.
#include "analyze/trace/reader.h"
#include "util/testing/temp_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <simdjson.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace gpulens::trace {
namespace {

Result<Trace> parse(std::string json) {
  json.append(simdjson::SIMDJSON_PADDING, ' ');
  return parse_trace(std::string_view(json.data(), json.size() - simdjson::SIMDJSON_PADDING), "t.json");
}

// This process's own directory (ctest runs each test in a process of its
// own), removed at exit: the scripts stay readable while the test runs.
const std::string& own_dir() {
  static const testing::TestDir dir;
  return dir.path();
}

std::string temp_file(const std::string& name, const std::string& bytes) {
  auto p = std::filesystem::path(own_dir()) / name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p.string();
}

std::string gzip(const std::string& s) {
  z_stream zs{};
  deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&zs, s.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(s.data()));
  zs.avail_in = static_cast<uInt>(s.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

const char* kSmall = R"J({"distributedInfo": {"rank": 3, "world_size": 8}, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 5, "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "ts": 20.5, "dur": 3.25, "args": {"stream": 7, "correlation": 7}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "ts": 30, "dur": 1, "args": {"stream": "7", "correlation": 8, "bytes": 4096}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "x", "ts": 1},
  {"ph": "X", "cat": "cpu_op", "name": "no ts", "dur": 2},
  {"ph": "X", "cat": "cpu_op", "name": "bad dur", "ts": 1, "dur": -2},
  {"ph": "X", "cat": "Trace", "name": "span", "ts": 0, "dur": 100},
  {"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "ts": 40, "dur": 1, "args": {"stream": 4294967295}},
  {"ph": "X", "cat": "kernel", "name": "ns", "ts": 1712195495505582.988, "dur": 0.5}
]})J";

TEST(TraceReader, ParsesModernAndLegacyCategoriesAndArgs) {
  auto t = parse(kSmall);
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->world_size, 8);
  ASSERT_EQ(t->events.size(), 5u);
  EXPECT_EQ(t->events[0].kind, EventKind::kRuntime);
  EXPECT_EQ(t->events[0].stream, kNoStream);
  EXPECT_EQ(t->events[1].kind, EventKind::kKernel);
  EXPECT_DOUBLE_EQ(t->events[1].ts, 20.5);
  EXPECT_DOUBLE_EQ(t->events[1].dur, 3.25);
  EXPECT_EQ(t->events[1].correlation, 7);
  EXPECT_EQ(t->events[2].kind, EventKind::kMemcpy);
  EXPECT_EQ(t->events[2].stream, 7);  // numeric string accepted
  EXPECT_EQ(t->events[2].bytes, 4096);
  EXPECT_EQ(t->events[3].stream, kAllStreams);
  // 19 significant digits: must not come back as 0 (simdjson 3.0 get_number does).
  EXPECT_DOUBLE_EQ(t->events[4].ts, 1712195495505582.988);
  EXPECT_TRUE(t->first_is_event);
}

TEST(TraceReader, CountsWhatItSkips) {
  auto t = parse(kSmall);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->skipped.non_complete, 1u);
  EXPECT_EQ(t->skipped.missing_fields, 1u);
  EXPECT_EQ(t->skipped.bad_values, 1u);
  EXPECT_EQ(t->skipped.trace_span, 1u);
}

TEST(TraceReader, ReadsTheAutogradProfilersExportWithoutCategories) {
  // What torch builds without Kineto write (torch/autograd/profiler_util.py).
  auto t = parse(R"([{"name": "aten::mm", "ph": "X", "ts": 10, "dur": 5, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::mm", "ph": "X", "ts": 12, "dur": 1, "tid": 2, "pid": "CPU functions", "args": {}},
    {"name": "aten::add", "ph": "X", "ts": 20, "dur": 1, "tid": 1, "pid": "CPU functions", "args": {}},
    {"name": "aten::mm", "ph": "s", "ts": 10, "tid": 1, "pid": "CPU functions", "id": 0, "cat": "cpu_to_cuda", "args": {}}])");
  ASSERT_TRUE(t) << t.status().message();
  ASSERT_EQ(t->events.size(), 3u);
  EXPECT_EQ(t->uncategorised, 3u);
  EXPECT_EQ(t->skipped.missing_fields, 0u);
  EXPECT_EQ(t->skipped.non_complete, 1u);  // the flow arrow
  EXPECT_EQ(t->events[0].kind, EventKind::kCpuOp);
  EXPECT_EQ(t->cat_of(t->events[0]), "");
  EXPECT_EQ(t->events[0].thread, t->events[2].thread);
  EXPECT_NE(t->events[0].thread, t->events[1].thread);
}

TEST(TraceReader, ThreadsAreThePidAndTidPair) {
  auto t = parse(R"([{"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1,"pid":1,"tid":2},
    {"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1,"pid":2,"tid":1},
    {"ph":"X","cat":"cpu_op","name":"a","ts":1,"dur":1,"pid":1,"tid":2}])");
  ASSERT_TRUE(t) << t.status().message();
  EXPECT_NE(t->events[0].thread, t->events[1].thread);
  EXPECT_EQ(t->events[0].thread, t->events[2].thread);
}

TEST(TraceReader, AcceptsBareArray) {
  auto t = parse(R"([{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"stream":0}}])");
  ASSERT_TRUE(t) << t.status().message();
  ASSERT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->events[0].stream, 0);  // stream 0 (ROCm) is a stream
}

TEST(TraceReader, RejectsTruncatedJsonWithLocation) {
  std::string s = kSmall;
  auto t = parse(s.substr(0, s.size() / 2));
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("t.json"), std::string::npos);
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos) << t.status().message();
}

TEST(TraceReader, RejectsJsonThatIsNotATrace) {
  auto t = parse(R"({"metrics": [1, 2, 3]})");
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("traceEvents"), std::string::npos);
  EXPECT_FALSE(parse(R"({"traceEvents": 5})"));
  EXPECT_FALSE(parse("42"));
}

TEST(TraceReader, LargeGarbageAfterTheArrayOpensIsRejectedQuickly) {
  std::string s = R"({"traceEvents": [)";
  s.append(size_t{40} << 20, '\0');  // what a truncated or zero-filled 2 GB file looks like
  auto t = parse(s);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("not closed"), std::string::npos) << t.status().message();
}

TEST(TraceReader, NonObjectEventsAreSkippedAndCounted) {
  auto t = parse(R"({"traceEvents": [1, "x", null, {"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2}]})");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->events.size(), 1u);
  EXPECT_EQ(t->skipped.bad_values, 3u);
}

TEST(TraceReader, ReadsGzipAndPlainFilesAlike) {
  auto plain = read_trace_file(temp_file("plain.json", kSmall));
  auto gz = read_trace_file(temp_file("packed.json.gz", gzip(kSmall)));
  ASSERT_TRUE(plain) << plain.status().message();
  ASSERT_TRUE(gz) << gz.status().message();
  EXPECT_EQ(plain->events.size(), gz->events.size());
  // Two gzip members (a concatenated file) inflate through zlib.
  std::string half = std::string(kSmall).substr(0, 100);
  auto two = read_trace_file(temp_file("two.json.gz", gzip(half) + gzip(std::string(kSmall).substr(100))));
  ASSERT_TRUE(two) << two.status().message();
  EXPECT_EQ(two->events.size(), plain->events.size());
}

TEST(TraceReader, BadFilesGiveClearErrors) {
  auto empty = read_trace_file(temp_file("empty.json", ""));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);

  auto garbage = read_trace_file(temp_file("garbage.json", std::string("\x7f" "ELF\x01\x02\x00\xff", 8)));
  ASSERT_FALSE(garbage);
  EXPECT_NE(garbage.status().message().find("not JSON"), std::string::npos);

  std::string gz = gzip(kSmall);
  auto cut = read_trace_file(temp_file("cut.json.gz", gz.substr(0, gz.size() / 2)));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.status().message().find("gzip"), std::string::npos) << cut.status().message();

  auto missing = read_trace_file("/nonexistent/trace.json");
  EXPECT_FALSE(missing);

  ReadOptions small;
  small.max_bytes = 100;
  auto big = read_trace_file(temp_file("big.json", kSmall), small);
  ASSERT_FALSE(big);
  EXPECT_NE(big.status().message().find("--max-bytes"), std::string::npos);
  auto big_gz = read_trace_file(temp_file("big.json.gz", gzip(kSmall)), small);
  EXPECT_FALSE(big_gz);
}

TEST(TraceReader, GzipBombIsStoppedWhileInflating) {
  // 16 MiB of one byte inflates ~1000 times its gzip; with the ratio floor
  // at 1 MiB it is stopped at 100 times its size, far below max_bytes.
  std::string bomb = "[" + std::string(16u << 20, ' ') + "]";
  const std::string gz = gzip(bomb);
  ASSERT_LT(gz.size(), 100'000u);
  ReadOptions o;
  o.ratio_floor_bytes = 1u << 20;
  auto r = read_trace_file(temp_file("bomb.json.gz", gz), o);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("(100 times its " + std::to_string(gz.size()) + " bytes of gzip"),
            std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("a gzip bomb, or not a trace"), std::string::npos);
  // The same bytes are a fine (empty) trace when the ratio allows them.
  o.max_ratio = 2000;
  auto ok = read_trace_file(temp_file("bomb.json.gz", gz), o);
  EXPECT_TRUE(ok) << ok.status().message();
}

}  // namespace
}  // namespace gpulens::trace
