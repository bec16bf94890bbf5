// A stand-in libcuda.so.1 for tests: the driver-API subset declared in
// cuda_api.h, answering from a script (script.h) named by
// GPULENS_FAKE_CUDA_SCRIPT.
//
// Copies move no data: device pointers are numbers that encode their
// device, and a copy only advances a virtual clock per stream by
// bytes / bandwidth(direction, size) x jitter. The clock is resolved
// lazily, at the first synchronisation after the copies were enqueued, so
// that copies in both directions enqueued on one device before a
// synchronisation run at the scripted bidirectional figures, as concurrent
// copies on two copy engines do. Events read the clock of their stream.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>

#include "calibrate/cuda_api.h"
#include "calibrate/testing/script.h"
#include "util/fake_script.h"

namespace {

using gpulens::fake_cuda::Device;
using gpulens::fake_cuda::Script;
namespace cu = gpulens::cuda;

constexpr int kNoDevice = -1;  // the host

struct Op {
  std::string dir;  // h2d, d2h, peer
  int src = 0, dst = 0;
  unsigned long long bytes = 0;
  double end_ms = 0;
};

struct Stream {
  int device = 0;
  std::vector<Op> ops;
  size_t resolved = 0;
};

struct Event {
  Stream* stream = nullptr;
  size_t upto = 0;  // ops on the stream when recorded
  bool recorded = false;
};

struct Context {
  int device = 0;
  std::vector<int> peers_enabled;
};

struct State {
  std::mutex mu;
  bool init = false;
  Script script;
  std::vector<std::unique_ptr<Context>> contexts;  // per device
  std::vector<unsigned long long> allocated;      // device bytes in use
  std::vector<long> copies;                       // per device
  std::vector<std::map<std::string, size_t>> jitter_pos;
  std::vector<std::unique_ptr<Stream>> streams;
  std::vector<std::unique_ptr<Event>> events;
  unsigned long long next_ptr = 0x1000;
};

State& state() {
  static State s;
  return s;
}

thread_local Context* current = nullptr;

CUdeviceptr make_ptr(int device, unsigned long long offset) {
  return (static_cast<CUdeviceptr>(device + 1) << 48) | offset;
}
int device_of(CUdeviceptr p) { return static_cast<int>(p >> 48) - 1; }

bool valid_device(int d) { return d >= 0 && d < static_cast<int>(state().script.devices.size()); }

// The scripted error of `call` on device `d`, or the failure of a failed device.
CUresult scripted(int d, const std::string& call) {
  auto& s = state();
  if (!s.init) return cu::kErrorNotInitialized;
  if (!valid_device(d)) return cu::kErrorInvalidDevice;
  const Device& dev = s.script.devices[d];
  if (dev.fail_after >= 0 && s.copies[d] > dev.fail_after) return dev.fail_code;
  if (auto e = dev.errors.find(call); e != dev.errors.end()) return e->second;
  return cu::kSuccess;
}

double bandwidth(int d, const std::string& dir, unsigned long long bytes) {
  const Device& dev = state().script.devices[d];
  auto table = dev.bandwidth.find(dir);
  if (table == dev.bandwidth.end() && dir.starts_with("bidir_")) table = dev.bandwidth.find(dir.substr(6));
  if (table == dev.bandwidth.end() || table->second.empty()) return 1e10;
  auto it = table->second.upper_bound(bytes);
  if (it != table->second.begin()) --it;
  return it->second;
}

double jitter(int d, const std::string& dir) {
  auto& s = state();
  const Device& dev = s.script.devices[d];
  auto it = dev.jitter.find(dir);
  if (it == dev.jitter.end() || it->second.empty()) return 1.0;
  size_t& pos = s.jitter_pos[d][dir];
  return it->second[pos++ % it->second.size()];
}

// Runs the enqueued copies of device d on the virtual clocks.
void resolve(int d) {
  auto& s = state();
  bool h2d = false, d2h = false;
  for (auto& st : s.streams) {
    if (st->device != d) continue;
    for (size_t i = st->resolved; i < st->ops.size(); ++i) {
      h2d |= st->ops[i].dir == "h2d";
      d2h |= st->ops[i].dir == "d2h";
    }
  }
  const bool both = h2d && d2h;
  for (auto& st : s.streams) {
    if (st->device != d) continue;
    for (size_t i = st->resolved; i < st->ops.size(); ++i) {
      Op& op = st->ops[i];
      std::string dir = op.dir;
      if (dir == "peer") {
        const Device& src = s.script.devices[op.src];
        auto p = src.peers.find(op.dst);
        double bw = p == src.peers.end() ? 1e9 : p->second;
        double start = i == 0 ? 0 : st->ops[i - 1].end_ms;
        op.end_ms = start + op.bytes / bw * 1e3 * jitter(d, "peer");
        continue;
      }
      if (both) dir = "bidir_" + dir;
      double start = i == 0 ? 0 : st->ops[i - 1].end_ms;
      op.end_ms = start + op.bytes / bandwidth(d, dir, op.bytes) * 1e3 * jitter(d, op.dir);
    }
    st->resolved = st->ops.size();
  }
}

Stream* find_stream(CUstream h) {
  for (auto& st : state().streams) {
    if (reinterpret_cast<CUstream>(st.get()) == h) return st.get();
  }
  return nullptr;
}

Event* find_event(CUevent h) {
  for (auto& e : state().events) {
    if (reinterpret_cast<CUevent>(e.get()) == h) return e.get();
  }
  return nullptr;
}

CUresult enqueue(CUstream h, Op op, int device) {
  auto& s = state();
  Stream* st = find_stream(h);
  if (st == nullptr) return cu::kErrorInvalidHandle;
  if (CUresult rc = scripted(device, "memcpy"); rc != cu::kSuccess) return rc;
  ++s.copies[device];
  st->ops.push_back(std::move(op));
  return cu::kSuccess;
}

}  // namespace

