// report_json's arrays (a finding's profile.top, a GPU's not_assessed and
// notes, a job's gpus and notes, the warnings): empty ones are [], items
// are comma-separated, and strings from outside keep the document JSON.
#include <gtest/gtest.h>
#include <simdjson.h>

#include "diagnose/report.h"

namespace gpulens::diagnose {
namespace {

Report two_gpus() {
  Report r;
  r.from_ms = 0;
  r.to_ms = 60000;
  HostReport h;
  h.host = "n1";
  GpuReport empty;
  empty.gpu = "0";
  GpuReport full;
  full.gpu = "1";
  full.not_assessed = {{"memory_fragmentation", "needs 5m"}, {"pcie_bottleneck", "no PCIe fields"}};
  full.notes = {"first", std::string("bell\x07 and \xff", 11)};
  Finding f;
  f.cause = "idle";
  f.profile.state = "done";
  f.profile.top = {{"aten::mm", 0.5}, {"k\"ernel", 0.25}};
  full.findings.push_back(f);
  f.profile.state = "skipped";
  f.profile.top.clear();
  full.findings.push_back(f);
  h.gpus = {empty, full};
  r.hosts.push_back(h);
  JobReport job;
  job.job = "train";
  job.source = "slurm";
  job.gpus = {"n1/0", "n1/1"};
  r.jobs.push_back(job);
  r.input_warnings = {"w1"};
  return r;
}

TEST(ReportJson, ArraysEmptyAndFull) {
  const std::string json = report_json(two_gpus());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_FALSE(parser.parse(json).get(doc)) << json;
  EXPECT_NE(json.find("\"not_assessed\":[],\"notes\":[]}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"not_assessed\":[{\"cause\":\"memory_fragmentation\",\"reason\":\"needs 5m\"},"
                      "{\"cause\":\"pcie_bottleneck\",\"reason\":\"no PCIe fields\"}],"
                      "\"notes\":[\"first\",\"bell\\u0007 and \xEF\xBF\xBD\"]}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"top\":[{\"name\":\"aten::mm\",\"share\":0.5},{\"name\":\"k\\\"ernel\",\"share\":0.25}],"
                      "\"dataloader_wait_share\":null"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"state\":\"skipped\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"top\":[],\"dataloader_wait_share\":null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"gpus\":[\"n1/0\",\"n1/1\"],\"hosts\":0"), std::string::npos) << json;
  EXPECT_NE(json.find("\"waste_gpu_hours\":0,\"notes\":[]}"), std::string::npos) << json;
  EXPECT_NE(json.find("\"warnings\":[\"w1\"]}\n"), std::string::npos) << json;
  // The same document, read back: the counts are what was put in.
  auto count = [&](size_t gpu, const char* key) -> size_t {
    simdjson::dom::array a;
    if (doc["hosts"].at(0)["gpus"].at(gpu)[key].get(a)) return 99;
    return a.size();
  };
  EXPECT_EQ(count(0, "notes"), 0u);
  EXPECT_EQ(count(0, "not_assessed"), 0u);
  EXPECT_EQ(count(1, "notes"), 2u);
  EXPECT_EQ(count(1, "not_assessed"), 2u);
}

TEST(ReportJson, NoHostsNoJobs) {
  Report r;
  const std::string json = report_json(r);
  EXPECT_EQ(json.rfind("{\"hosts\":[],", 0), 0u) << json;
  EXPECT_NE(json.find("\"jobs\":[]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"causes\":[]},\"warnings\":[]}\n"), std::string::npos) << json;
}

}  // namespace
}  // namespace gpulens::diagnose
