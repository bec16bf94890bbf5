// The push routes take every encoding a Pushgateway client sends: a job
// name in base64 (/metrics/job@base64/...) and a gzip body of several members.
#include "server/push_routes.h"
#include "model/testing/label_text.h"

#include <zlib.h>

#include <gtest/gtest.h>

namespace gpulens {
namespace {

struct Receiver {
  SeriesRegistry registry;
  std::shared_ptr<push::PushStore> store;
  Receiver() {
    registry.set_gpu(0, {.uuid = "GPU-aaaa", .name = "H200"});
    push::PushOptions o;
    o.check_pids = false;
    o.limits.max_body_bytes = 4096;
    store = std::make_shared<push::PushStore>(o);
    store->attach(registry);
  }
  ServerResponse call(std::string_view method, std::string_view path, std::string_view body,
                      std::string_view encoding = "") {
    ServerRequest req;
    req.method = method;
    req.path = path;
    req.body = body;
    req.content_type = "text/plain; version=0.0.4";
    req.content_encoding = encoding;
    ServerResponse res;
    EXPECT_TRUE(handle_push_route(store.get(), req, res, 1000)) << path;
    return res;
  }
  double exported(FieldId id, std::string_view text) {
    const Labels extra = testing::labels_from_text(text);
    Frame f(registry);
    f.clear(2000);
    store->fill(f);
    const uint32_t want = registry.slot(id, 0, extra);
    for (const auto& v : f.values()) {
      if (v.slot == want) return v.value;
    }
    return -1;
  }
};

std::string gzip_member(std::string_view in) {
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

TEST(PushRoutesInput, JobNameInBase64) {
  Receiver r;
  // "a/b" in URL-safe base64 is YS9i.
  const auto res = r.call("PUT", "/metrics/job@base64/YS9i/pool/x",
                          "gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\"} 3\n");
  EXPECT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(r.exported(FieldId::kGpuAllocatorReserved, "pool=\"x\""), 3);
  EXPECT_EQ(r.call("DELETE", "/metrics/job@base64/YS9i/pool/x", "").status, 202);
  EXPECT_EQ(r.exported(FieldId::kGpuAllocatorReserved, "pool=\"x\""), -1);
}

TEST(PushRoutesInput, EveryGzipMemberIsRead) {
  Receiver r;
  const std::string body = gzip_member("gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",pool=\"a\"} 1\n") +
                           gzip_member("gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\",pool=\"b\"} 2\n");
  const auto res = r.call("PUT", "/metrics/job/x", body, "gzip");
  EXPECT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(r.exported(FieldId::kGpuAllocatorReserved, "pool=\"a\""), 1);
  EXPECT_EQ(r.exported(FieldId::kGpuAllocatorReserved, "pool=\"b\""), 2) << "the second member too";
  // A second member cut short is still an error.
  const auto cut = r.call("PUT", "/metrics/job/x", body.substr(0, body.size() - 6), "gzip");
  EXPECT_EQ(cut.status, 400) << cut.body;
  // Bytes after a member that are no gzip member: corrupt, not ignored.
  EXPECT_EQ(r.call("PUT", "/metrics/job/x", gzip_member("gpu_allocator_reserved_bytes{gpu_uuid=\"GPU-aaaa\"} 1\n") + "garbage", "gzip").status, 400);
}

}  // namespace
}  // namespace gpulens
