// The kmsg source: parse_line over the driver's line formats, and the
// reader over files and FIFOs (tail from the end, partial lines, 1 MB lines,
// binary garbage, rotation, truncation, a log that vanishes), the join to
// GPUs by bus id and the count shared with the NVML stand-in.
#include "sources/kmsg.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "util/testing/temp_dir.h"
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "model/frame.h"
#include "sources/sim/sim_source.h"

#ifdef GPULENS_FAKE_NVML
#include "sources/nvml/nvml_source.h"
#endif

namespace gpulens {
namespace {

using kmsg::Kind;
using kmsg::parse_line;

const std::string kFixture = std::string(GPULENS_SOURCE_DIR) + "/tests/data/kmsg/drivers.log";

TEST(KmsgParse, XidLinesOfSeveralDriverGenerations) {
  auto l = parse_line("NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.");
  EXPECT_EQ(l.kind, Kind::kXid);
  EXPECT_EQ(l.bus, "0000:3b:00");
  EXPECT_EQ(l.code, 79);
  EXPECT_EQ(l.message, "GPU has fallen off the bus.");
  EXPECT_EQ(l.usec, -1);

  l = parse_line("NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
  EXPECT_EQ(l.code, 79);
  EXPECT_EQ(l.message, "GPU has fallen off the bus.");

  l = parse_line("[ 5300.123456] NVRM: Xid (PCI:0000:18:00): 31, pid=4242, name=python3, Ch 00000008, intr "
                 "10000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f3a_4a000000.");
  EXPECT_EQ(l.kind, Kind::kXid);
  EXPECT_EQ(l.bus, "0000:18:00");
  EXPECT_EQ(l.code, 31);
  EXPECT_EQ(l.message.substr(0, 13), "Ch 00000008, ");

  // R418: no process at all.
  l = parse_line("Dec  2 01:02:04 node17 kernel: NVRM: Xid (PCI:0000:00:1e): 31, Ch 00000009, engmask 00000101");
  EXPECT_EQ(l.kind, Kind::kXid);
  EXPECT_EQ(l.bus, "0000:00:1e");
  EXPECT_EQ(l.message, "Ch 00000009, engmask 00000101");

  // A /dev/kmsg record with its header; another PCI domain.
  l = parse_line("3,1016,6100000,-;NVRM: Xid (PCI:0008:01:00): 154, GPU recovery action changed from 0x0 (None) "
                 "to 0x1 (Reset Required)");
  EXPECT_EQ(l.kind, Kind::kXid);
  EXPECT_EQ(l.bus, "0008:01:00");
  EXPECT_EQ(l.code, 154);
  EXPECT_EQ(l.usec, 6100000);

  // Without the PCI: prefix, and a code without text.
  l = parse_line("NVRM: Xid (0000:b7:00): 48");
  EXPECT_EQ(l.kind, Kind::kXid);
  EXPECT_EQ(l.bus, "0000:b7:00");
  EXPECT_EQ(l.code, 48);
  EXPECT_EQ(l.message, "");
}

TEST(KmsgParse, SxidAerAndGpuLost) {
  auto l = parse_line("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up");
  EXPECT_EQ(l.kind, Kind::kSxid);
  EXPECT_EQ(l.bus, "0000:07:00");
  EXPECT_EQ(l.code, 20034);
  EXPECT_EQ(l.severity, "fatal");
  EXPECT_EQ(l.message, "Link 30 LTSSM Fault Up");
  l = parse_line("nvidia-nvswitch2: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error");
  EXPECT_EQ(l.severity, "nonfatal");

  l = parse_line("3,1010,5700100,-;nvidia 0000:3b:00.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), "
                 "type=Inaccessible, (Unregistered Agent ID)");
  EXPECT_EQ(l.kind, Kind::kAer);
  EXPECT_EQ(l.bus, "0000:3b:00");
  EXPECT_EQ(l.severity, "fatal");
  EXPECT_EQ(l.driver, "nvidia");
  l = parse_line("[ 1.5] nvidia 0000:18:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, (Receiver ID)");
  EXPECT_EQ(l.kind, Kind::kAer);
  EXPECT_EQ(l.severity, "corrected");
  EXPECT_EQ(l.driver, "nvidia");
  l = parse_line("pcieport 0000:00:03.1: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer");
  EXPECT_EQ(l.severity, "nonfatal");
  EXPECT_EQ(l.driver, "pcieport");
  EXPECT_EQ(l.bus, "0000:00:03");

  l = parse_line("NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.");
  EXPECT_EQ(l.kind, Kind::kGpuLost);
  EXPECT_EQ(l.bus, "0000:3b:00");
  l = parse_line("NVRM: The NVIDIA GPU 0000:5d:00.0 (PCI ID: 10de:2330) installed in this system has fallen off "
                 "the bus and is not responding to commands.");
  EXPECT_EQ(l.kind, Kind::kGpuLost);
  EXPECT_EQ(l.bus, "0000:5d:00");
  l = parse_line("NVRM: GPU at PCI:0000:9a:00: GPU-5ef6e3d4-35fa-d4ae-4cd6-1d8a4d6e4d2f GPU has fallen off the bus.");
  EXPECT_EQ(l.kind, Kind::kGpuLost);
  EXPECT_EQ(l.bus, "0000:9a:00");
}

TEST(KmsgParse, EverythingElseIsNone) {
  for (const char* s : {"", " SUBSYSTEM=pci", " DEVICE=+pci:0000:18:00.0", "6,1001,5000000,-;Linux version 6.1.0",
                        "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08",
                        "NVRM: Xid (PCI:zzzz): 79, bad bus", "NVRM: Xid (PCI:0000:3b:00): x, no code",
                        "NVRM: Xid (PCI:0000:3b:00) 79 no colon", "NVRM: Xid (PCI:0000:3b:00", "SXid ()",
                        "nvidia 0000:3b:00.0: PCIe Bus Error: severity=Weird", "pcieport: PCIe Bus Error: severity=Corrected",
                        "NVRM: GPU has fallen off the bus.", "\x01\x02\xff\xfe NVRM: Xid", "1,2,3;4;5;6"}) {
    EXPECT_EQ(parse_line(s).kind, Kind::kNone) << s;
  }
  // Control bytes and non-ASCII in a message become '?': it is a label value.
  auto l = parse_line("NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=a, bad\x01\xc3\xa9 text");
  EXPECT_EQ(l.kind, Kind::kXid);
  EXPECT_EQ(l.message, "bad??? text");
}

// ---- the reader -------------------------------------------------------------

void append(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::app | std::ios::binary);
  out << text;
}

std::string fixture() {
  std::ifstream in(kFixture, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A source over `path` with GPUs 0 (18:00) and 1 (b7:00) listed by another
// source; values keyed "name{bus|extra}", node series "name{node|extra}".
struct KmsgRun {
  SeriesRegistry reg;
  Frame frame{reg};
  SourceOptions options;
  std::unique_ptr<Source> src;
  explicit KmsgRun(const std::string& path, bool replay = false) {
    reg.set_gpu(0, {.uuid = "GPU-a", .name = "NVIDIA H100", .pci_bus_id = "00000000:18:00.0"});
    reg.set_gpu(1, {.uuid = "GPU-b", .name = "NVIDIA H100", .pci_bus_id = "00000000:B7:00.0"});
    options.kmsg.path = path;
    options.kmsg.replay = replay;
    src = make_kmsg_source(options);
  }
  std::map<std::string, double> sample(Status* st = nullptr) {
    frame.clear(0);
    Status s = src->sample(frame);
    if (st != nullptr) *st = s;
    else EXPECT_TRUE(s.is_ok()) << s.message();
    std::map<std::string, double> out;
    for (const auto& v : frame.values()) {
      const Series& s2 = reg.series(v.slot);
      std::string who = s2.gpu == kNodeEntity ? "node" : reg.gpu(s2.gpu)->pci_bus_id;
      out[std::string(field(s2.field).name) + "{" + who + "|" + s2.extra.render() + "}"] = v.value;
    }
    return out;
  }
};

TEST(KmsgSource, TailsFromTheEndAndReadsEveryFormat) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "3,1,1,-;NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=old, from the previous boot\n");
  KmsgRun r(log);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());
  EXPECT_TRUE(r.sample().empty());  // nothing new yet; the old line is not replayed
  append(log, fixture());
  auto v = r.sample();
  EXPECT_FALSE(v.contains("gpu_xid_errors_total{00000000:18:00.0|xid=\"48\"}"));
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 1);
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"31\"}"], 1);
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"43\"}"], 1);
  EXPECT_EQ(v["gpu_last_xid{00000000:18:00.0|}"], 43);
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:B7:00.0|xid=\"119\"}"], 1);
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:B7:00.0|xid=\"94\"}"], 1);
  EXPECT_EQ(v["gpu_last_xid_info{00000000:B7:00.0|message=\"Contained: SM (0x1). RST: No, D-RST: "
              "No\",path=\"kernel_log\",xid=\"94\"}"],
            1);
  // GPUs no other source lists get their own index, with their bus id.
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:3B:00.0|xid=\"79\"}"], 1);
  EXPECT_EQ(v["gpu_up{00000000:3B:00.0|}"], 0);
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:00:1E.0|xid=\"31\"}"], 1);
  EXPECT_EQ(v["gpu_up{00000000:00:1E.0|}"], 1);
  EXPECT_EQ(v["gpu_xid_errors_total{00000008:01:00.0|xid=\"154\"}"], 1);
  EXPECT_FALSE(v.contains("gpu_up{00000000:18:00.0|}"));  // listed GPUs: their own source says
  EXPECT_EQ(r.reg.gpu_count(), 5);
  // AER of the GPUs only (not the NIC's), SXids per switch.
  EXPECT_EQ(v["gpu_pcie_aer_errors_total{00000000:3B:00.0|severity=\"fatal\"}"], 1);
  EXPECT_EQ(v["gpu_pcie_aer_errors_total{00000000:18:00.0|severity=\"corrected\"}"], 1);
  EXPECT_FALSE(v.contains("gpu_pcie_aer_errors_total{00000000:00:1F.0|severity=\"corrected\"}"));
  EXPECT_EQ(v["nvswitch_sxid_errors_total{node|nvswitch=\"00000000:07:00.0\",severity=\"fatal\",sxid=\"20034\"}"], 1);
  EXPECT_EQ(v["nvswitch_sxid_errors_total{node|nvswitch=\"00000000:07:00.0\",severity=\"nonfatal\",sxid=\"12028\"}"],
            1);
  // Counted once: the next sample reads nothing new and keeps the counts.
  auto again = r.sample();
  EXPECT_EQ(again, v);
}