#define FAKE_API extern "C" __attribute__((visibility("default")))

FAKE_API CUresult cuInit(unsigned flags) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (flags != 0) return cu::kErrorInvalidValue;
  // The library may stay loaded between runs in one process (tests): a
  // run starts afresh from the script once the previous run freed its
  // streams.
  if (s.init && !s.streams.empty()) return cu::kSuccess;
  s.init = false;
  std::string text, path;
  if (!gpulens::script::read_script_file("GPULENS_FAKE_CUDA_SCRIPT", text, path)) return cu::kErrorNoDevice;
  Script parsed;
  std::string err;
  if (!gpulens::fake_cuda::parse_script(text, parsed, err)) {
    std::fprintf(stderr, "fake cuda: %s: %s\n", path.c_str(), err.c_str());
    return cu::kErrorUnknown;
  }
  if (parsed.init_error != 0) return parsed.init_error;
  s.script = std::move(parsed);
  const size_t n = s.script.devices.size();
  s.contexts.clear();
  for (size_t i = 0; i < n; ++i) {
    auto c = std::make_unique<Context>();
    c->device = static_cast<int>(i);
    s.contexts.push_back(std::move(c));
  }
  s.allocated.assign(n, 0);
  s.copies.assign(n, 0);
  s.jitter_pos.assign(n, {});
  s.init = true;
  return cu::kSuccess;
}

FAKE_API CUresult cuDriverGetVersion(int* v) {
  if (v == nullptr) return cu::kErrorInvalidValue;
  std::lock_guard lock(state().mu);
  *v = state().init ? state().script.driver_version : 12060;
  return cu::kSuccess;
}

FAKE_API CUresult cuDeviceGetCount(int* count) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (!s.init) return cu::kErrorNotInitialized;
  *count = static_cast<int>(s.script.devices.size());
  return cu::kSuccess;
}

FAKE_API CUresult cuDeviceGet(CUdevice* dev, int ordinal) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (!s.init) return cu::kErrorNotInitialized;
  if (!valid_device(ordinal)) return cu::kErrorInvalidDevice;
  *dev = ordinal;
  return cu::kSuccess;
}

FAKE_API CUresult cuDeviceGetName(char* name, int len, CUdevice d) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (CUresult rc = scripted(d, "name"); rc != cu::kSuccess) return rc;
  std::snprintf(name, static_cast<size_t>(len), "%s", s.script.devices[d].name.c_str());
  return cu::kSuccess;
}

FAKE_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice d) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (CUresult rc = scripted(d, "uuid"); rc != cu::kSuccess) return rc;
  // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx -> 16 bytes; anything else -> zeros.
  std::string hex;
  for (char c : s.script.devices[d].uuid.substr(std::min<size_t>(4, s.script.devices[d].uuid.size()))) {
    if (c != '-') hex += c;
  }
  std::memset(uuid->bytes, 0, sizeof uuid->bytes);
  for (size_t i = 0; i < 16 && 2 * i + 1 < hex.size(); ++i) {
    uuid->bytes[i] = static_cast<char>(std::strtoul(hex.substr(2 * i, 2).c_str(), nullptr, 16));
  }
  return cu::kSuccess;
}

