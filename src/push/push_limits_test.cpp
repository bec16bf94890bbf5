// The push receiver against hostile pushes: every label and value goes
// through the one rule (model/label_rules.h) and is refused with a 400 naming
// it; groups that would overwrite each other's series are refused; the
// series budgets (per group, per job, in total) hold both sides of their
// limit and count removed series until the history has freed them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "model/series_budget.h"
#include "push/push_store.h"

namespace gpulens::push {
namespace {

struct Receiver {
  SeriesRegistry registry;
  std::shared_ptr<PushStore> store;
  explicit Receiver(PushLimits limits = {}) {
    registry.set_gpu(0, {.uuid = "GPU-aaaa", .name = "NVIDIA H200"});
    PushOptions o;
    o.check_pids = false;
    o.limits = limits;
    store = std::make_shared<PushStore>(o);
    store->attach(registry);
  }
  PushAnswer put(std::string_view path, std::string_view body, int64_t now = 1000) {
    return store->pushgateway("PUT", path, body, now);
  }
  // "name{labels}" -> value of what the store exports at `now`.
  std::map<std::string, double> exported(int64_t now = 2000) {
    Frame f(registry);
    f.clear(now);
    store->fill(f);
    std::map<std::string, double> out;
    for (const auto& v : f.values()) {
      const Series& s = registry.series(v.slot);
      out[std::string(field(s.field).name) + "{" + s.extra.render() + "}"] = v.value;
    }
    return out;
  }
};

std::string frag(std::string_view labels, std::string_view value = "0.5") {
  return "gpu_memory_fragmentation_ratio{gpu_uuid=\"GPU-aaaa\"" + std::string(labels.empty() ? "" : ",") +
         std::string(labels) + "} " + std::string(value) + "\n";
}

TEST(PushLimits, InvalidUtf8LabelValueIsRefusedNamingTheLabel) {
  Receiver r;
  auto a = r.put("/metrics/job/j", frag("pool=\"ok\xc3\x28\""));
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("line 1"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("\"pool\""), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("UTF-8"), std::string::npos) << a.body;
  EXPECT_EQ(r.put("/metrics/job/j", frag("pool=\"\xc3\xa9t\xc3\xa9\"")).status, 200) << "valid UTF-8 passes";
  auto e = r.exported();
  EXPECT_EQ(e["gpulens_series_dropped_total{reason=\"label_utf8\",source=\"push\"}"], 1);
  EXPECT_EQ(e["gpulens_push_rejected_total{reason=\"label_utf8\"}"], 1);
}

TEST(PushLimits, Base64PathValuesGoThroughTheSameRule) {
  Receiver r;
  // "/w" and "\xff" in URL-safe base64.
  EXPECT_EQ(r.put("/metrics/job@base64/L3c/pool@base64/_w", frag("")).status, 400);
  EXPECT_EQ(r.put("/metrics/job@base64/L3c", frag("")).status, 200) << "job \"/w\" is valid UTF-8";
}

TEST(PushLimits, LabelCountAndLengthBothSides) {
  PushLimits l;
  l.max_labels = 4;  // job + gpu_uuid + 2
  l.max_label_length = 16;
  Receiver r(l);
  EXPECT_EQ(r.put("/metrics/job/j", frag("a=\"1\",b=\"2\"")).status, 200);
  EXPECT_EQ(r.put("/metrics/job/j", frag("a=\"1\",b=\"2\",c=\"3\"")).status, 400);
  EXPECT_EQ(r.put("/metrics/job/j", frag("a=\"" + std::string(16, 'x') + "\"")).status, 200);
  auto a = r.put("/metrics/job/j", frag("a=\"" + std::string(17, 'x') + "\""));
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("16"), std::string::npos) << a.body;
}

TEST(PushLimits, NegativeAndInfiniteValuesAreRefused) {
  Receiver r;
  EXPECT_EQ(r.put("/metrics/job/j", "gpu_allocator_retries_total{gpu_uuid=\"GPU-aaaa\"} 0\n").status, 200);
  auto a = r.put("/metrics/job/j", "gpu_allocator_retries_total{gpu_uuid=\"GPU-aaaa\"} -1\n");
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("negative"), std::string::npos) << a.body;
  EXPECT_EQ(r.put("/metrics/job/j", "gpu_allocator_retries_total{gpu_uuid=\"GPU-aaaa\"} +Inf\n").status, 400);
  EXPECT_EQ(r.put("/metrics/job/j", frag("", "-Inf")).status, 400);
  EXPECT_EQ(r.put("/metrics/job/j", frag("", "-0.5")).status, 200) << "a negative gauge is in range";
}

std::string otlp(std::string_view attrs, std::string_view point) {
  return R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"gpu.uuid","value":{"stringValue":"GPU-aaaa"}})" +
         std::string(attrs) +
         R"(]},"scopeMetrics":[{"metrics":[{"name":"gpu_allocator_retries_total","sum":{"isMonotonic":true,"aggregationTemporality":2,"dataPoints":[)" +
         std::string(point) + "]}}]}]}]}";
}

