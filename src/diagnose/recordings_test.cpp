// End to end over recordings in dcgm-exporter + node_exporter + vLLM form
// (and one in gpulens' names), at 1 s, 15 s and 60 s: each yields its
// expected top cause. The recordings come from tests/data/recordings/gen.py,
// run by the build; expected.txt lists file and cause.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "diagnose/engine.h"
#include "diagnose/replay_input.h"
#include "diagnose/report.h"

namespace gpulens::diagnose {
namespace {

struct Case {
  std::string file;
  std::string expect;  // cause, cause@gpu, or "-"
};

std::vector<Case> cases() {
  std::vector<Case> out;
#ifdef GPULENS_RECORDINGS_DIR
  std::ifstream in(std::string(GPULENS_RECORDINGS_DIR) + "/expected.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    Case c;
    ss >> c.file >> c.expect;
    out.push_back(c);
  }
#endif
  return out;
}

class Recording : public ::testing::TestWithParam<Case> {};

TEST_P(Recording, YieldsExpectedTopCause) {
  const Case& c = GetParam();
  ReplayInfo info;
  Result<SignalSet> set = load_replay(std::string(GPULENS_RECORDINGS_DIR) + "/" + c.file, info);
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_TRUE(info.stats.saw_eof);
  const Report r = diagnose(*set, Thresholds{});
  SCOPED_TRACE(report_text(r, false));
  std::string cause = c.expect;
  std::string only_gpu;
  if (auto at = cause.find('@'); at != cause.npos) {
    only_gpu = cause.substr(at + 1);
    cause = cause.substr(0, at);
  }
  ASSERT_EQ(r.hosts.size(), 1u);
  for (const GpuReport& g : r.hosts[0].gpus) {
    const bool target = only_gpu.empty() || g.gpu == only_gpu;
    // A consequence of another GPU's fault is not this GPU's own finding.
    const bool warned = !g.findings.empty() && g.findings[0].severity >= Severity::kWarning &&
                        g.findings[0].explained_by.cause.empty();
    if (cause == "-" || !target) {
      EXPECT_FALSE(warned) << "GPU " << g.gpu << ": " << (warned ? g.findings[0].cause : "");
    } else if (cause == "small_batch") {
      ASSERT_FALSE(g.findings.empty()) << "GPU " << g.gpu;
      EXPECT_EQ(g.findings[0].cause, "small_batch");
      EXPECT_EQ(g.findings[0].severity, Severity::kInfo);
    } else {
      ASSERT_FALSE(g.findings.empty()) << "GPU " << g.gpu;
      EXPECT_EQ(g.findings[0].cause, cause) << "GPU " << g.gpu;
      EXPECT_GE(g.findings[0].severity, Severity::kWarning);
      EXPECT_FALSE(g.findings[0].evidence.empty());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, Recording, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           std::string n = p.param.file.substr(0, p.param.file.find('.'));
                           return n;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Recording);

}  // namespace
}  // namespace gpulens::diagnose
