// The one JSON string and number writer of the program: every JSON document
// gpulens writes (the agent's API, reports, recordings' metadata, logs'
// JSON) goes through it, so a pushed or scraped string can never make it
// invalid.
//
// Strings are escaped per RFC 8259 (quote, backslash, C0 controls; DEL and
// the C1 controls U+0080..U+009F too, so a JSON document shown raw cannot
// drive a terminal), and bytes that are not well-formed UTF-8 become
// U+FFFD: the output is always valid UTF-8 and valid JSON. Numbers stay
// valid JSON: NaN and infinities become null, -0 becomes 0.
//
//   std::string o;
//   append_json_string(o, "a\"b\xff");   // "a\"b\ufffd" (U+FFFD written as UTF-8)
//   append_json_number(o, NAN);          // null
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

namespace gpulens {

void append_json_string(std::string& out, std::string_view s);
void append_json_number(std::string& out, double v);
// The escaped characters alone, no quotes around them (the log writer's
// quoted logfmt and JSON values). `escape_bidi` also writes the
// bidirectional overrides and isolates (U+202A..U+202E, U+2066..U+2069) as
// \u escapes, for text a terminal shows.
void append_json_escaped(std::string& out, std::string_view s, bool escape_bidi = false);
// append_json_string into a new string.
std::string json_string(std::string_view s);

}  // namespace gpulens