TEST(PushLimits, OtlpKeysAndNumbers) {
  Receiver r;
  EXPECT_EQ(r.store->otlp_json(otlp("", R"({"asInt":"7"})"), 1000).status, 200);
  auto empty_key = r.store->otlp_json(otlp(R"(,{"key":"","value":{"stringValue":"x"}})", R"({"asInt":"7"})"), 1000);
  EXPECT_EQ(empty_key.status, 400) << empty_key.body;
  auto name = r.store->otlp_json(otlp(R"(,{"key":"__name__","value":{"stringValue":"x"}})", R"({"asInt":"7"})"), 1000);
  EXPECT_EQ(name.status, 400);
  EXPECT_NE(name.body.find("__name__"), std::string::npos) << name.body;
  auto max = r.store->otlp_json(otlp("", R"({"asInt":18446744073709551615})"), 1000);
  EXPECT_EQ(max.status, 400);
  EXPECT_NE(max.body.find("int64 range"), std::string::npos) << max.body;
  EXPECT_EQ(r.store->otlp_json(otlp("", R"({"asInt":"18446744073709551615"})"), 1000).status, 400);
  EXPECT_EQ(r.store->otlp_json(otlp("", R"({"asInt":9223372036854775807})"), 1000).status, 200) << "INT64_MAX is in range";
  EXPECT_EQ(r.store->otlp_json(otlp("", R"({"asInt":"-3"})"), 1000).status, 400) << "negative counter";
  auto e = r.exported();
  EXPECT_EQ(e["gpu_allocator_retries_total{}"], 9223372036854775807.0);
}

TEST(PushLimits, GroupsThatDifferOnlyInJobOrInstanceDoNotOverwriteEachOther) {
  Receiver r;
  ASSERT_EQ(r.put("/metrics/job/a/instance/x", frag("", "0.1")).status, 200);
  auto b = r.put("/metrics/job/b/instance/x", frag("", "0.9"));
  EXPECT_EQ(b.status, 409);
  EXPECT_NE(b.body.find("job=a"), std::string::npos) << b.body;
  auto i = r.put("/metrics/job/a/instance/y", frag("", "0.9"));
  EXPECT_EQ(i.status, 409);
  auto e = r.exported();
  EXPECT_EQ(e["gpu_memory_fragmentation_ratio{}"], 0.1);
  EXPECT_EQ(e["gpulens_push_series{}"], 1);
  // Once the first group is gone, the other may push the series.
  ASSERT_EQ(r.store->pushgateway("DELETE", "/metrics/job/a/instance/x", "", 3000).status, 202);
  EXPECT_EQ(r.put("/metrics/job/b/instance/x", frag("", "0.9"), 3000).status, 200);
  // A series told apart by its own label is no conflict.
  EXPECT_EQ(r.put("/metrics/job/c", frag("rank=\"1\"", "0.3"), 3000).status, 200);
}

std::string pools(int n, std::string_view prefix = "p") {
  std::string body;
  for (int i = 0; i < n; ++i) body += frag("pool=\"" + std::string(prefix) + std::to_string(i) + "\"");
  return body;
}

TEST(PushLimits, TotalBudgetBothSidesAndRemovedSeriesCountUntilReleased) {
  PushLimits l;
  l.max_series = 10;
  Receiver r(l);
  ASSERT_EQ(r.put("/metrics/job/a", pools(6, "a")).status, 200);
  ASSERT_EQ(r.put("/metrics/job/b", pools(4, "b")).status, 200) << "exactly at the budget";
  auto over = r.put("/metrics/job/c", pools(1, "c"));
  EXPECT_EQ(over.status, 429);
  EXPECT_NE(over.body.find("push.max_series"), std::string::npos) << over.body;
  // A re-PUT of the same series adds nothing.
  EXPECT_EQ(r.put("/metrics/job/a", pools(6, "a"), 2000).status, 200);
  // A new PUT with other label values: the removed ones still count (the
  // history keeps them) ...
  EXPECT_EQ(r.put("/metrics/job/a", pools(6, "z"), 3000).status, 429);
  ASSERT_EQ(r.store->pushgateway("DELETE", "/metrics/job/a", "", 3000).status, 202);
  EXPECT_EQ(r.put("/metrics/job/a", pools(6, "z"), 3000).status, 429) << "deleted series are held for a while";
  // ... until the history has released them.
  const int64_t later = 3000 + kHeldAfterRemovalMs;
  EXPECT_EQ(r.put("/metrics/job/a", pools(6, "z"), later).status, 200);
  EXPECT_EQ(r.put("/metrics/job/b", pools(4, "b"), later).status, 200);
}

TEST(PushLimits, PerJobBudgetBothSides) {
  PushLimits l;
  l.max_series_per_job = 5;
  Receiver r(l);
  ASSERT_EQ(r.put("/metrics/job/a/instance/1", pools(3, "x")).status, 200);
  ASSERT_EQ(r.put("/metrics/job/a/instance/2", pools(2, "y")).status, 200) << "exactly at the job's budget";
  auto over = r.put("/metrics/job/a/instance/3", pools(1, "w"));
  EXPECT_EQ(over.status, 429);
  EXPECT_NE(over.body.find("push.max_series_per_job"), std::string::npos) << over.body;
  EXPECT_EQ(r.put("/metrics/job/other", pools(5, "o")).status, 200) << "another job has its own budget";
}

TEST(PushLimits, PushedSeriesAreShortLived) {
  Receiver r;
  ASSERT_EQ(r.put("/metrics/job/a", frag("")).status, 200);
  const uint32_t slot = r.registry.slot(FieldId::kGpuMemoryFragmentation, 0);
  std::lock_guard lock(r.registry.mutex());
  EXPECT_TRUE(r.registry.short_lived(slot));
}

}  // namespace
}  // namespace gpulens::push
