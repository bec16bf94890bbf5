// The scrape source against hostile pages: series that break the label
// rules, duplicates, values out of their type's range, pages that are not
// text, and the per-target and total series budgets, each on both sides.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "sources/scrape/scrape_source.h"
#include "model/testing/label_text.h"
#include "sources/scrape/testing/page_server.h"
#include "store/live.h"

namespace gpulens {
namespace {

using testing::PageServer;

struct Scraped {
  SeriesRegistry reg;
  LiveStore live;
  Status status;
};

// One sample of a scrape source over `urls` (the first waits for every
// target's first answer), published into `out`.
void scrape(Scraped& out, std::vector<std::string> urls, int64_t max_series = 2048, int64_t max_total = 4096) {
  SourceOptions o;
  o.scrape.targets = std::move(urls);
  o.scrape.interval_ms = 60'000;  // one scrape per target in a test
  o.scrape.timeout_ms = 2000;
  o.scrape.max_series = max_series;
  o.scrape.max_series_total = max_total;
  o.scrape.max_labels = 16;
  auto src = make_scrape_source(o);
  ASSERT_TRUE(src->open(out.reg).is_ok());
  const int idx = out.live.add_source("scrape", false, true);
  Frame f(out.reg);
  f.clear(1000);
  out.status = src->sample(f);
  out.live.publish(idx, f);
}

double value_of(Scraped& s, FieldId f, std::string_view text) {
  const testing::TextKey k = testing::key_from_text(text);
  const uint32_t slot = s.reg.slot(f, kNodeEntity, k.labels, k.part);
  std::lock_guard lock(s.live.mutex());
  return s.live.present(slot) ? s.live.value(slot) : -1;
}

double rx(Scraped& s, std::string_view device) {
  return value_of(s, FieldId::kHostNetworkReceiveBytes, "device=\"" + std::string(device) + "\"");
}

double dropped(Scraped& s, const std::string& url, std::string_view reason) {
  return value_of(s, FieldId::kAgentSeriesDropped,
                  "source=\"scrape\",target=\"" + url + "\",reason=\"" + std::string(reason) + "\"");
}

std::string rx_line(std::string_view labels, std::string_view value) {
  return "node_network_receive_bytes_total{" + std::string(labels) + "} " + std::string(value) + "\n";
}

TEST(ScrapeLimits, SeriesBreakingTheLabelRulesAreDroppedAndCounted) {
  std::string many;
  for (int i = 0; i < 10'000; ++i) many += "l" + std::to_string(i) + "=\"x\",";
  const std::string page = rx_line("device=\"eth0\"", "5") + rx_line("device=\"bad\xff\"", "6") +
                           rx_line("device=\"eth1\"," + many, "7") +
                           rx_line("device=\"eth2\",__name__=\"x\"", "8");
  PageServer srv({{"/m", page}});
  Scraped s;
  scrape(s, {srv.url("/m")});
  ASSERT_TRUE(s.status.is_ok()) << s.status.message();
  EXPECT_EQ(rx(s, "eth0"), 5);
  EXPECT_EQ(rx(s, "eth1"), -1) << "10,000 labels: dropped";
  EXPECT_EQ(rx(s, "eth2"), -1);
  EXPECT_EQ(dropped(s, srv.url("/m"), "label_utf8"), 1);
  EXPECT_EQ(dropped(s, srv.url("/m"), "label_count"), 1);
  std::lock_guard lock(s.reg.mutex());
  for (uint32_t slot : s.reg.slots_of(FieldId::kHostNetworkReceiveBytes)) {
    EXPECT_EQ(s.reg.series(slot).labels.find('\xff'), std::string::npos) << "no slot for the bad value";
  }
}

TEST(ScrapeLimits, ADuplicateSeriesIsTakenOnceNotAddedUp) {
  const std::string page = rx_line("device=\"eth0\"", "5") + rx_line("device=\"eth0\"", "5") +
                           "node_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 10\n"
                           "node_cpu_seconds_total{mode=\"idle\",cpu=\"0\"} 10\n"
                           "node_cpu_seconds_total{cpu=\"1\",mode=\"idle\"} 4\n";
  PageServer srv({{"/m", page}});
  Scraped s;
  scrape(s, {srv.url("/m")});
  ASSERT_TRUE(s.status.is_ok()) << s.status.message();
  EXPECT_EQ(rx(s, "eth0"), 5);
  EXPECT_EQ(value_of(s, FieldId::kHostCpuSeconds, "mode=\"idle\""), 14) << "CPUs 0 and 1 add up, CPU 0 once";
  EXPECT_EQ(dropped(s, srv.url("/m"), "duplicate"), 2);
}

TEST(ScrapeLimits, CountersOutOfRangeAreDropped) {
  const std::string page = rx_line("device=\"neg\"", "-1") + rx_line("device=\"inf\"", "+Inf") +
                           rx_line("device=\"ninf\"", "-Inf") + rx_line("device=\"zero\"", "0") +
                           rx_line("device=\"big\"", "1.8e19");
  PageServer srv({{"/m", page}});
  Scraped s;
  scrape(s, {srv.url("/m")});
  EXPECT_EQ(rx(s, "neg"), -1);
  EXPECT_EQ(rx(s, "inf"), -1);
  EXPECT_EQ(rx(s, "ninf"), -1);
  EXPECT_EQ(rx(s, "zero"), 0);
  EXPECT_EQ(rx(s, "big"), 1.8e19);
  EXPECT_EQ(dropped(s, srv.url("/m"), "invalid_value"), 3);
}

TEST(ScrapeLimits, APageThatIsNotTextIsDownWithAReason) {
  PageServer srv({{"/unframed-cut", rx_line("device=\"eth0\"", "5") + "node_network_receive_bytes_total{device=\"eth1\"} 7"},
                  {"/bin", std::string("\x1f\x8b\x08\0\0\0\0\0\0\x03", 10) + "\n"},
                  {"/ok", rx_line("device=\"eth9\"", "1")}});
  Scraped s;
  scrape(s, {srv.url("/unframed-cut"), srv.url("/bin"), srv.url("/ok")});
  ASSERT_FALSE(s.status.is_ok());
  EXPECT_NE(s.status.message().find("2 of 3 targets down"), std::string::npos) << s.status.message();
  EXPECT_NE(s.status.message().find("does not end with a newline"), std::string::npos) << s.status.message();
  EXPECT_NE(s.status.message().find("binary"), std::string::npos) << s.status.message();
  EXPECT_EQ(rx(s, "eth0"), -1);
  EXPECT_EQ(rx(s, "eth9"), 1);
  EXPECT_EQ(value_of(s, FieldId::kAgentSourceUp, "source=\"scrape\",target=\"" + srv.url("/unframed-cut") + "\""), 0);
}

// Real serving engines' pages may lack the final newline. With a length the
// answer is known whole: its last line is read and the target is up.
TEST(ScrapeLimits, AWholePageWithoutAFinalNewlineIsRead) {
  PageServer srv({{"/m", rx_line("device=\"eth0\"", "5") + "node_network_receive_bytes_total{device=\"eth1\"} 7"}});
  Scraped s;
  scrape(s, {srv.url("/m")});
  ASSERT_TRUE(s.status.is_ok()) << s.status.message();
  EXPECT_EQ(rx(s, "eth0"), 5);
  EXPECT_EQ(rx(s, "eth1"), 7);
  EXPECT_EQ(value_of(s, FieldId::kAgentSourceUp, "source=\"scrape\",target=\"" + srv.url("/m") + "\""), 1);
}

std::string devices(int n, std::string_view prefix = "d") {
  std::string page;
  for (int i = 0; i < n; ++i) page += rx_line("device=\"" + std::string(prefix) + std::to_string(i) + "\"", "1");
  return page;
}

TEST(ScrapeLimits, PerTargetBudgetBothSides) {
  PageServer srv({{"/m", devices(4)}});
  {
    Scraped s;
    scrape(s, {srv.url("/m")}, 4);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(rx(s, "d" + std::to_string(i)), 1) << i;
    EXPECT_EQ(dropped(s, srv.url("/m"), "limit"), -1) << "at the budget: nothing dropped";
  }
  {
    Scraped s;
    scrape(s, {srv.url("/m")}, 3);
    int present = 0;
    for (int i = 0; i < 4; ++i) present += rx(s, "d" + std::to_string(i)) == 1;
    EXPECT_EQ(present, 3);
    EXPECT_EQ(dropped(s, srv.url("/m"), "limit"), 1);
    EXPECT_TRUE(s.status.is_ok()) << "a target over its budget stays up";
  }
}

TEST(ScrapeLimits, TotalBudgetAcrossTargets) {
  PageServer srv({{"/a", devices(3, "a")}, {"/b", devices(3, "b")}});
  {
    Scraped s;
    scrape(s, {srv.url("/a"), srv.url("/b")}, 10, 6);
    EXPECT_EQ(dropped(s, srv.url("/a"), "limit") + dropped(s, srv.url("/b"), "limit"), -2);
  }
  {
    Scraped s;
    scrape(s, {srv.url("/a"), srv.url("/b")}, 10, 5);
    int present = 0;
    for (int i = 0; i < 3; ++i) present += (rx(s, "a" + std::to_string(i)) == 1) + (rx(s, "b" + std::to_string(i)) == 1);
    EXPECT_EQ(present, 5);
    EXPECT_EQ(std::max(dropped(s, srv.url("/a"), "limit"), dropped(s, srv.url("/b"), "limit")), 1);
  }
}

}  // namespace
}  // namespace gpulens