TEST(KmsgSource, ReplayReadsWhatIsAlreadyThere) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "3,1,1,-;NVRM: Xid (PCI:0000:18:00): 48, pid=1, name=old, DBE\n");
  KmsgRun r(log, true);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());
  EXPECT_EQ(r.sample()["gpu_xid_errors_total{00000000:18:00.0|xid=\"48\"}"], 1);
}

TEST(KmsgSource, PartialLinesWaitForTheirEnd) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "");
  KmsgRun r(log);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());
  append(log, "NVRM: Xid (PCI:0000:18:00): 7");
  EXPECT_TRUE(r.sample().empty());
  append(log, "9, pid=0, GPU has fallen off the bus.\nNVRM: Xid (PCI:00");
  auto v = r.sample();
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"79\"}"], 1);
  append(log, "00:18:00): 13, pid=1, tail\n");
  EXPECT_EQ(r.sample()["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 1);
}

TEST(KmsgSource, MegabyteLinesAndBinaryGarbageAreSkipped) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "");
  KmsgRun r(log);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());
  std::string garbage;
  for (int i = 0; i < 100000; ++i) garbage.push_back(static_cast<char>((i * 7919) % 256));
  append(log, garbage + "\n");
  // A 1 MB line that looks like an XID, written in pieces over two samples.
  const std::string big = "NVRM: Xid (PCI:0000:18:00): 13, " + std::string(1 << 20, 'x');
  append(log, big.substr(0, 600000));
  EXPECT_FALSE(r.sample().contains("gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"));
  append(log, big.substr(600000) + "\nNVRM: Xid (PCI:0000:18:00): 31, pid=1, after the long line\n");
  auto v = r.sample();
  EXPECT_FALSE(v.contains("gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"));
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"31\"}"], 1);
}

