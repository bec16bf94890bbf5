// Parser of the stand-in CUDA script; see script.h.
#include "calibrate/testing/script.h"

#include <cstdio>
#include <cstdlib>

#include "util/fake_script.h"

namespace gpulens::fake_cuda {
using script::split_kv;

int error_code(const std::string& name) {
  static const std::map<std::string, int> kCodes{
      {"SUCCESS", 0},           {"INVALID_VALUE", 1},      {"OUT_OF_MEMORY", 2},   {"NOT_INITIALIZED", 3},
      {"STUB_LIBRARY", 34},     {"DEVICE_UNAVAILABLE", 46}, {"NO_DEVICE", 100},     {"INVALID_DEVICE", 101},
      {"ECC_UNCORRECTABLE", 214}, {"ILLEGAL_ADDRESS", 700}, {"LAUNCH_FAILED", 719}, {"NOT_PERMITTED", 800},
      {"SYSTEM_DRIVER_MISMATCH", 803}, {"UNKNOWN", 999}};
  return script::code_named(kCodes, "CUDA_ERROR_", name);
}

bool parse_script(const std::string& text, Script& out, std::string& error) {
  script::Lines lines(text);
  auto fail = [&](const std::string& why) { return lines.fail(error, why); };
  auto device = [&](const std::string& sel) -> Device* {
    const long i = script::device_number(sel, out.devices.size());
    return i < 0 ? nullptr : &out.devices[i];
  };
  std::vector<std::string> t;
  while (lines.next(t)) {
    const std::string& d = t[0];
    std::string k, v;
    if (d == "init" && t.size() == 2) {
      out.init_error = error_code(t[1]);
      if (out.init_error < 0) return fail("unknown error " + t[1]);
    } else if (d == "driver" && t.size() == 2) {
      out.driver_version = std::atoi(t[1].c_str());
    } else if (d == "device" && t.size() >= 2) {
      if (std::atoi(t[1].c_str()) != static_cast<int>(out.devices.size()))
        return fail("devices must be numbered 0, 1, ...");
      Device dev;
      char buf[64];
      std::snprintf(buf, sizeof buf, "GPU-%08zx-0000-0000-0000-000000000000", out.devices.size());
      dev.uuid = buf;
      std::snprintf(buf, sizeof buf, "0000:%02zx:00.0", 0x18 + out.devices.size());
      dev.pci = buf;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected key=value, got " + t[i]);
        if (k == "uuid") dev.uuid = v;
        else if (k == "pci") dev.pci = v;
        else if (k == "name") dev.name = v;
        else if (k == "mem") dev.mem = std::strtoull(v.c_str(), nullptr, 10);
        else return fail("unknown device attribute " + k);
      }
      out.devices.push_back(std::move(dev));
    } else if (d == "bandwidth" && t.size() >= 4) {
      Device* dev = device(t[1]);
      if (dev == nullptr) return fail("no device " + t[1]);
      auto& table = dev->bandwidth[t[2]];
      for (size_t i = 3; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected size=bytes_per_second, got " + t[i]);
        table[std::strtoull(k.c_str(), nullptr, 10)] = std::strtod(v.c_str(), nullptr);
      }
    } else if (d == "jitter" && t.size() >= 4) {
      Device* dev = device(t[1]);
      if (dev == nullptr) return fail("no device " + t[1]);
      auto& f = dev->jitter[t[2]];
      for (size_t i = 3; i < t.size(); ++i) f.push_back(std::strtod(t[i].c_str(), nullptr));
    } else if (d == "peer" && t.size() >= 3) {
      Device* a = device(t[1]);
      Device* b = device(t[2]);
      if (a == nullptr || b == nullptr || a == b) return fail("no such device pair");
      double bw = 1e10;
      if (t.size() > 3 && split_kv(t[3], k, v) && k == "bandwidth") bw = std::strtod(v.c_str(), nullptr);
      a->peers[std::atoi(t[2].c_str())] = bw;
      b->peers.try_emplace(std::atoi(t[1].c_str()), bw);
    } else if (d == "error" && t.size() == 4) {
      Device* dev = device(t[1]);
      if (dev == nullptr) return fail("no device " + t[1]);
      int code = error_code(t[3]);
      if (code < 0) return fail("unknown error " + t[3]);
      dev->errors[t[2]] = code;
    } else if (d == "fail" && t.size() >= 3) {
      Device* dev = device(t[1]);
      if (dev == nullptr) return fail("no device " + t[1]);
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected key=value, got " + t[i]);
        if (k == "after") dev->fail_after = std::atol(v.c_str());
        else if (k == "code") dev->fail_code = error_code(v);
        else return fail("unknown fail attribute " + k);
      }
      if (dev->fail_code < 0) return fail("unknown error code");
    } else {
      return fail("cannot understand '" + lines.line() + "'");
    }
  }
  return true;
}

}  // namespace gpulens::fake_cuda
