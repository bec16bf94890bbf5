// XID names: the short description of each XID code that dcgm-exporter
// writes as the err_msg label of DCGM_FI_DEV_XID_ERRORS (with err_code, the
// code), after NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors).
//
// Codes 0..172 have a name (0 is "No Error", the value of a GPU that has had
// no XID); any other code is "Unknown Error", as dcgm-exporter writes it.
//
//   xid_message(79) == "GPU has fallen off the bus"
//
// Thread-safety: constant data.
#pragma once

#include <string_view>

namespace gpulens {

std::string_view xid_message(long long code);

}  // namespace gpulens
