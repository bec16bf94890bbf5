// How long the agent keeps a series an outside writer (a pusher, a scrape
// target) stopped setting, which the budgets of those writers count.
//
// A pushed or scraped series that a DELETE or a new PUT removed, that
// expired, or that its target no longer gives, is absent from then on; the
// history frees its ring and slot after kShortLivedReleaseMs of absence, at
// the next reclaim (every kReclaimPeriodMs; a slot looked up since the
// previous reclaim waits one more). Until then it still costs its memory, so
// each budget (push.max_series*, source.scrape.max_series*) counts a series
// for kHeldAfterRemovalMs after its writer last set it: a writer rotating
// label values gets at most its budget of series per that time, and memory
// never holds more than the budgets' series.
#pragma once

#include <cstdint>

namespace gpulens {

inline constexpr int64_t kShortLivedReleaseMs = 120'000;
inline constexpr int64_t kReclaimPeriodMs = 60'000;
inline constexpr int64_t kHeldAfterRemovalMs = kShortLivedReleaseMs + 2 * kReclaimPeriodMs;

}  // namespace gpulens
