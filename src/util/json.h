// Minimal JSON writing helpers: strings escaped per RFC 8259, numbers that
// stay valid JSON (NaN and infinities become null).
#pragma once

#include <string>
#include <string_view>

namespace gpulens {

void append_json_string(std::string& out, std::string_view s);
void append_json_number(std::string& out, double v);

}  // namespace gpulens
