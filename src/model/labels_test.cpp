// Labels stay sorted and unique, render escaped once, and refuse bad input
// from outside.
#include "model/labels.h"

#include <gtest/gtest.h>

#include <unordered_set>

namespace gpulens {
namespace {

TEST(Labels, SortedByNameWhateverTheOrderGiven) {
  Labels l{{"pod", "p"}, {"container", "c"}, {"namespace", "ns"}};
  ASSERT_EQ(l.size(), 3u);
  EXPECT_EQ(l[0].name, "container");
  EXPECT_EQ(l[1].name, "namespace");
  EXPECT_EQ(l[2].name, "pod");
  l.set("gpu_instance_id", "1");
  l.set("Hostname", "n");  // byte order: uppercase before lowercase
  EXPECT_EQ(l.render(), "Hostname=\"n\",container=\"c\",gpu_instance_id=\"1\",namespace=\"ns\",pod=\"p\"");
  EXPECT_EQ(Labels({{"b", "1"}, {"a", "2"}}), Labels({{"a", "2"}, {"b", "1"}}));
}

TEST(Labels, LookupByName) {
  const Labels l{{"link", "3"}, {"mode", ""}};
  EXPECT_EQ(l.get("link"), "3");
  EXPECT_EQ(l.get("lin"), "");   // a prefix of a name is not the name
  EXPECT_EQ(l.get("links"), "");
  EXPECT_TRUE(l.has("mode"));    // present with an empty value
  EXPECT_FALSE(l.has("pid"));
  EXPECT_EQ(l.find("pid"), nullptr);
  ASSERT_NE(l.find("link"), nullptr);
  EXPECT_EQ(l.find("link")->value, "3");
}

TEST(Labels, SetReplacesEraseRemovesMergeOverrides) {
  Labels l{{"a", "1"}, {"a", "2"}};  // a later pair replaces an earlier one
  EXPECT_EQ(l.size(), 1u);
  EXPECT_EQ(l.get("a"), "2");
  l.merge(Labels{{"a", "3"}, {"b", "4"}});
  EXPECT_EQ(l.render(), "a=\"3\",b=\"4\"");
  EXPECT_TRUE(l.erase("a"));
  EXPECT_FALSE(l.erase("a"));
  EXPECT_EQ(l.render(), "b=\"4\"");
  EXPECT_EQ(Labels().render(), "");
}

TEST(Labels, RenderEscapesAndRoundTripsThroughUnescaping) {
  const std::string odd = "a\"b\\c\nd,e=\"f";
  const Labels l{{"pod", odd}, {"pid", "7"}};
  const std::string text = l.render();
  EXPECT_EQ(text, "pid=\"7\",pod=\"a\\\"b\\\\c\\nd,e=\\\"f\"");
  // Unescape the rendered value by the exposition format's rules: the
  // original comes back byte for byte.
  const size_t start = text.find("pod=\"") + 5;
  std::string back;
  for (size_t i = start; i < text.size() && text[i] != '"'; ++i) {
    if (text[i] == '\\') {
      ++i;
      back += text[i] == 'n' ? '\n' : text[i];
    } else {
      back += text[i];
    }
  }
  EXPECT_EQ(back, odd);
  EXPECT_EQ(l.get("pod"), odd);  // stored unescaped
}

TEST(Labels, OrderingAndHashFollowContent) {
  const Labels a{{"a", "1"}}, b{{"a", "2"}}, c{{"b", "1"}};
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_LT(Labels(), a);
  EXPECT_EQ(a.hash(), Labels({{"a", "1"}}).hash());
  // Name and value are hashed apart: the same bytes split differently differ.
  std::unordered_set<size_t> hashes{Labels({{"ab", "c"}}).hash(), Labels({{"a", "bc"}}).hash(), a.hash(),
                                    b.hash(), c.hash(), Labels().hash()};
  EXPECT_EQ(hashes.size(), 6u);
}

}  // namespace
}  // namespace gpulens
