// Parser of the stand-in NVML script; see script.h.
#include "sources/nvml/testing/script.h"

#include <cstdio>
#include <cstdlib>

#include "util/fake_script.h"

namespace gpulens::fake {
using script::split_kv;

int error_code(const std::string& name) {
  static const std::map<std::string, int> kCodes{
      {"SUCCESS", 0},           {"UNINITIALIZED", 1},     {"INVALID_ARGUMENT", 2},
      {"NOT_SUPPORTED", 3},     {"NO_PERMISSION", 4},     {"NOT_FOUND", 6},
      {"INSUFFICIENT_SIZE", 7}, {"DRIVER_NOT_LOADED", 9}, {"TIMEOUT", 10},
      {"FUNCTION_NOT_FOUND", 13}, {"GPU_IS_LOST", 15},    {"RESET_REQUIRED", 16},
      {"ARGUMENT_VERSION_MISMATCH", 25}, {"UNKNOWN", 999}};
  return script::code_named(kCodes, "NVML_ERROR_", name);
}

bool parse_script(const std::string& text, Script& out, std::string& error) {
  script::Lines lines(text);
  auto fail = [&](const std::string& why) { return lines.fail(error, why); };
  // Applies f to GPU `sel` (a number or '*').
  auto each = [&](const std::string& sel, auto f) -> bool {
    if (sel == "*") {
      for (auto& g : out.gpus) f(g);
      return true;
    }
    const long i = script::device_number(sel, out.gpus.size());
    if (i < 0) return false;
    f(out.gpus[i]);
    return true;
  };
  std::vector<std::string> t;
  while (lines.next(t)) {
    const std::string& d = t[0];
    std::string k, v;
    if (d == "init" && t.size() == 2) {
      out.init_error = error_code(t[1]);
      if (out.init_error < 0) return fail("unknown error " + t[1]);
    } else if (d == "driver" && t.size() == 2) {
      out.driver = t[1];
    } else if (d == "cuda" && t.size() == 2) {
      out.cuda = std::atoi(t[1].c_str());
    } else if (d == "gpu" && t.size() >= 2) {
      if (std::atoi(t[1].c_str()) != static_cast<int>(out.gpus.size())) return fail("gpus must be numbered 0, 1, ...");
      Gpu g;
      g.uuid = "GPU-" + std::to_string(out.gpus.size()) + "0000000-fake";
      char pci[32];
      std::snprintf(pci, sizeof pci, "00000000:%02zX:00.0", 0x18 + out.gpus.size());
      g.pci = pci;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected key=value, got " + t[i]);
        if (k == "name") g.name = v;
        else if (k == "uuid") g.uuid = v;
        else if (k == "pci") g.pci = v;
        else if (k == "serial") g.serial = v;
        else if (k == "arch") g.arch = static_cast<unsigned>(std::atoi(v.c_str()));
        else if (k == "gpm") g.gpm = v == "on";
        else return fail("unknown gpu attribute " + k);
      }
      out.gpus.push_back(std::move(g));
    } else if (d == "value" && t.size() >= 4) {
      std::vector<double> vals;
      for (size_t i = 3; i < t.size(); ++i) vals.push_back(std::strtod(t[i].c_str(), nullptr));
      if (!each(t[1], [&](Gpu& g) { g.values[t[2]] = vals; })) return fail("no gpu " + t[1]);
    } else if (d == "error" && t.size() >= 4) {
      Rule r;
      r.code = error_code(t[3]);
      if (r.code < 0) return fail("unknown error " + t[3]);
      if (t.size() > 4 && split_kv(t[4], k, v) && k == "from") r.from = std::atol(v.c_str());
      if (!each(t[1], [&](Gpu& g) { g.errors[t[2]] = r; })) return fail("no gpu " + t[1]);
    } else if (d == "hang" && t.size() >= 4) {
      long ms = std::atol(t[3].c_str()), times = 0;
      if (t.size() > 4 && split_kv(t[4], k, v) && k == "times") times = std::atol(v.c_str());
      if (!each(t[1], [&](Gpu& g) { g.hang_ms[t[2]] = {ms, times}; })) return fail("no gpu " + t[1]);
    } else if (d == "lost" && t.size() == 3 && split_kv(t[2], k, v) && k == "at") {
      long at = std::atol(v.c_str());
      if (!each(t[1], [&](Gpu& g) { g.lost_at = at; })) return fail("no gpu " + t[1]);
    } else if (d == "process" && t.size() >= 3) {
      Process p;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected key=value, got " + t[i]);
        if (k == "pid") p.pid = static_cast<unsigned>(std::atol(v.c_str()));
        else if (k == "mem") p.mem = std::strtoull(v.c_str(), nullptr, 10);
        else if (k == "sm") p.sm = static_cast<unsigned>(std::atol(v.c_str()));
        else if (k == "gi") p.gi = std::atoi(v.c_str());
        else if (k == "ci") p.ci = std::atoi(v.c_str());
        else return fail("unknown process attribute " + k);
      }
      if (!each(t[1], [&](Gpu& g) { g.processes.push_back(p); })) return fail("no gpu " + t[1]);
    } else if (d == "topology" && t.size() == 4) {
      static const std::map<std::string, unsigned> kLevels{{"INTERNAL", 0}, {"PIX", 10}, {"PXB", 20},
                                                           {"PHB", 30},      {"NODE", 40}, {"SYS", 50}};
      auto lv = kLevels.find(t[3]);
      if (lv == kLevels.end()) return fail("unknown topology level " + t[3]);
      int a = std::atoi(t[1].c_str()), b = std::atoi(t[2].c_str());
      if (a < 0 || b < 0 || a >= static_cast<int>(out.gpus.size()) || b >= static_cast<int>(out.gpus.size()))
        return fail("no such gpu pair");
      out.gpus[a].topology[b] = lv->second;
      out.gpus[b].topology[a] = lv->second;
    } else if (d == "nvlink" && t.size() >= 3) {
      int link = -1, peer = -1;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected key=value, got " + t[i]);
        if (k == "link") link = std::atoi(v.c_str());
        else if (k == "peer") peer = std::atoi(v.c_str());
      }
      if (link < 0) return fail("nvlink needs link=N");
      if (!each(t[1], [&](Gpu& g) { g.nvlink_peer[link] = peer; })) return fail("no gpu " + t[1]);
    } else if (d == "mig" && t.size() >= 3) {
      int mode = -1, pending = -1;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v) || (v != "on" && v != "off")) return fail("expected mode=on|off pending=on|off");
        if (k == "mode") mode = v == "on" ? 1 : 0;
        else if (k == "pending") pending = v == "on" ? 1 : 0;
        else return fail("unknown mig attribute " + k);
      }
      if (mode < 0) return fail("mig needs mode=on|off");
      if (pending < 0) pending = mode;
      if (!each(t[1], [&](Gpu& g) { g.mig_mode = mode; g.mig_pending = pending; })) return fail("no gpu " + t[1]);
    } else if (d == "instance" && t.size() >= 3) {
      MigDevice m;
      bool uuid = false;
      for (size_t i = 2; i < t.size(); ++i) {
        if (!split_kv(t[i], k, v)) return fail("expected key=value, got " + t[i]);
        if (k == "gi") m.gi = static_cast<unsigned>(std::atol(v.c_str()));
        else if (k == "ci") m.ci = static_cast<unsigned>(std::atol(v.c_str()));
        else if (k == "profile") m.profile = v;
        else if (k == "uuid") {
          m.uuid = v;
          uuid = true;
        }
        else if (k == "mem") m.mem = std::strtoull(v.c_str(), nullptr, 10);
        else if (k == "used") m.used = std::strtoull(v.c_str(), nullptr, 10);
        else return fail("unknown instance attribute " + k);
      }
      if (!each(t[1], [&](Gpu& g) {
            MigDevice x = m;
            x.parent = static_cast<int>(&g - out.gpus.data());
            if (!uuid) x.uuid = "MIG-" + std::to_string(x.parent) + "-" + std::to_string(x.gi) + "-" + std::to_string(x.ci) + "-fake";
            g.migs.push_back(x);
          })) {
        return fail("no gpu " + t[1]);
      }
    } else if (d == "xid" && t.size() == 3) {
      unsigned long long code = std::strtoull(t[2].c_str(), nullptr, 10);
      if (!each(t[1], [&](Gpu& g) { g.xids.push_back(code); })) return fail("no gpu " + t[1]);
    } else {
      return fail("cannot understand '" + lines.line() + "'");
    }
  }
  return true;
}

}  // namespace gpulens::fake
