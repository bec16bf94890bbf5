#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz": clang, ASan+UBSan) and runs
# each for a bounded time from its seeds and past crashes, with its
# dictionary, as many targets at a time as there are cores (FUZZ_JOBS to
# change it). A crash fails the run and leaves the input under
# build/fuzz/artifacts/; copy it into fuzz/regressions/<target>/ once fixed
# (fuzz/CMakeLists.txt says how). Targets and seeds: build/fuzz/fuzz/targets.txt.
#
#   scripts/fuzz.sh                 # every target, 15 s each (CI)
#   scripts/fuzz.sh 600 openmetrics # one target, 10 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-15}
only=${2:-}
cmake --preset fuzz >/dev/null
manifest=build/fuzz/fuzz/targets.txt
targets=$(cut -d' ' -f1 "$manifest")
if [[ -n "$only" ]]; then targets="${only}_fuzz"; fi
# shellcheck disable=SC2086
cmake --build --preset fuzz -j"$(nproc)" --target $targets
mkdir -p build/fuzz/artifacts
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# One target per core at a time: each fuzzer is a single process, so two
# cores fuzz two targets side by side, each for the full time.
jobs=${FUZZ_JOBS:-$(nproc)}
fuzz_one() {
  local name=$1 max_len dict regress seeds d dirs=()
  read -r _ max_len dict regress seeds < <(grep "^$name " "$manifest")
  for d in $regress $seeds; do [[ -e "$d" ]] && dirs+=("$d"); done
  mkdir -p "$work/$name"
  # New inputs go to the scratch corpus (first folder); seeds stay untouched.
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
    "build/fuzz/fuzz/$name" -max_total_time="$seconds" -max_len="$max_len" -dict="$dict" \
    -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
    -artifact_prefix="build/fuzz/artifacts/$name-" "$work/$name" "${dirs[@]}" 2>"$work/$name.log"
}
running=0
for t in $targets; do
  if ((running >= jobs)); then wait -n || true; running=$((running - 1)); fi
  echo "== fuzz $t for ${seconds}s (max_len $(grep "^$t " "$manifest" | cut -d' ' -f2))" >&2
  (rc=0; fuzz_one "$t" || rc=$?; echo "$rc" >"$work/$t.rc") &
  running=$((running + 1))
done
wait
failed=0
for t in $targets; do
  if [[ "$(cat "$work/$t.rc")" != 0 ]]; then
    tail -60 "$work/$t.log" >&2
    echo "error: $t found a crash; input saved under build/fuzz/artifacts/$t-*" >&2
    failed=1
  else
    echo -n "$t: " >&2
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$t.log" | tr '\n' ' ' >&2
    echo >&2
  fi
done
exit $failed
