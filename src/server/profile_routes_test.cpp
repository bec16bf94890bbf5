// The profile routes: off without push, token, parsing, the client's round trip.
#include "server/profile_routes.h"
#include "model/testing/label_text.h"

#include <gtest/gtest.h>

namespace gpulens {
namespace {

struct Routes {
  std::shared_ptr<push::PushStore> store;
  push::ProfileTable table;
  explicit Routes(std::string token = "") {
    push::PushOptions o;
    o.token = std::move(token);
    store = std::make_shared<push::PushStore>(o);
  }
  ServerResponse call(std::string_view method, std::string_view path, std::string_view body = "",
                      std::string_view query = "", std::string_view auth = "",
                      std::string_view type = "application/json") {
    ServerRequest req;
    req.method = method;
    req.path = path;
    req.query = query;
    req.body = body;
    req.content_type = type;
    req.authorization = auth;
    ServerResponse res;
    EXPECT_TRUE(handle_profile_route(store.get(), &table, req, res, 1000));
    return res;
  }
};

std::string id_of(const std::string& body) {
  auto b = body.find("\"id\":\"") + 6;
  return body.substr(b, body.find('"', b) - b);
}

TEST(ProfileRoutes, OffWithoutPush) {
  ServerRequest req;
  req.method = "POST";
  req.path = "/api/v1/profile";
  ServerResponse res;
  ASSERT_TRUE(handle_profile_route(nullptr, nullptr, req, res, 0));
  EXPECT_EQ(res.status, 404);
  EXPECT_NE(res.body.find("--push"), std::string::npos);
  req.path = "/api/v1/profiles";
  EXPECT_FALSE(handle_profile_route(nullptr, nullptr, req, res, 0));
}

TEST(ProfileRoutes, RoundTrip) {
  Routes r;
  auto made = r.call("POST", "/api/v1/profile", R"({"pid":42,"kind":"stacks","duration_s":2})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = id_of(made.body);
  EXPECT_EQ(r.call("GET", "/api/v1/profile/next", "", "pid=41").status, 204);
  auto next = r.call("GET", "/api/v1/profile/next", "", "pid=42");
  ASSERT_EQ(next.status, 200);
  EXPECT_NE(next.body.find("\"duration_s\":2"), std::string::npos) << next.body;
  EXPECT_EQ(r.call("GET", "/api/v1/profile/" + id + "/result").status, 409);
  EXPECT_EQ(*profile_body_limit(&r.table, "POST", "/api/v1/profile/" + id + "/result"), 16u << 20);
  EXPECT_EQ(r.call("POST", "/api/v1/profile/" + id + "/result", R"({"samples":3})").status, 204);
  auto st = r.call("GET", "/api/v1/profile/" + id);
  EXPECT_NE(st.body.find("\"state\":\"done\""), std::string::npos) << st.body;
  auto res = r.call("GET", "/api/v1/profile/" + id + "/result");
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, R"({"samples":3})");
  EXPECT_EQ(res.content_type, "application/json");
}

// GPU 0 runs pids 10 and 11 (the driver's list), GPU 1 runs 20, GPU 2 none.
struct GpuRoutes : Routes {
  SeriesRegistry registry;
  LiveStore live;
  GpuRoutes() {
    for (int g = 0; g < 3; ++g) registry.set_gpu(g, {.uuid = "GPU-" + std::to_string(g), .name = "NVIDIA H200"});
    const int src = live.add_source("nvml", false);
    Frame f(registry);
    f.clear(0);
    f.set(FieldId::kGpuProcessMemoryUsed, 0, testing::labels_from_text(R"(pid="10",namespace="",pod="",container="")"), 1e9);
    f.set(FieldId::kGpuProcessMemoryUsed, 0, testing::labels_from_text(R"(pid="11",namespace="",pod="",container="")"), 1e9);
    f.set(FieldId::kGpuProcessMemoryUsed, 1, testing::labels_from_text(R"(pid="20",namespace="",pod="",container="")"), 1e9);
    live.publish(src, f);
    store->attach(registry, live);
  }
};

TEST(ProfileRoutes, GpuPicksItsOneClientProcess) {
  GpuRoutes r;
  auto none = r.call("POST", "/api/v1/profile", R"({"gpu":1})");
  EXPECT_EQ(none.status, 404);  // pid 20 runs there, but no client of it polls
  EXPECT_NE(none.body.find("processes on GPU 1: 20; none polled"), std::string::npos) << none.body;
  r.call("GET", "/api/v1/profile/next", "", "pid=20");
  r.call("GET", "/api/v1/profile/next", "", "pid=99");  // a client on no GPU
  auto made = r.call("POST", "/api/v1/profile", R"({"gpu":1,"duration_s":2})");
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_NE(made.body.find("\"pid\":20}"), std::string::npos) << made.body;
  auto next = r.call("GET", "/api/v1/profile/next", "", "pid=20");
  EXPECT_EQ(next.status, 200);
  EXPECT_NE(next.body.find("\"pid\":20"), std::string::npos) << next.body;
}

TEST(ProfileRoutes, GpuWithSeveralOrNoClientsOrNoSuchGpu) {
  GpuRoutes r;
  r.call("GET", "/api/v1/profile/next", "", "pid=10");
  r.call("GET", "/api/v1/profile/next", "", "pid=11");
  auto several = r.call("POST", "/api/v1/profile", R"({"gpu":0})");
  EXPECT_EQ(several.status, 409);
  EXPECT_NE(several.body.find("pids 10, 11; choose one with --pid"), std::string::npos) << several.body;
  auto empty = r.call("POST", "/api/v1/profile", R"({"gpu":2})");
  EXPECT_EQ(empty.status, 404);
  EXPECT_NE(empty.body.find("no process on GPU 2 that this agent knows of"), std::string::npos) << empty.body;
  auto missing = r.call("POST", "/api/v1/profile", R"({"gpu":3})");
  EXPECT_EQ(missing.status, 400);
  EXPECT_NE(missing.body.find("no GPU 3 on this node (GPUs 0-2)"), std::string::npos) << missing.body;
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"gpu":0,"pid":10})").status, 400);
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"gpu":-1})").status, 400);
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"kind":"stacks"})").status, 400);
}

