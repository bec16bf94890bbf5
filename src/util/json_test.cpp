// The JSON writer: whatever bytes a string holds, the document stays valid
// JSON and valid UTF-8, and the text it decodes to keeps every valid part.
#include "util/json.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cmath>

#include "util/utf8.h"

namespace gpulens {
namespace {

// The string a JSON parser reads back from append_json_string(s).
std::string round_trip(std::string_view s) {
  std::string doc = "{\"v\":";
  append_json_string(doc, s);
  doc += "}";
  EXPECT_TRUE(valid_utf8(doc)) << doc;
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  EXPECT_FALSE(parser.parse(doc).get(e)) << "not JSON: " << doc;
  std::string_view v;
  EXPECT_FALSE(e["v"].get_string().get(v)) << doc;
  return std::string(v);
}

TEST(Json, EscapesQuotesBackslashesAndControls) {
  EXPECT_EQ(json_string("a\"b\\c\n\t\r"), R"("a\"b\\c\n\t\r")");
  EXPECT_EQ(json_string("\x1b]0;t\x07"), R"("\u001b]0;t\u0007")");
  EXPECT_EQ(json_string("\x7f"), R"("\u007f")");
  EXPECT_EQ(json_string("\xC2\x9B" "2J"), R"("\u009b2J")");  // C1 CSI, written as an escape
  EXPECT_EQ(round_trip("pool\x1b[2J"), "pool\x1b[2J");         // the text itself is kept
}

TEST(Json, InvalidUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(round_trip("a\xff" "b"), "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(round_trip("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");              // overlong '/'
  EXPECT_EQ(round_trip("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(round_trip("\xF4\x90\x80\x80").size(), 12u);                     // above U+10FFFF
  EXPECT_EQ(round_trip("cut \xE2\x82"), "cut \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(round_trip("H100 \xE2\x82\xAC \xF0\x9F\x98\x80"), "H100 \xE2\x82\xAC \xF0\x9F\x98\x80");  // valid kept
}

TEST(Json, EveryByteSequenceGivesValidJson) {
  // All two-byte strings, and each byte after a lead byte of each length.
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; b += 7) {
      const char s[3] = {static_cast<char>(a), static_cast<char>(b), '\xE0'};
      round_trip(std::string_view(s, 3));
    }
  }
}

TEST(Json, EscapedCharactersWithoutQuotes) {
  std::string out = "x=";
  append_json_escaped(out, "");
  EXPECT_EQ(out, "x=");
  append_json_escaped(out, std::string("a\"\\\0\x1b\n\t\r\xff", 9));
  EXPECT_EQ(out, "x=a\\\"\\\\\\u0000\\u001b\\n\\t\\r\xEF\xBF\xBD");
  // The bidirectional overrides and isolates pass as text in a JSON
  // document and become escapes for a terminal.
  const std::string bidi = "\xe2\x80\xaa\xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa9\xe2\x80\xaf";  // U+202A U+202E U+2066 U+2069 U+202F
  std::string plain, terminal;
  append_json_escaped(plain, bidi);
  append_json_escaped(terminal, bidi, true);
  EXPECT_EQ(plain, bidi);
  EXPECT_EQ(terminal, "\\u202a\\u202e\\u2066\\u2069\xe2\x80\xaf");  // U+202F is no override
  EXPECT_EQ(json_string("q\xe2\x80\xae"), "\"q\xe2\x80\xae\"");
}

TEST(Json, NumbersStayJson) {
  std::string o;
  append_json_number(o, NAN);
  o += ',';
  append_json_number(o, INFINITY);
  o += ',';
  append_json_number(o, -0.0);
  o += ',';
  append_json_number(o, 1.5);
  EXPECT_EQ(o, "null,null,0,1.5");
}

TEST(Utf8, RefusesWhatRfc3629Refuses) {
  EXPECT_EQ(utf8_sequence("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_sequence("\xE0\x80\x80", 0), 0u);  // overlong
  EXPECT_EQ(utf8_sequence("\x80", 0), 0u);          // stray continuation
  EXPECT_EQ(utf8_sequence("\xF0\x9F\x98\x80", 0), 4u);
  EXPECT_TRUE(valid_utf8("plain"));
  EXPECT_FALSE(valid_utf8("bad\xfe"));
}

}  // namespace
}  // namespace gpulens
