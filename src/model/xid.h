// XID names: the short description of each XID code that dcgm-exporter
// writes as the err_msg label of DCGM_FI_DEV_XID_ERRORS (with err_code, the
// code), after NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors).
//
// Codes 0..172 have a name (0 is "No Error", the value of a GPU that has had
// no XID); any other code is "Unknown Error", as dcgm-exporter writes it.
//
//   xid_message(79) == "GPU has fallen off the bus"
//
// xid_advice() adds, for the XIDs fleets meet most, who usually causes the
// XID and what brings the GPU back, after the same catalogue (its
// "Resolution" column) — facts, worded here:
//
//   xid_advice(79)->action == XidAction::kRebootNode
//   xid_advice(13)->owner  == XidOwner::kApplication
//
// recovery_action_name() names NVML's recovery action codes (field 230).
//
// Thread-safety: constant data.
#pragma once

#include <span>
#include <string_view>

namespace gpulens {

std::string_view xid_message(long long code);

// Who usually causes an XID.
enum class XidOwner { kApplication, kDriver, kHardware, kSystem };
// What brings the GPU back, least disruptive first.
enum class XidAction {
  kNone,                // nothing for the GPU: it keeps working
  kRestartApplication,  // the application failed, the GPU is fine
  kResetGpu,            // nvidia-smi -r (or a reboot where reset is not possible)
  kRebootNode,          // a GPU reset is not enough
  kRecoveryAction,      // do what the driver's recovery action says
};

struct XidAdvice {
  int code;
  std::string_view meaning;  // what happened, in a few words
  XidOwner owner;
  XidAction action;
  bool rma_if_repeats;       // hardware that keeps doing this goes back to the vendor
};

// The advice for `code`, nullptr when the code is not in the table.
const XidAdvice* xid_advice(long long code);
// The whole table, by code.
std::span<const XidAdvice> xid_advice_table();
std::string_view xid_owner_name(XidOwner owner);     // "application", "driver", "hardware", "system"
// "none", "restart the application", "reset the GPU", "reboot the node",
// "follow the driver's recovery action".
std::string_view xid_action_text(XidAction action);

// NVML's recovery action (nvmlDeviceGpuRecoveryAction_t, field 230).
enum class RecoveryAction { kNone = 0, kGpuReset = 1, kNodeReboot = 2, kDrainP2p = 3, kDrainAndReset = 4 };
// "none", "reset the GPU", "reboot the node", "drain peer-to-peer traffic",
// "drain and reset"; "" for a code the table does not know.
std::string_view recovery_action_name(double code);

}  // namespace gpulens
