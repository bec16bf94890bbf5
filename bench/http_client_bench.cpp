// CPU of the outgoing HTTP client per request, as the agent spends it on
// each scrape of a target (GET of a 64 KiB page) and each remote_write batch
// (POST of a 32 KiB body answered 204), over plain HTTP and TLS, three ways:
// our client keeping connections alive (now), our client with a connection
// per request (Connection: close, as before issue 23), and libcurl with a
// reused easy handle (it keeps the connection alive too). The server runs in
// a thread of this process; the CPU column is the calling thread's only.
//
//   build/release/bench/http_client_bench --benchmark_min_time=2
//
// libcurl is loaded with dlopen (libcurl.so.4, the OpenSSL flavour on
// Debian); without it its rows are skipped. Not a build dependency.
#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include <benchmark/benchmark.h>

#include "util/http_client.h"
#include "util/testing/http_test_server.h"

namespace gpulens {
namespace {

enum Client { kKeepAlive, kClose, kCurl };
enum Kind { kScrape, kRemoteWrite };

const std::string& page() {
  static const std::string p(64 * 1024, 'x');
  return p;
}
const std::string& batch() {
  static const std::string b(32 * 1024, 'y');
  return b;
}

// The server certificate (for 127.0.0.1) in a temporary directory, made once.
const testing::TestCert& cert() {
  static const testing::TestCert c = [] {
    char dir[] = "/tmp/http-client-bench-XXXXXX";
    if (::mkdtemp(dir) == nullptr) std::abort();
    return testing::make_test_cert(dir);
  }();
  return c;
}

// The few libcurl entry points the comparison needs, declared here (values
// from curl.h, stable ABI).
struct Curl {
  using Handle = void;
  Handle* (*easy_init)();
  int (*easy_setopt)(Handle*, int, ...);
  int (*easy_perform)(Handle*);
  int (*easy_getinfo)(Handle*, int, ...);
  void (*easy_cleanup)(Handle*);
  void* (*slist_append)(void*, const char*);
  static constexpr int kWriteData = 10001, kUrl = 10002, kWriteFunction = 20011, kPostFields = 10015,
                       kPostFieldSize = 60, kHttpHeader = 10023, kHttpGet = 80, kNoSignal = 99, kCaInfo = 10065,
                       kTimeoutMs = 155, kResponseCode = 0x200002;
  static const Curl* load() {
    static const Curl* loaded = []() -> const Curl* {
      void* lib = ::dlopen("libcurl.so.4", RTLD_NOW);
      if (lib == nullptr) return nullptr;
      auto* c = new Curl;
      c->easy_init = reinterpret_cast<Handle* (*)()>(::dlsym(lib, "curl_easy_init"));
      c->easy_setopt = reinterpret_cast<int (*)(Handle*, int, ...)>(::dlsym(lib, "curl_easy_setopt"));
      c->easy_perform = reinterpret_cast<int (*)(Handle*)>(::dlsym(lib, "curl_easy_perform"));
      c->easy_getinfo = reinterpret_cast<int (*)(Handle*, int, ...)>(::dlsym(lib, "curl_easy_getinfo"));
      c->easy_cleanup = reinterpret_cast<void (*)(Handle*)>(::dlsym(lib, "curl_easy_cleanup"));
      c->slist_append = reinterpret_cast<void* (*)(void*, const char*)>(::dlsym(lib, "curl_slist_append"));
      auto global_init = reinterpret_cast<int (*)(long)>(::dlsym(lib, "curl_global_init"));
      if (!c->easy_init || !c->easy_setopt || !c->easy_perform || !c->easy_getinfo || !c->easy_cleanup ||
          !c->slist_append || !global_init || global_init(3) != 0) {
        return nullptr;
      }
      return c;
    }();
    return loaded;
  }
};

size_t collect(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

void BM_Request(benchmark::State& state) {
  const auto client_kind = static_cast<Client>(state.range(0));
  const auto kind = static_cast<Kind>(state.range(1));
  const bool tls = state.range(2) != 0;
  testing::KeepAliveServer srv(
      {.reply = kind == kScrape ? "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                                      std::to_string(page().size()) + "\r\n\r\n" + page()
                                : "HTTP/1.1 204 No Content\r\n\r\n",
       .cert = tls ? &cert() : nullptr});
  const std::string url = std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(srv.port()) +
                          (kind == kScrape ? "/metrics" : "/api/v1/write");
  const std::vector<std::pair<std::string, std::string>> write_headers = {
      {"Content-Type", "application/x-protobuf"}, {"Content-Encoding", "snappy"},
      {"X-Prometheus-Remote-Write-Version", "0.1.0"}};
  if (client_kind == kCurl) {
    const Curl* curl = Curl::load();
    if (curl == nullptr) {
      state.SkipWithError("libcurl.so.4 not found");
      return;
    }
    void* h = curl->easy_init();
    std::string body;
    curl->easy_setopt(h, Curl::kUrl, url.c_str());
    curl->easy_setopt(h, Curl::kNoSignal, 1L);
    curl->easy_setopt(h, Curl::kTimeoutMs, 10000L);
    curl->easy_setopt(h, Curl::kCaInfo, cert().cert_file.c_str());
    curl->easy_setopt(h, Curl::kWriteFunction, &collect);
    curl->easy_setopt(h, Curl::kWriteData, &body);
    void* headers = nullptr;
    if (kind == kRemoteWrite) {
      for (const auto& [k, v] : write_headers) headers = curl->slist_append(headers, (k + ": " + v).c_str());
      headers = curl->slist_append(headers, "Expect:");  // no 100-continue round trip
      curl->easy_setopt(h, Curl::kHttpHeader, headers);
      curl->easy_setopt(h, Curl::kPostFields, batch().data());
      curl->easy_setopt(h, Curl::kPostFieldSize, static_cast<long>(batch().size()));
    }
    for (auto _ : state) {
      body.clear();
      long code = 0;
      if (curl->easy_perform(h) != 0 || curl->easy_getinfo(h, Curl::kResponseCode, &code) != 0 ||
          code != (kind == kScrape ? 200 : 204)) {
        state.SkipWithError("libcurl request failed");
        break;
      }
    }
    curl->easy_cleanup(h);
  } else {
    HttpClientOptions o{.timeout_ms = 10000, .keep_alive = client_kind == kKeepAlive, .proxy = ProxyOptions{}};
    o.tls.ca_file = cert().cert_file;
    HttpClient client(o);
    for (auto _ : state) {
      Result<HttpResponse> r = kind == kScrape ? client.get(url, {{"Accept", "text/plain"}})
                                               : client.post(url, batch(), write_headers);
      if (!r || r->status != (kind == kScrape ? 200 : 204)) {
        state.SkipWithError(r ? "unexpected status" : r.status().message().c_str());
        break;
      }
    }
  }
  state.counters["connections"] = srv.accepted();
}

void Cases(benchmark::internal::Benchmark* b) {
  b->ArgNames({"client", "kind", "tls"});
  for (int tls : {0, 1}) {
    for (int kind : {kScrape, kRemoteWrite}) {
      for (int client : {kClose, kKeepAlive, kCurl}) b->Args({client, kind, tls});
    }
  }
}
BENCHMARK(BM_Request)->Apply(Cases);

}  // namespace
}  // namespace gpulens

BENCHMARK_MAIN();