FAKE_API CUresult cuDeviceGetAttribute(int* value, int attr, CUdevice d) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (CUresult rc = scripted(d, "attribute"); rc != cu::kSuccess) return rc;
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  std::sscanf(s.script.devices[d].pci.c_str(), "%x:%x:%x.%x", &domain, &bus, &dev, &fn);
  switch (attr) {
    case cu::kAttrPciDomainId: *value = static_cast<int>(domain); return cu::kSuccess;
    case cu::kAttrPciBusId: *value = static_cast<int>(bus); return cu::kSuccess;
    case cu::kAttrPciDeviceId: *value = static_cast<int>(dev); return cu::kSuccess;
    case cu::kAttrAsyncEngineCount: *value = 3; return cu::kSuccess;
    default: return cu::kErrorInvalidValue;
  }
}

FAKE_API CUresult cuDeviceCanAccessPeer(int* can, CUdevice a, CUdevice b) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (CUresult rc = scripted(a, "peer"); rc != cu::kSuccess) return rc;
  if (!valid_device(b)) return cu::kErrorInvalidDevice;
  *can = s.script.devices[a].peers.contains(b) ? 1 : 0;
  return cu::kSuccess;
}

FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice d) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (CUresult rc = scripted(d, "ctx"); rc != cu::kSuccess) return rc;
  *ctx = reinterpret_cast<CUcontext>(s.contexts[d].get());
  return cu::kSuccess;
}

FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  return valid_device(d) ? cu::kSuccess : cu::kErrorInvalidDevice;
}

FAKE_API CUresult cuCtxSetCurrent(CUcontext ctx) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  for (auto& c : s.contexts) {
    if (reinterpret_cast<CUcontext>(c.get()) == ctx) {
      current = c.get();
      return cu::kSuccess;
    }
  }
  if (ctx == nullptr) {
    current = nullptr;
    return cu::kSuccess;
  }
  return cu::kErrorInvalidContext;
}

FAKE_API CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (current == nullptr) return cu::kErrorInvalidContext;
  if (flags != 0) return cu::kErrorInvalidValue;
  const Context* p = reinterpret_cast<const Context*>(peer);
  if (p == current) return cu::kErrorInvalidContext;
  if (!s.script.devices[current->device].peers.contains(p->device)) return cu::kErrorPeerAccessUnsupported;
  auto& en = current->peers_enabled;
  if (std::find(en.begin(), en.end(), p->device) != en.end()) return cu::kErrorPeerAccessAlreadyEnabled;
  en.push_back(p->device);
  return cu::kSuccess;
}

FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (current == nullptr) return cu::kErrorInvalidContext;
  const int d = current->device;
  if (CUresult rc = scripted(d, "mem_alloc"); rc != cu::kSuccess) return rc;
  if (s.allocated[d] + bytes > s.script.devices[d].mem) return cu::kErrorOutOfMemory;
  s.allocated[d] += bytes;
  *ptr = make_ptr(d, s.next_ptr);
  s.next_ptr += (bytes + 0xFFF) & ~0xFFFull;
  return cu::kSuccess;
}

FAKE_API CUresult cuMemFree_v2(CUdeviceptr) { return cu::kSuccess; }

FAKE_API CUresult cuMemHostAlloc(void** p, size_t bytes, unsigned) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (current == nullptr) return cu::kErrorInvalidContext;
  if (CUresult rc = scripted(current->device, "host_alloc"); rc != cu::kSuccess) return rc;
  *p = std::malloc(bytes);
  return *p == nullptr ? cu::kErrorOutOfMemory : cu::kSuccess;
}

FAKE_API CUresult cuMemFreeHost(void* p) {
  std::free(p);
  return cu::kSuccess;
}

FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream h) {
  std::lock_guard lock(state().mu);
  if (src == nullptr || !valid_device(device_of(dst))) return cu::kErrorInvalidValue;
  return enqueue(h, {.dir = "h2d", .src = kNoDevice, .dst = device_of(dst), .bytes = bytes}, device_of(dst));
}

