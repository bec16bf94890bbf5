// The push parsers take what real clients send and name the problem in
// everything else.
#include "push/push_body.h"

#include <gtest/gtest.h>

#include <cmath>

namespace gpulens::push {
namespace {

const PushLimits kLimits;

TEST(PushPath, GroupingKeyWithBase64AndPercentEncoding) {
  auto k = parse_group_path("/metrics/job/trainer/pid/4242", kLimits);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(*k, (LabelPairs{{"job", "trainer"}, {"pid", "4242"}}));
  // The Pushgateway README's examples.
  k = parse_group_path("/metrics/job/directory_cleaner/path@base64/L3Zhci90bXA", kLimits);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ((*k)[1], (std::pair<std::string, std::string>{"path", "/var/tmp"}));
  k = parse_group_path("/metrics/job/example/first_label@base64/=/second_label/foobar", kLimits);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ((*k)[1].second, "");
  EXPECT_EQ((*k)[2].second, "foobar");
  k = parse_group_path("/metrics/job@base64/dHJhaW5lcg", kLimits);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)[0].second, "trainer");
  k = parse_group_path("/metrics/job/a%20b", kLimits);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ((*k)[0].second, "a b");
}

TEST(PushPath, BadPathsAreNamed) {
  auto msg = [](std::string_view p) {
    auto k = parse_group_path(p, kLimits);
    return k.ok() ? std::string("accepted") : k.status().message();
  };
  EXPECT_NE(msg("/metrics/instance/x").find("must start with /metrics/job/<job>"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/pid").find("label pid has no value"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/1bad/v").find("invalid label name \"1bad\""), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/a@base64/!!").find("invalid base64"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/a%zz/v").find("invalid label name"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/a/%zz").find("bad percent-encoding"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/a/v/a/w").find("appears twice"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/a//b/c").find("empty value"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/x/__name__/v").find("reserved"), std::string::npos);
  EXPECT_NE(msg("/metrics/job/" + std::string(300, 'a')).find("push.max_label_length"), std::string::npos);
}

TEST(PushText, ParsesWhatClientLibrariesWrite) {
  auto s = parse_text_body(
      "# HELP gpu_allocator_reserved_bytes Bytes reserved.\n"
      "# TYPE gpu_allocator_reserved_bytes gauge\n"
      "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-1\",note=\"a \\\"q\\\" \\\\ \\n\"} 2.5e9\n"
      "\n"
      "# a free comment\n"
      "# TYPE gpu_allocator_retries_total counter\n"
      "gpu_allocator_retries_total{gpu_uuid=\"GPU-1\",} 3\n"
      "untyped_thing NaN\n"
      "x +Inf\n"
      "\ty\t-Inf\n",
      kLimits);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 5u);
  EXPECT_EQ((*s)[0].name, "gpu_allocator_reserved_bytes");
  EXPECT_EQ((*s)[0].type, "gauge");
  EXPECT_EQ((*s)[0].labels[1].second, "a \"q\" \\ \n");
  EXPECT_DOUBLE_EQ((*s)[0].value, 2.5e9);
  EXPECT_EQ((*s)[0].where, "line 3");
  EXPECT_EQ((*s)[1].type, "counter");
  EXPECT_EQ((*s)[2].type, "untyped");
  EXPECT_TRUE(std::isnan((*s)[2].value));
  EXPECT_TRUE(std::isinf((*s)[3].value) && (*s)[3].value > 0);
  EXPECT_TRUE(std::isinf((*s)[4].value) && (*s)[4].value < 0);
  EXPECT_TRUE(parse_text_body("", kLimits)->empty());
}

TEST(PushText, GarbageNamesItsLine) {
  auto msg = [](std::string_view b, const PushLimits& l = kLimits) {
    auto s = parse_text_body(b, l);
    return s.ok() ? std::string("accepted") : s.status().message();
  };
  EXPECT_EQ(msg("a 1\nb 2 1700000000000\n"),
            "line 2: sample b carries a timestamp; pushed samples must not (the agent stamps them)");
  EXPECT_EQ(msg("a 1\r\n"), "line 1: carriage return in line (lines end with \\n only)");
  EXPECT_EQ(msg("a 1\nb 2"), "line 2: the last line does not end with \\n");
  EXPECT_EQ(msg("a 1\nb x\n"), "line 2: sample b: invalid value \"x\"");
  EXPECT_EQ(msg("a\n"), "line 1: sample a has no value");
  EXPECT_EQ(msg("a{b=\"1\" 2\n"), "line 1: expected ',' or '}' in the label set");
  EXPECT_EQ(msg("a{b=1} 2\n"), "line 1: label b: value must be quoted");
  EXPECT_EQ(msg("a{b=\"1} 2\n"), "line 1: label b: unterminated value");
  EXPECT_EQ(msg("a{b=\"\\x\"} 2\n"), "line 1: label b: invalid escape \\x");
  EXPECT_EQ(msg("a{b=\"1\",b=\"2\"} 2\n"), "line 1: label b appears twice");
  EXPECT_EQ(msg("a{b=\"1\"} 2\na{b=\"1\"} 3\n"), "line 2: duplicate series a");
  EXPECT_EQ(msg("a 1\n# TYPE a gauge\n"), "line 2: # TYPE for a after its first sample");
  EXPECT_EQ(msg("# TYPE a bogus\n"), "line 1: unknown metric type \"bogus\" for a");
  EXPECT_EQ(msg("\x01 1\n"), "line 1: expected a metric name, found '\x01'");
  PushLimits small;
  small.max_labels = 2;
  small.max_series_per_push = 2;
  small.max_label_length = 8;
  EXPECT_EQ(msg("a{x=\"1\",y=\"2\",z=\"3\"} 1\n", small), "line 1: more than 2 labels (push.max_labels)");
  EXPECT_EQ(msg("a 1\nb 1\nc 1\n", small), "line 3: more than 2 series in one push (push.max_series_per_push)");
  EXPECT_EQ(msg("a{x=\"123456789\"} 1\n", small), "line 1: label x longer than 8 bytes (push.max_label_length)");
}

