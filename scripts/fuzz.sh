#!/usr/bin/env bash
# Builds the libFuzzer targets (preset "fuzz": clang, ASan+UBSan) and runs
# each for a bounded time from its seeds and past crashes, with its
# dictionary. A crash stops the run and leaves the input under
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
failed=0
for t in $targets; do
  read -r name max_len dict regress seeds < <(grep "^$t " "$manifest")
  dirs=()
  for d in $regress $seeds; do [[ -e "$d" ]] && dirs+=("$d"); done
  mkdir -p "$work/$name"
  echo "== fuzz $name for ${seconds}s (max_len $max_len)" >&2
  # New inputs go to the scratch corpus (first folder); seeds stay untouched.
  if ! UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
      "build/fuzz/fuzz/$name" -max_total_time="$seconds" -max_len="$max_len" -dict="$dict" \
      -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 -print_final_stats=1 \
      -artifact_prefix="build/fuzz/artifacts/$name-" "$work/$name" "${dirs[@]}" 2>"$work/$name.log"; then
    tail -60 "$work/$name.log" >&2
    echo "error: $name found a crash; input saved under build/fuzz/artifacts/$name-*" >&2
    failed=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$work/$name.log" | tr '\n' ' ' >&2
    echo >&2
  fi
done
exit $failed
