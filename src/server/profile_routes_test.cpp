// The profile routes: off without push, token, parsing, the client's round trip.
#include "server/profile_routes.h"

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
  EXPECT_NE(r.call("POST", "/api/v1/profile", R"({"pid":1,"gpu":0})").body.find("unknown key"), std::string::npos);
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