TEST(ProfileRoutes, TheClientSaysWhatItsWindowWas) {
  Routes r;
  auto made = r.call("POST", "/api/v1/profile", R"({"pid":42,"duration_s":60,"steps":5})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = id_of(made.body);
  auto next = r.call("GET", "/api/v1/profile/next", "", "pid=42");
  EXPECT_NE(next.body.find("\"steps\":5"), std::string::npos) << next.body;
  EXPECT_EQ(r.call("POST", "/api/v1/profile/" + id + "/result", "{}", "window_s=1.25&steps=5").status, 204);
  auto st = r.call("GET", "/api/v1/profile/" + id);
  EXPECT_NE(st.body.find("\"steps\":5,\"state\":\"done\""), std::string::npos) << st.body;
  EXPECT_NE(st.body.find("\"window_s\":1.25,\"steps_done\":5"), std::string::npos) << st.body;
  // A result without (or with a bad) window: nothing said, the result kept.
  const std::string id2 = id_of(r.call("POST", "/api/v1/profile", R"({"pid":43})").body);
  r.call("GET", "/api/v1/profile/next", "", "pid=43");
  EXPECT_EQ(r.call("POST", "/api/v1/profile/" + id2 + "/result", "{}", "window_s=x&steps=-3").status, 204);
  auto st2 = r.call("GET", "/api/v1/profile/" + id2);
  EXPECT_NE(st2.body.find("\"state\":\"done\""), std::string::npos) << st2.body;
  EXPECT_EQ(st2.body.find("window_s"), std::string::npos) << st2.body;
  EXPECT_EQ(st2.body.find("steps_done"), std::string::npos) << st2.body;
}

TEST(ProfileRoutes, ClientError) {
  Routes r;
  const std::string id = id_of(r.call("POST", "/api/v1/profile", R"({"pid":9,"kind":"torch"})").body);
  r.call("GET", "/api/v1/profile/next", "", "pid=9");
  EXPECT_EQ(r.call("POST", "/api/v1/profile/" + id + "/error", "torch is not imported", "", "", "text/plain").status,
            204);
  auto st = r.call("GET", "/api/v1/profile/" + id);
  EXPECT_NE(st.body.find("\"state\":\"failed\""), std::string::npos) << st.body;
  EXPECT_NE(st.body.find("torch is not imported"), std::string::npos);
}

TEST(ProfileRoutes, BadRequestsNameTheProblem) {
  Routes r;
  EXPECT_NE(r.call("POST", "/api/v1/profile", "{").body.find("not JSON"), std::string::npos);
  EXPECT_NE(r.call("POST", "/api/v1/profile", "{}").body.find("pid is required"), std::string::npos);
  EXPECT_NE(r.call("POST", "/api/v1/profile", R"({"pid":"x"})").body.find("pid must be"), std::string::npos);
  EXPECT_NE(r.call("POST", "/api/v1/profile", R"({"pid":1,"gpus":0})").body.find("unknown key"), std::string::npos);
  EXPECT_NE(r.call("POST", "/api/v1/profile", R"({"pid":1,"gpu":0})").body.find("give pid or gpu, not both"),
            std::string::npos);
  EXPECT_NE(r.call("POST", "/api/v1/profile", R"({"pid":1,"steps":-1})").body.find("steps must be"), std::string::npos);
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"pid":1,"kind":"perf"})").status, 400);
  EXPECT_EQ(r.call("GET", "/api/v1/profile").status, 405);
  EXPECT_EQ(r.call("GET", "/api/v1/profile/next", "", "pid=x").status, 400);
  EXPECT_EQ(r.call("GET", "/api/v1/profile/next", "", "pod=1").status, 400);
  EXPECT_EQ(r.call("GET", "/api/v1/profile/nope").status, 404);
  EXPECT_EQ(r.call("POST", "/api/v1/profile/nope/result", "x").status, 404);
  EXPECT_EQ(r.call("DELETE", "/api/v1/profile/nope").status, 405);
}

TEST(ProfileRoutes, TokenAsForPush) {
  Routes r("s3cret");
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"pid":1})").status, 401);
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"pid":1})", "", "Bearer wrong").status, 401);
  EXPECT_EQ(r.call("GET", "/api/v1/profile/next", "", "pid=1").status, 401);
  EXPECT_EQ(r.call("POST", "/api/v1/profile", R"({"pid":1})", "", "Bearer s3cret").status, 201);
}

}  // namespace
}  // namespace gpulens
