#!/usr/bin/env bash
# Builds everything and runs the whole test suite: unit tests, integration
# tests against real servers on loopback (Prometheus, Alertmanager,
# VictoriaMetrics, kubectl, browsers...), then the unit tests again under
# AddressSanitizer + UBSan, the concurrent ones under ThreadSanitizer, then
# every parser under libFuzzer for 15 s each (scripts/fuzz.sh, two at a time
# on 2 cores). Each step prints its time; a table of all steps ends the run.
#
# Measured cost on a clean clone, 2-core VM, no compiler cache (CPU seconds;
# the run shared the machine, load 9-10 in the release build, 2-3 after):
#   release build 710 CPU s, ctest 161 s, ASan build 766 CPU s (503 s wall),
#   ASan tests 19 s, TSan build 96 CPU s (63 s), TSan tests 13 s,
#   fuzz build 207 CPU s (125 s), fuzzing 98 s. docs/PERFORMANCE.md has more.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
log=$(mktemp)

# Each step prints "== name" when it starts and "== name (N s)" when it ends;
# the summary at exit lists every step's time (also after a failure).
step_name="" step_start=$SECONDS steps=()
step_end() {
  [[ -n "$step_name" ]] || return 0
  local s=$((SECONDS - step_start))
  echo "== $step_name ($s s)" >&2
  steps+=("$(printf '%5d s  %s' "$s" "$step_name")")
  step_name=""
}
step() { step_end; step_name=$1; step_start=$SECONDS; echo "== $1" >&2; }
finish() {
  local rc=$?
  step_end
  rm -f "$log"
  echo "== step times (total $SECONDS s, exit $rc)" >&2
  printf '%s\n' "${steps[@]}" >&2
}
trap finish EXIT

step "dependencies (scripts/deps.sh --test)"
scripts/deps.sh --test

step "release build"
cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs"
step "release tests (ctest)"
ctest --preset release -j"$jobs" 2>&1 | tee "$log"
# An integration test skips (exit 77) only when its server is missing; every
# server is installed above, so a skip here is a failure.
if grep -q "\*\*\*Skipped" "$log"; then
  echo "error: integration tests were skipped although their servers should be installed" >&2
  exit 1
fi

# The README's first command, as a user types it (not under ctest: it
# reconfigures and builds build/release).
step "scripts/run.sh serves /metrics"
bash tests/integration/run_script_test.sh

# Only what the unit tests run (target unit_tests: every test binary, the
# fuzz replay targets, the gpulens binary for readme_catalog); not the
# integration-only programs.
step "ASan + UBSan build"
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$jobs" --target unit_tests
# Three times each, in parallel: a test that shares a file, directory or
# port with another (instead of its own, util/testing/temp_dir.h) fails here
# rather than at random later (about 20 s a round).
step "ASan + UBSan unit tests (3 rounds)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --preset asan -j"$jobs" --repeat until-fail:3

# ThreadSanitizer over the concurrent parts only: their unit test binaries
# (sources, store, the HTTP server and agent, remote_write, the HTTP client,
# the push store, the scrape source's per-target threads). Measured on the
# 2-core VM at load 2: 63 s to build the first six (scrape_test adds 46 s of
# CPU), 14 s to run them.
step "ThreadSanitizer build"
tsan_tests=(store_test server_test remote_write_test sources_test util_test push_test scrape_test scrape_mig_test)
cmake --preset tsan >/dev/null
cmake --build --preset tsan -j"$jobs" --target "${tsan_tests[@]}"
step "ThreadSanitizer tests"
for t in "${tsan_tests[@]}"; do
  bin=$(find build/tsan/src -name "$t" -type f -perm -u+x | head -1)
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$bin" --gtest_brief=1
done

# Every parser under libFuzzer with ASan+UBSan, 15 s per target.
step "fuzz build (clang, libFuzzer)"
cmake --preset fuzz >/dev/null
# shellcheck disable=SC2046
cmake --build --preset fuzz -j"$jobs" --target $(cut -d' ' -f1 build/fuzz/fuzz/targets.txt)
step "fuzzing every parser (bounded)"
scripts/fuzz.sh 15
