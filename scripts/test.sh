#!/usr/bin/env bash
# Builds everything and runs the whole test suite: unit tests, integration
# tests against real servers on loopback (Prometheus, Alertmanager,
# VictoriaMetrics, kubectl, browsers...), then the unit tests again under
# AddressSanitizer + UBSan, the concurrent ones under ThreadSanitizer, then
# every parser under libFuzzer for 15 s each (scripts/fuzz.sh, two at a time
# on 2 cores). Each step prints its time; a table of all steps ends the run.
#
# Measured on a clean clone, 2-core VM, no compiler cache: 1,745 s in all;
# release build 191 s, integration tests 508 s while the sanitizer and fuzz
# trees build beside them at idle priority, the rest of the ASan build 364 s,
# ASan tests 260 s, TSan 138 s, fuzz build and fuzzing 278 s; every step
# keeps both CPUs 90-99 % busy. docs/PERFORMANCE.md ("CI wall time") and
# docs/tests.md have more.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
log=$(mktemp)

# Each step prints "== name" when it starts and "== name (N s)" when it ends;
# the summary at exit lists every step's time (also after a failure).
# Beside the wall time, each step shows how busy the machine's CPUs were
# (all processes, from /proc/stat): a step near 100 % is bound by CPU, one
# well below it by waits that a background build can fill.
cpu_ticks() { awk '/^cpu /{ print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9 }' /proc/stat; }
step_name="" step_start=$SECONDS steps=() step_ticks=""
step_end() {
  [[ -n "$step_name" ]] || return 0
  local s=$((SECONDS - step_start)) busy0 total0 busy1 total1 pct=0
  read -r busy0 total0 <<<"$step_ticks"
  read -r busy1 total1 <<<"$(cpu_ticks)"
  ((total1 > total0)) && pct=$(((busy1 - busy0) * 100 / (total1 - total0)))
  echo "== $step_name ($s s, CPU $pct % busy)" >&2
  steps+=("$(printf '%5d s  %3d %%  %s' "$s" "$pct" "$step_name")")
  step_name=""
}
step() { step_end; step_name=$1; step_start=$SECONDS; step_ticks=$(cpu_ticks); echo "== $1" >&2; }
# Stops a process and everything it started (the background builds).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill -TERM "$1" 2>/dev/null || true
}
finish() {
  local rc=$?
  step_end
  rm -f "$log"
  [[ -n "${bg_pid:-}" ]] && kill_tree "$bg_pid"
  [[ -n "${bg_dir:-}" ]] && rm -rf "$bg_dir"
  echo "== step times (total $SECONDS s, exit $rc): wall, CPU busy, step" >&2
  printf '%s\n' "${steps[@]}" >&2
}
trap finish EXIT

step "dependencies (scripts/deps.sh --test)"
scripts/deps.sh --test

# The release tree builds what the integration tests run (target
# integration_deps: everything but the unit test binaries); the unit tests
# build and run once, in the ASan+UBSan tree below.
step "release build (what the integration tests run)"
cmake --preset release >/dev/null
cmake --build --preset release -j"$jobs" --target integration_deps

# The sanitizer and fuzz trees compile in the background, one after the
# other, at idle priority (SCHED_IDLE, nice 19) while the release tests
# run: most of those tests wait on servers and timers, and the compiler
# takes only the cycles they leave. Each build's output goes to a log that
# is printed when the build fails; its exit status decides as before.
tsan_tests=(store_test server_test remote_write_test sources_test util_test push_test scrape_test scrape_mig_test)
bg_dir=$(mktemp -d)
background_builds() {
  # Idle class and lowest priority first: every compiler started below inherits them.
  chrt --idle -p 0 "$BASHPID" && renice -n 19 -p "$BASHPID" >/dev/null
  cmake --preset asan >/dev/null && cmake --build --preset asan -j"$jobs" --target unit_tests
  echo $? >"$bg_dir/asan.rc"
  cmake --preset tsan >/dev/null && cmake --build --preset tsan -j"$jobs" --target "${tsan_tests[@]}"
  echo $? >"$bg_dir/tsan.rc"
  # shellcheck disable=SC2046
  cmake --preset fuzz >/dev/null &&
    cmake --build --preset fuzz -j"$jobs" --target $(cut -d' ' -f1 build/fuzz/fuzz/targets.txt)
  echo $? >"$bg_dir/fuzz.rc"
}
(set +e; background_builds) >"$bg_dir/build.log" 2>&1 &
bg_pid=$!
# Waits for one background build; its log on failure.
wait_build() {
  local name=$1
  while [[ ! -e "$bg_dir/$name.rc" ]]; do
    kill -0 "$bg_pid" 2>/dev/null || break
    sleep 1
  done
  if [[ "$(cat "$bg_dir/$name.rc" 2>/dev/null)" != 0 ]]; then
    tail -n 60 "$bg_dir/build.log" >&2
    echo "error: the $name build failed (log above)" >&2
    exit 1
  fi
}

step "integration tests (ctest -L integration, release build)"
ctest --preset release -L integration -j"$jobs" --output-on-failure 2>&1 | tee "$log"
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
# fuzz replay targets); not the gpulens binary or the
# integration-only programs. Started in the background above; what is left
# of it runs now at full speed.
step "ASan + UBSan build (the rest of it)"
wait_build asan
# Every unit test (and fuzz replay) twice, in parallel: a test that shares a
# file, directory or port with another (instead of its own,
# util/testing/temp_dir.h) fails here rather than at random later.
step "ASan + UBSan unit tests (2 rounds)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --preset asan -j"$jobs" --output-on-failure --repeat until-fail:2

# ThreadSanitizer over the concurrent parts only: their unit test binaries
# (sources, store, the HTTP server and agent, remote_write, the HTTP client,
# the push store, the scrape source's per-target threads).
step "ThreadSanitizer build (the rest of it)"
wait_build tsan
step "ThreadSanitizer tests"
for t in "${tsan_tests[@]}"; do
  bin=$(find build/tsan/src -name "$t" -type f -perm -u+x | head -1)
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "$bin" --gtest_brief=1
done

# Every parser under libFuzzer with ASan+UBSan, 15 s per target.
step "fuzz build (clang, libFuzzer; the rest of it)"
wait_build fuzz
step "fuzzing every parser (bounded)"
scripts/fuzz.sh 15
