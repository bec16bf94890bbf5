// The capture table: states, bounds and expiry.
#include "push/profile_table.h"

#include <cmath>
#include <random>

namespace gpulens::push {

std::string_view state_name(ProfileState s) {
  switch (s) {
    case ProfileState::kPending: return "pending";
    case ProfileState::kRunning: return "running";
    case ProfileState::kDone: return "done";
    case ProfileState::kFailed: return "failed";
    case ProfileState::kExpired: return "expired";
  }
  return "unknown";
}

namespace {
bool open(ProfileState s) { return s == ProfileState::kPending || s == ProfileState::kRunning; }
}  // namespace

void ProfileTable::expire(int64_t now_ms) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    ProfileEntry& e = it->second;
    if (e.state == ProfileState::kPending && now_ms - e.created_ms > limits_.pickup_ms) {
      e.state = ProfileState::kExpired;
      e.error = "no client of pid " + std::to_string(e.request.pid) + " asked for it within " +
                std::to_string(limits_.pickup_ms / 1000) + " s (is gpulens_client running in that process, "
                "pointed at this agent?)";
      e.finished_ms = now_ms;
    } else if (e.state == ProfileState::kRunning &&
               now_ms - e.taken_ms > static_cast<int64_t>(e.request.duration_s * 1000) + limits_.grace_ms) {
      e.state = ProfileState::kExpired;
      e.error = "the client took the request but sent no result (did the process exit?)";
      e.finished_ms = now_ms;
    }
    if (!open(e.state) && now_ms - e.finished_ms > limits_.keep_ms) {
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

std::optional<ProfileError> ProfileTable::request(ProfileRequest r, int64_t now_ms, std::string& id) {
  if (r.kind != "stacks" && r.kind != "torch") {
    return ProfileError{400, "kind must be stacks or torch (got \"" + r.kind.substr(0, 32) + "\")"};
  }
  if (!(r.duration_s > 0) || !std::isfinite(r.duration_s) || r.duration_s > limits_.max_duration_s) {
    return ProfileError{400, "duration_s must be above 0 and at most " +
                                 std::to_string(static_cast<int>(limits_.max_duration_s))};
  }
  if (r.pid <= 0) return ProfileError{400, "pid must be a positive process id"};
  if (r.steps > limits_.max_steps) {
    return ProfileError{400, "steps must be at most " + std::to_string(limits_.max_steps)};
  }
  if (r.max_bytes == 0 || r.max_bytes > limits_.max_result_bytes) {
    return ProfileError{400, "max_bytes must be between 1 and " + std::to_string(limits_.max_result_bytes)};
  }
  std::lock_guard lock(mu_);
  expire(now_ms);
  size_t open_count = 0;
  for (auto& [k, e] : entries_) {
    if (!open(e.state)) continue;
    ++open_count;
    if (e.request.pid == r.pid) {
      return ProfileError{409, "pid " + std::to_string(r.pid) + " already has a capture in progress (" + k + ")"};
    }
  }
  if (open_count >= limits_.max_entries) return ProfileError{503, "too many captures in progress"};
  while (entries_.size() >= limits_.max_entries) {  // drop the oldest finished one
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (!open(it->second.state) && (oldest == entries_.end() || it->second.finished_ms < oldest->second.finished_ms)) {
        oldest = it;
      }
    }
    entries_.erase(oldest);
  }
  // Ids are not guessable from one another: a counter and random bits.
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[40];
  std::snprintf(buf, sizeof buf, "p%llu-%08llx", static_cast<unsigned long long>(next_++),
                static_cast<unsigned long long>(rng() & 0xffffffffu));
  r.id = buf;
  id = r.id;
  ProfileEntry e;
  e.request = std::move(r);
  e.created_ms = now_ms;
  entries_.emplace(id, std::move(e));
  return std::nullopt;
}

std::optional<ProfileRequest> ProfileTable::take(int64_t pid, int64_t now_ms) {
  std::lock_guard lock(mu_);
  expire(now_ms);
  if (!polled_.count(pid) && polled_.size() >= limits_.max_clients) {
    std::erase_if(polled_, [&](const auto& p) { return now_ms - p.second > limits_.client_ms; });
    if (polled_.size() >= limits_.max_clients) {
      auto oldest = polled_.begin();
      for (auto it = polled_.begin(); it != polled_.end(); ++it)
        if (it->second < oldest->second) oldest = it;
      polled_.erase(oldest);
    }
  }
  polled_[pid] = now_ms;
  for (auto& [k, e] : entries_) {
    if (e.state == ProfileState::kPending && e.request.pid == pid) {
      e.state = ProfileState::kRunning;
      e.taken_ms = now_ms;
      return e.request;
    }
  }
  return std::nullopt;
}

std::vector<int64_t> ProfileTable::clients(int64_t now_ms) {
  std::lock_guard lock(mu_);
  std::vector<int64_t> out;
  for (const auto& [pid, at] : polled_)
    if (now_ms - at <= limits_.client_ms) out.push_back(pid);
  return out;
}

std::optional<ProfileError> ProfileTable::finish(std::string_view id, bool ok, std::string payload,
                                                 std::string content_type, int64_t now_ms, ProfileWindow window) {
  std::lock_guard lock(mu_);
  expire(now_ms);
  auto it = entries_.find(id);
  if (it == entries_.end()) return ProfileError{404, "no capture " + std::string(id.substr(0, 64))};
  ProfileEntry& e = it->second;
  if (e.state != ProfileState::kRunning) {
    return ProfileError{409, "capture " + e.request.id + " is " + std::string(state_name(e.state)) + ", not running"};
  }
  e.finished_ms = now_ms;
  if (ok && payload.size() > e.request.max_bytes) {
    e.state = ProfileState::kFailed;
    e.error = "the result (" + std::to_string(payload.size()) + " bytes) is larger than max_bytes (" +
              std::to_string(e.request.max_bytes) + ")";
    return ProfileError{413, e.error};
  }
  if (ok) {
    e.state = ProfileState::kDone;
    e.result = std::move(payload);
    e.content_type = std::move(content_type);
    e.window = window;
  } else {
    e.state = ProfileState::kFailed;
    e.error = payload.substr(0, 1024);
  }
  return std::nullopt;
}

std::optional<ProfileEntry> ProfileTable::get(std::string_view id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  expire(now_ms);
  auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

uint64_t ProfileTable::upload_limit(std::string_view id) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.state != ProfileState::kRunning) return 0;
  return it->second.request.max_bytes;
}

}  // namespace gpulens::push