FAKE_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream h) {
  std::lock_guard lock(state().mu);
  if (dst == nullptr || !valid_device(device_of(src))) return cu::kErrorInvalidValue;
  return enqueue(h, {.dir = "d2h", .src = device_of(src), .dst = kNoDevice, .bytes = bytes}, device_of(src));
}

FAKE_API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t bytes,
                                   CUstream h) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  const int a = device_of(src), b = device_of(dst);
  if (!valid_device(a) || !valid_device(b)) return cu::kErrorInvalidValue;
  if (reinterpret_cast<Context*>(sctx)->device != a || reinterpret_cast<Context*>(dctx)->device != b)
    return cu::kErrorInvalidContext;
  if (CUresult rc = scripted(b, "memcpy"); rc != cu::kSuccess) return rc;
  return enqueue(h, {.dir = "peer", .src = a, .dst = b, .bytes = bytes}, a);
}

FAKE_API CUresult cuStreamCreate(CUstream* h, unsigned) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (current == nullptr) return cu::kErrorInvalidContext;
  if (CUresult rc = scripted(current->device, "stream"); rc != cu::kSuccess) return rc;
  auto st = std::make_unique<Stream>();
  st->device = current->device;
  *h = reinterpret_cast<CUstream>(st.get());
  s.streams.push_back(std::move(st));
  return cu::kSuccess;
}

FAKE_API CUresult cuStreamDestroy_v2(CUstream h) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  auto it = std::find_if(s.streams.begin(), s.streams.end(),
                         [&](const auto& st) { return reinterpret_cast<CUstream>(st.get()) == h; });
  if (it == s.streams.end()) return cu::kErrorInvalidHandle;
  for (auto& e : s.events) {
    if (e->stream == it->get()) e->stream = nullptr;
  }
  s.streams.erase(it);
  return cu::kSuccess;
}

FAKE_API CUresult cuStreamSynchronize(CUstream h) {
  std::lock_guard lock(state().mu);
  Stream* st = find_stream(h);
  if (st == nullptr) return cu::kErrorInvalidHandle;
  if (CUresult rc = scripted(st->device, "sync"); rc != cu::kSuccess) return rc;
  resolve(st->device);
  return cu::kSuccess;
}

FAKE_API CUresult cuEventCreate(CUevent* h, unsigned) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (current == nullptr) return cu::kErrorInvalidContext;
  auto e = std::make_unique<Event>();
  *h = reinterpret_cast<CUevent>(e.get());
  s.events.push_back(std::move(e));
  return cu::kSuccess;
}

FAKE_API CUresult cuEventRecord(CUevent h, CUstream sh) {
  std::lock_guard lock(state().mu);
  Event* e = find_event(h);
  Stream* st = find_stream(sh);
  if (e == nullptr || st == nullptr) return cu::kErrorInvalidHandle;
  if (CUresult rc = scripted(st->device, "event"); rc != cu::kSuccess) return rc;
  e->stream = st;
  e->upto = st->ops.size();
  e->recorded = true;
  return cu::kSuccess;
}

FAKE_API CUresult cuEventSynchronize(CUevent h) {
  std::lock_guard lock(state().mu);
  Event* e = find_event(h);
  if (e == nullptr || !e->recorded || e->stream == nullptr) return cu::kErrorInvalidHandle;
  if (CUresult rc = scripted(e->stream->device, "sync"); rc != cu::kSuccess) return rc;
  resolve(e->stream->device);
  return cu::kSuccess;
}

FAKE_API CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  std::lock_guard lock(state().mu);
  Event* ea = find_event(a);
  Event* eb = find_event(b);
  if (ea == nullptr || eb == nullptr || ea->stream == nullptr || eb->stream == nullptr) return cu::kErrorInvalidHandle;
  if (ea->stream->resolved < ea->upto || eb->stream->resolved < eb->upto) return cu::kErrorNotReady;
  auto at = [](const Event* e) { return e->upto == 0 ? 0.0 : e->stream->ops[e->upto - 1].end_ms; };
  *ms = static_cast<float>(at(eb) - at(ea));
  return cu::kSuccess;
}

FAKE_API CUresult cuEventDestroy_v2(CUevent h) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  auto it = std::find_if(s.events.begin(), s.events.end(),
                         [&](const auto& e) { return reinterpret_cast<CUevent>(e.get()) == h; });
  if (it == s.events.end()) return cu::kErrorInvalidHandle;
  s.events.erase(it);
  return cu::kSuccess;
}
