// Runs the analyser over every labelled real log in tests/data/nccl and
// compares each label field (NAME.json) with the report.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyze/nccl/reader.h"

namespace gpulens::nccl {
namespace {

namespace fs = std::filesystem;

fs::path data_dir() { return fs::path(GPULENS_SOURCE_DIR) / "tests" / "data" / "nccl"; }

std::vector<std::string> corpus_logs() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(data_dir())) {
    if (e.path().extension() == ".log" && fs::exists(fs::path(e.path()).replace_extension(".json"))) {
      names.push_back(e.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> opt_string(simdjson::dom::element e) {
  if (e.is_null()) return std::nullopt;
  return std::string(std::string_view(e.get_string()));
}

std::optional<int> opt_int(simdjson::dom::element e) {
  if (e.is_null()) return std::nullopt;
  return static_cast<int>(int64_t(e.get_int64()));
}

// Labels may annotate a path: "NET/IB/GDRDMA (loopback through the NICs)".
std::string strip_note(std::string s) {
  size_t p = s.find(" (");
  return p == std::string::npos ? s : s.substr(0, p);
}

std::string x_y_z(const std::optional<std::string>& v) {
  return v ? v->substr(0, v->find('+')) : "null";
}

// Labels that rest on text outside the excerpt. Each entry gives what the log
// itself supports; the test holds the analyser to that value instead, so a
// change in behaviour still fails. Reasons are in tests/data/nccl/SOURCES.md.
struct Gap {
  std::string_view log, field, expected;
};
constexpr Gap kGaps[] = {
    // Single node only per the cut-off line "nRanks 8 nNodes 1" after the excerpt;
    // the excerpt shows one rank of 8 selecting IBext_v8 and nothing about nodes.
    {"nccl1584_noprefix_nvls_ibext_sharp_2.24.3", "nodes", "null"},
    {"nccl1584_noprefix_nvls_ibext_sharp_2.24.3", "inter_node_transport", "Plugin:IBext"},
    {"nccl1584_noprefix_nvls_ibext_sharp_2.24.3", "gdr", "unknown"},
};

// The label value of field for log, or the documented gap value.
std::string want(const std::string& log, std::string_view field, std::string label_value) {
  for (const Gap& g : kGaps) {
    if (g.log == log && g.field == field) return std::string(g.expected);
  }
  return label_value;
}

std::string str(const std::optional<int>& v) { return v ? std::to_string(*v) : "null"; }

class CorpusTest : public testing::TestWithParam<std::string> {};

TEST_P(CorpusTest, MatchesLabel) {
  const std::string name = GetParam();
  simdjson::dom::parser parser;
  simdjson::dom::element label = parser.load((data_dir() / (name + ".json")).string());
  auto result = analyze_paths({(data_dir() / (name + ".log")).string()});
  ASSERT_TRUE(result.ok()) << result.status().message();
  const Report& r = *result;

  EXPECT_EQ(x_y_z(opt_string(label["nccl_version"])), x_y_z(r.nccl_version)) << "nccl_version";
  EXPECT_EQ(opt_int(label["ranks"]), r.ranks) << "ranks";
  EXPECT_EQ(want(name, "nodes", str(opt_int(label["nodes"]))), str(r.nodes)) << "nodes";
  EXPECT_EQ(want(name, "inter_node_transport",
                 std::string(std::string_view(label["inter_node_transport"].get_string()))),
            r.inter_node_transport);
  EXPECT_EQ(want(name, "gdr", std::string(std::string_view(label["gdr"].get_string()))), r.gdr)
      << "gdr";
  std::vector<std::string> want;
  for (auto p : label["intra_node"].get_array()) want.push_back(strip_note(std::string(std::string_view(p.get_string()))));
  std::vector<std::string> got = r.intra_node;
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(want, got) << "intra_node";
  EXPECT_EQ(opt_int(label["channels"]), r.channels) << "channels";
  EXPECT_EQ(std::string(std::string_view(label["error_class"].get_string())), r.error_class)
      << "error_class";
}

INSTANTIATE_TEST_SUITE_P(Logs, CorpusTest, testing::ValuesIn(corpus_logs()),
                         [](const testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;  // test names allow [A-Za-z0-9_] only
                           std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
                           return n;
                         });

TEST(CorpusTest, AllLabelledLogsArePresent) { EXPECT_GE(corpus_logs().size(), 25u); }

}  // namespace
}  // namespace gpulens::nccl