// Shaped like opentelemetry-proto's examples/metrics.json.
constexpr std::string_view kOtlp = R"({
  "resourceMetrics": [{
    "resource": {"attributes": [
      {"key": "service.name", "value": {"stringValue": "my.service"}},
      {"key": "process.pid", "value": {"intValue": "4242"}}]},
    "scopeMetrics": [{
      "scope": {"name": "my.library", "version": "1.0.0", "attributes": [{"key": "my.scope.attribute", "value": {"stringValue": "x"}}]},
      "metrics": [
        {"name": "gpu_allocator_retries", "unit": "1", "description": "retries",
         "sum": {"aggregationTemporality": 2, "isMonotonic": true,
                 "dataPoints": [{"asInt": "5", "startTimeUnixNano": "1544712660300000000", "timeUnixNano": "1544712660300000000",
                                 "attributes": [{"key": "gpu.uuid", "value": {"stringValue": "GPU-1"}}]}]}},
        {"name": "gpu.memory.fragmentation.ratio", "unit": "1",
         "gauge": {"dataPoints": [{"asDouble": 0.61, "timeUnixNano": "1544712660300000000",
                                   "attributes": [{"key": "gpu.uuid", "value": {"stringValue": "GPU-1"}},
                                                  {"key": "big", "value": {"intValue": 9007199254740993}}]}]}},
        {"name": "my.histogram", "unit": "1",
         "histogram": {"aggregationTemporality": 1, "dataPoints": [{"count": "2", "bucketCounts": ["1","1"], "explicitBounds": [1]}]}}
      ]}]}]})";

TEST(PushOtlp, AcceptsGaugesAndSumsShapedLikeTheSpecExamples) {
  auto r = parse_otlp_json(kOtlp, kLimits);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->resources.size(), 1u);
  const auto& res = r->resources[0];
  EXPECT_EQ(res.attributes, (LabelPairs{{"service_name", "my.service"}, {"process_pid", "4242"}}));
  ASSERT_EQ(res.samples.size(), 2u);
  EXPECT_EQ(res.samples[0].name, "gpu_allocator_retries_total");
  EXPECT_EQ(res.samples[0].type, "counter");
  EXPECT_EQ(res.samples[0].value, 5);
  EXPECT_EQ(res.samples[0].labels, (LabelPairs{{"gpu_uuid", "GPU-1"}}));
  EXPECT_EQ(res.samples[1].name, "gpu_memory_fragmentation_ratio");
  EXPECT_DOUBLE_EQ(res.samples[1].value, 0.61);
  EXPECT_EQ(res.samples[1].labels[1].second, "9007199254740993");
  EXPECT_EQ(r->rejected_points, 1u);
  EXPECT_NE(r->rejected_message.find("histogram points are not accepted"), std::string::npos) << r->rejected_message;
}

TEST(PushOtlp, BadJsonNamesWhere) {
  auto msg = [](std::string_view b) {
    auto r = parse_otlp_json(b, kLimits);
    return r.ok() ? std::string("accepted") : r.status().message();
  };
  EXPECT_NE(msg("{\"resourceMetrics\": [").find("not valid JSON"), std::string::npos);
  EXPECT_EQ(msg("[]"), "OTLP JSON body is not an object");
  EXPECT_EQ(msg("{\"resourceMetrics\": 3}"), "resourceMetrics is not an array");
  EXPECT_EQ(msg(R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"gauge":{"dataPoints":[]}}]}]}]})"),
            "resourceMetrics[0].scopeMetrics[0].metrics[0]: metric has no name");
  EXPECT_EQ(msg(R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"a","gauge":{"dataPoints":[{"asDouble":"x"}]}}]}]}]})"),
            "resourceMetrics[0].scopeMetrics[0].metrics[0].dataPoints[0]: asDouble is not a number");
  EXPECT_EQ(msg(R"({"resourceMetrics":[{"resource":{"attributes":{}}}]})"),
            "resourceMetrics[0].resource: attributes is not an array");
  EXPECT_EQ(msg("{}"), "accepted");  // an empty request is a success
  auto delta = parse_otlp_json(
      R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"a","sum":{"aggregationTemporality":1,"dataPoints":[{"asInt":"1"}]}}]}]}]})",
      kLimits);
  ASSERT_TRUE(delta.ok());
  EXPECT_EQ(delta->rejected_points, 1u);
  EXPECT_NE(delta->rejected_message.find("delta sums are not accepted"), std::string::npos);
}

}  // namespace
}  // namespace gpulens::push
