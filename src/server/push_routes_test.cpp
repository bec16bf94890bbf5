// The push routes check the token, the media type and the encoding before
// the store sees a body; the agent's listener serves them with their limit.
#include "server/push_routes.h"

#include <zlib.h>

#include <gtest/gtest.h>

namespace gpulens {
namespace {

struct Routes {
  SeriesRegistry registry;
  LiveStore live;
  std::shared_ptr<push::PushStore> store;
  explicit Routes(std::string token = "") {
    registry.set_gpu(0, {.uuid = "GPU-aaaa", .name = "H200"});
    push::PushOptions o;
    o.token = std::move(token);
    o.limits.max_body_bytes = 4096;
    store = std::make_shared<push::PushStore>(o);
    store->attach(registry, live);
  }
  ServerResponse call(std::string_view method, std::string_view path, std::string_view body,
                      std::string_view content_type = "text/plain; version=0.0.4", std::string_view encoding = "",
                      std::string_view auth = "") {
    ServerRequest req;
    req.method = method;
    req.path = path;
    req.body = body;
    req.content_type = content_type;
    req.content_encoding = encoding;
    req.authorization = auth;
    ServerResponse res;
    EXPECT_TRUE(handle_push_route(store.get(), req, res, 1000));
    return res;
  }
};

std::string gzip(std::string_view in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  std::string out(compressBound(static_cast<uLong>(in.size())) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

const std::string kBody = "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\"} 1\n";

TEST(PushRoutes, PushgatewayAndOtlp) {
  Routes r;
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", kBody).status, 200);
  EXPECT_EQ(r.call("POST", "/metrics/job/x", kBody, "").status, 200);  // any other type is text
  EXPECT_EQ(r.call("DELETE", "/metrics/job/x", "").status, 202);
  auto res = r.call("POST", "/v1/metrics", "{}", "application/json");
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, "{}\n");
  EXPECT_EQ(r.call("GET", "/v1/metrics", "", "application/json").status, 405);
  EXPECT_EQ(r.call("GET", "/metrics/job/x", "").status, 405);
  ServerRequest other;
  other.path = "/metrics";
  ServerResponse ignored;
  EXPECT_FALSE(handle_push_route(r.store.get(), other, ignored, 0));
}

TEST(PushRoutes, RefusesWhatItCannotRead) {
  Routes r;
  auto res = r.call("PUT", "/metrics/job/x", "x",
                    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited");
  EXPECT_EQ(res.status, 415);
  EXPECT_EQ(res.body, "protobuf pushes are not supported: push text format 0.0.4\n");
  res = r.call("POST", "/v1/metrics", "x", "application/x-protobuf");
  EXPECT_EQ(res.status, 415);
  EXPECT_NE(res.body.find("OTLP/HTTP is taken as JSON only"), std::string::npos);
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", kBody, "", "br").status, 415);
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", gzip(kBody), "", "gzip").status, 200);
  res = r.call("PUT", "/metrics/job/x", "not gzip", "", "gzip");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, "gzip body is corrupt\n");
  res = r.call("PUT", "/metrics/job/x", gzip(std::string(100000, '#')), "", "gzip");  // a gzip bomb, small
  EXPECT_EQ(res.status, 413);
  EXPECT_NE(res.body.find("inflates beyond 4096 bytes"), std::string::npos) << res.body;
  res = r.call("PUT", "/metrics/job/x", gzip(kBody).substr(0, 20), "", "gzip");
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(res.body, "gzip body is truncated\n");
}

TEST(PushRoutes, BearerToken) {
  Routes r("s3cret");
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", kBody).status, 401);
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", kBody, "", "", "Bearer wrong").status, 401);
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", kBody, "", "", "Bearer s3cre").status, 401);
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", kBody, "", "", "Bearer s3cret").status, 200);
  auto res = r.call("POST", "/v1/metrics", "{}", "application/json", "", "Basic abc");
  EXPECT_EQ(res.status, 401);
  EXPECT_EQ(res.body, "{\"code\":16,\"message\":\"push needs Authorization: Bearer <token>\"}\n");
}

TEST(PushRoutes, OffWithoutAStore) {
  ServerRequest req;
  req.method = "PUT";
  req.path = "/metrics/job/x";
  ServerResponse res;
  EXPECT_TRUE(handle_push_route(nullptr, req, res, 0));
  EXPECT_EQ(res.status, 404);
  EXPECT_NE(res.body.find("gpulens serve --push"), std::string::npos);
  EXPECT_FALSE(push_body_limit(nullptr, "PUT", "/metrics/job/x").has_value());
  Routes r;
  EXPECT_EQ(push_body_limit(r.store.get(), "PUT", "/metrics/job/x"), 4096u);
  EXPECT_EQ(push_body_limit(r.store.get(), "DELETE", "/metrics/job/x"), 0u);
  EXPECT_FALSE(push_body_limit(r.store.get(), "POST", "/api/v1/x").has_value());
}

}  // namespace
}  // namespace gpulens