TEST(KmsgSource, NulBytesAndNumbersBeyondRangeDoNotBreakTheLine) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "");
  KmsgRun r(log);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());
  const std::string nul(1, '\0');
  append(log, "NVRM: Xid (PCI:0000:18:00): 13, pid=1, a" + nul + "b\n" +
                  "NVRM: Xid (PCI:0000:18:00): 99999999999999999999999, beyond long long\n" + nul + nul + nul +
                  "\nNVRM: Xid (PCI:0000:18:00): 31, after the NULs\n");
  const auto v = r.sample();
  EXPECT_EQ(v.at("gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"), 1);
  EXPECT_EQ(v.at("gpu_xid_errors_total{00000000:18:00.0|xid=\"31\"}"), 1);
  size_t codes = 0;
  for (const auto& [k, val] : v) codes += k.starts_with("gpu_xid_errors_total{") ? 1 : 0;
  EXPECT_EQ(codes, 2u);  // the out-of-range code is no XID
}

TEST(KmsgSource, RotationTruncationAndAVanishedLog) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "unrelated\n");
  KmsgRun r(log);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());
  append(log, "NVRM: Xid (PCI:0000:18:00): 13, one\n");
  EXPECT_EQ(r.sample()["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 1);
  // Rotated: the old file renamed, a new one created; both lines count.
  append(log, "NVRM: Xid (PCI:0000:18:00): 13, two, last line of the old file\n");
  ASSERT_EQ(std::rename(log.c_str(), (log + ".1").c_str()), 0);
  append(log, "NVRM: Xid (PCI:0000:18:00): 13, three, first line of the new file\n");
  EXPECT_EQ(r.sample()["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 3);
  // Truncated in place, then written again.
  { std::ofstream(log, std::ios::trunc) << "NVRM: Xid (PCI:0000:18:00): 13, four\n"; }
  EXPECT_EQ(r.sample()["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 4);
  // Gone: an error naming it, the counts stay; back: read from its start.
  ASSERT_EQ(std::remove(log.c_str()), 0);
  Status st;
  auto v = r.sample(&st);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find(log), std::string::npos) << st.message();
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 4);
  v = r.sample(&st);
  EXPECT_FALSE(st.is_ok());
  append(log, "NVRM: Xid (PCI:0000:18:00): 13, five\n");
  v = r.sample(&st);
  EXPECT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(v["gpu_xid_errors_total{00000000:18:00.0|xid=\"13\"}"], 5);
}

TEST(KmsgSource, MissingLogIsAClearError) {
  gpulens::testing::TestDir d;
  KmsgRun r(d.path() + "/no-such-kmsg");
  Status s = r.src->open(r.reg);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("no-such-kmsg"), std::string::npos) << s.message();
}

// A kernel log the agent may not read is "not applicable" with the reason and
// the privilege it needs: the agent says so once at start and goes on.
TEST(KmsgSource, UnreadableLogIsNotApplicableWithThePrivilegeItNeeds) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "NVRM: Xid (PCI:0000:18:00): 13, pid=1\n");
  ASSERT_EQ(chmod(log.c_str(), 0), 0);
  ASSERT_EQ(chmod(d.path().c_str(), 0755), 0);
  // Root reads a mode-0 file anyway: the check runs in a child as nobody.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(3);
    KmsgRun r(log);
    const Status s = r.src->open(r.reg);
    if (s.code() != Code::kNotApplicable) _exit(1);
    const bool named = s.message().find(log) != std::string::npos && s.message().find("CAP_SYSLOG") != std::string::npos;
    _exit(named ? 0 : 2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: not kNotApplicable, 2: message without the path or CAP_SYSLOG, 3: setuid";
}

TEST(KmsgSource, FifoWithoutWriterNeverBlocks) {
  gpulens::testing::TestDir d;
  const std::string fifo = d.path() + "/kmsg.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  KmsgRun r(fifo);
  ASSERT_TRUE(r.src->open(r.reg).is_ok());  // no writer: open does not wait
  EXPECT_TRUE(r.sample().empty());          // nor does a read
  const int w = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
  ASSERT_GE(w, 0);
  const std::string part1 = "3,5,5,-;NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fa";
  ASSERT_EQ(::write(w, part1.data(), part1.size()), static_cast<ssize_t>(part1.size()));
  EXPECT_TRUE(r.sample().empty());
  const std::string part2 = "llen off the bus.\n";
  ASSERT_EQ(::write(w, part2.data(), part2.size()), static_cast<ssize_t>(part2.size()));
  EXPECT_EQ(r.sample()["gpu_xid_errors_total{00000000:18:00.0|xid=\"79\"}"], 1);
  ::close(w);
  EXPECT_TRUE(r.sample().contains("gpu_xid_errors_total{00000000:18:00.0|xid=\"79\"}"));  // writer gone: still fine
  ASSERT_EQ(std::remove(fifo.c_str()), 0);
  Status st;
  r.sample(&st);
  EXPECT_FALSE(st.is_ok());  // vanished
}

// The simulator's XID 79 travels both paths: the simulated NVML event and
// the driver's kernel-log line, which the kmsg source reads: counted once,
// with the driver's text.
TEST(KmsgSource, SimulatorXid79GoesThroughTheKernelLog) {
  gpulens::testing::TestDir d;
  const std::string log = d.path() + "/kmsg";
  append(log, "");
  SeriesRegistry reg;
  SourceOptions o;
  o.sim.scenario = "xid-79";
  o.sim.scenario_dir = std::string(GPULENS_SOURCE_DIR) + "/scenarios";
  o.sim.kernel_log = log;
  o.kmsg.path = log;
  auto sim_src = make_sim_source(o);
  auto kmsg_src = make_kmsg_source(o);
  ASSERT_TRUE(sim_src->open(reg).is_ok());
  ASSERT_TRUE(kmsg_src->open(reg).is_ok());
  // Frames on the wall clock, as `serve` stamps them: the XID fires 2 minutes
  // in, at the last frame, now.
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count() - 120'000;
  Frame f(reg);
  for (int64_t t = 0; t <= 120'000; t += 10'000) {
    f.clear(now + t);
    ASSERT_TRUE(sim_src->sample(f).is_ok());
  }
  std::ifstream in(log);
  std::string first;
  std::getline(in, first);
  EXPECT_NE(first.find(";NVRM: Xid (PCI:0000:9a:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."),
            std::string::npos)
      << first;
  f.clear(now + 130'000);
  ASSERT_TRUE(kmsg_src->sample(f).is_ok());
  auto g = o.xids->get("00000000:9A:00.0");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->counts.at(79), 1u);  // the event and the line: one XID
  EXPECT_EQ(g->last_message, "GPU has fallen off the bus.");
  EXPECT_EQ(reg.gpu_count(), 8);  // joined to the simulator's GPU 4, no extra GPU
  // The simulator writes the counters (it claims its GPUs), with the text.
  f.clear(now + 131'000);
  ASSERT_TRUE(sim_src->sample(f).is_ok());
  bool info = false;
  for (const auto& v : f.values()) {
    const Series& se = reg.series(v.slot);
    if (se.field == FieldId::kGpuLastXidInfo && se.gpu == 4) {
      info = se.extra.get("message") == "GPU has fallen off the bus.";
    }
  }
  EXPECT_TRUE(info);
}

#ifdef GPULENS_FAKE_NVML
// The XID the NVML stand-in delivers and the kernel log also shows counts
// once; the kernel log's XID 79 on the same GPU (never an NVML event) and a
// bus NVML does not list count too.
TEST(KmsgSource, SharesOneCountWithTheNvmlStandIn) {
  gpulens::testing::TestDir d;
  const std::string script = d.path() + "/nvml.txt";
  std::ofstream(script) << "gpu 0 gpm=off pci=00000000:18:00.0\ngpu 1 gpm=off pci=00000000:B7:00.0\n"
                           "xid 0 13\nvalue 1 recovery_action 2\n";
  setenv("GPULENS_FAKE_NVML_SCRIPT", script.c_str(), 1);
  const std::string log = d.path() + "/kmsg";
  append(log, "");
  SeriesRegistry reg;
  SourceOptions o;
  o.nvml.library = GPULENS_FAKE_NVML;
  o.nvml.sys_root = o.nvml.proc_root = o.nvml.kubelet_root = d.path();
  o.nvml.xid_wait_ms = 20;
  o.kmsg.path = log;
  NvmlSource nvml(o.nvml, o.xids);
  auto kmsg_src = make_kmsg_source(o);
  ASSERT_TRUE(nvml.open(reg).is_ok());
  ASSERT_TRUE(kmsg_src->open(reg).is_ok());
  // Wait for the stand-in's event to be recorded (the XID thread).
  for (int i = 0; i < 500 && !o.xids->get("0000:18:00"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  append(log, "3,1,1,-;NVRM: Xid (PCI:0000:18:00): 13, pid=42, name=python3, Graphics SM Warp Exception\n"
              "3,2,2,-;NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
              "3,3,3,-;NVRM: Xid (PCI:0000:5e:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
  std::map<std::string, double> v;
  // The kernel log first: NVML's next collection then writes what it added.
  for (Source* s : {kmsg_src.get(), static_cast<Source*>(&nvml)}) {
    Frame f(reg);
    f.clear(0);
    (void)s->sample(f);
    for (const auto& x : f.values()) {
      const Series& se = reg.series(x.slot);
      v[std::string(field(se.field).name) + "{" + std::to_string(se.gpu) + "|" + se.extra.render() + "}"] += x.value;
    }
  }
  EXPECT_EQ(v["gpu_xid_errors_total{0|xid=\"13\"}"], 1);  // once, though NVML and the kernel log both saw it
  EXPECT_EQ(v["gpu_xid_errors_total{0|xid=\"79\"}"], 1);  // the kernel log only
  EXPECT_EQ(v["gpu_last_xid{0|}"], 79);
  EXPECT_EQ(v["gpu_xid_errors_total{2|xid=\"79\"}"], 1);  // the bus NVML does not list
  EXPECT_EQ(v["gpu_up{2|}"], 0);
  EXPECT_EQ(reg.gpu(2)->pci_bus_id, "00000000:5E:00.0");
  EXPECT_EQ(v["gpu_recovery_action{1|}"], 2);
  EXPECT_FALSE(v.contains("gpu_recovery_action{0|}"));  // not scripted: an old driver, absent not zero
}
#endif

}  // namespace
}  // namespace gpulens
