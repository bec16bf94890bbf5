// Status and Result<T>: errors as values.
//
// Every call on the collection and scrape path returns a Status (or a
// Result<T> carrying a value or a Status) instead of throwing, so one failing
// GPU or file never unwinds through the agent. The message says what failed
// and why, in words a user can act on:
//
//   Result<int> r = parse_port("80x");
//   if (!r) return r.status();          // "invalid port \"80x\""
//
// Thread-safety: plain values; copy freely.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace gpulens {

enum class Code {
  kOk = 0,
  kNotApplicable,    // the thing does not exist here (no driver, no IB ports)
  kNotSupported,     // exists but cannot give this value
  kInvalidArgument,  // caller or user gave something malformed
  kNotFound,
  kPermission,
  kUnavailable,      // transient: device lost, server down, try later
  kDeadline,
  kIo,
  kInternal,
};

class Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == Code::kOk; }
  explicit operator bool() const { return is_ok(); }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status not_applicable(std::string m) { return {Code::kNotApplicable, std::move(m)}; }
inline Status not_supported(std::string m) { return {Code::kNotSupported, std::move(m)}; }
inline Status unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status io_error(std::string m) { return {Code::kIo, std::move(m)}; }
inline Status not_found(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status internal_error(std::string m) { return {Code::kInternal, std::move(m)}; }

// A value or the Status that explains its absence.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}     // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace gpulens
