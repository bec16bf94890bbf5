#!/usr/bin/env bash
# Throughput and peak memory of `gpulens nccl` on a generated 1 GiB log.
#
#   bench/nccl-throughput.sh [BUILD_DIR]     (default build/release)
#
# NCCL_BENCH_CORPUS=1: the log is instead the real logs of tests/data/nccl/
# concatenated over and over up to NCCL_BENCH_BYTES.
#
# Generates the log once (nccl_bench --generate, in /tmp), then runs
# `gpulens nccl --format json` on it under /usr/bin/time -v and prints MB/s and
# the peak resident set size. Results are recorded in docs/PERFORMANCE.md.
set -euo pipefail

build=${1:-build/release}
bytes=${NCCL_BENCH_BYTES:-1073741824}
log=${NCCL_BENCH_LOG:-/tmp/gpulens-nccl-bench.log}

if [[ ${NCCL_BENCH_CORPUS:-0} == 1 ]]; then
  log=${NCCL_BENCH_LOG:-/tmp/gpulens-nccl-corpus.log}
  if [[ ! -f "$log" || $(stat -c %s "$log") -lt $bytes ]]; then
    echo "concatenating tests/data/nccl/*.log into $log ($bytes bytes)"
    src=$(cd "$(dirname "$0")/.." && pwd)
    cat "$src"/tests/data/nccl/*.log > "$log.one"
    : > "$log"
    while [[ $(stat -c %s "$log") -lt $bytes ]]; do
      for _ in $(seq 64); do cat "$log.one"; done >> "$log"
    done
    rm -f "$log.one"
  fi
elif [[ ! -f "$log" || $(stat -c %s "$log") -lt $((bytes * 99 / 100)) ]]; then
  echo "generating $log ($bytes bytes)"
  "$build/bench/nccl_bench" --generate "$log" --bytes "$bytes"
fi
size=$(stat -c %s "$log")
cat "$log" > /dev/null  # warm the page cache: measure parsing, not the disk

timing=$(mktemp)
trap 'rm -f "$timing"' EXIT
/usr/bin/time -v "$build/gpulens" nccl --format json "$log" > /dev/null 2> "$timing"

wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$timing")
secs=$(awk -v t="$wall" 'BEGIN { n = split(t, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }')
cpu=$(awk -F': ' '/User time|System time/ {s += $2} END {print s}' "$timing")
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$timing")
# On a shared machine the wall clock includes waiting for a CPU; CPU time does not.
awk -v b="$size" -v s="$secs" -v c="$cpu" -v r="$rss" 'BEGIN {
  printf "input            %.0f MB\n", b / 1e6
  printf "wall             %.2f s  (%.0f MB/s)\n", s, b / 1e6 / s
  printf "cpu (user+sys)   %.2f s  (%.0f MB/s)\n", c, b / 1e6 / c
  printf "peak RSS         %.1f MB\n", r / 1024 }'
