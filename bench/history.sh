#!/usr/bin/env bash
# The in-memory history's cost, before and after, in one run:
#   1. RSS (VmRSS, VmHWM from /proc/PID/status) of `gpulens serve` on the
#      simulator (8 GPUs, every field) with the hour of history allocated
#      (--sim-prefill 1h), at --interval 1s and 100ms, for each binary given
#   2. bytes per stored value (the agent's gpulens_history_bytes_per_sample)
#      over every scenario of scenarios/ at 1 s, hour prefilled
#   3. history_bench (append ns per value, bytes per value, the full-window
#      read from plain float rings against the compressed chunks) on an hour
#      of the simulator at 1 s and on the diagnosis test recordings
#      (tests/data/recordings/gen.py)
#   4. `gpulens record` size per node-minute, text and gzip
#   5. Prometheus' TSDB on the same hour of the simulator: the recording
#      backfilled with `promtool tsdb create-blocks-from openmetrics`, the
#      blocks' bytes (chunks, index, meta) per sample
# Usage: [PARTS="1 2 3 4 5"] bench/history.sh BUILD_DIR [BEFORE_GPULENS]
#   BUILD_DIR holds gpulens and bench/history_bench; BEFORE_GPULENS is an
#   older gpulens binary to measure beside it in step 1.
set -euo pipefail
build=$1
before=${2:-}
parts=${PARTS:-1 2 3 4 5}
part() { [[ " $parts " == *" $1 "* ]]; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }
metric() { curl -sf "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }

# serve BINARY INTERVAL [SCENARIO]: starts it with the hour prefilled, waits
# until it answers (the prefill is done), leaves PORT and PID set.
serve() {
  PORT=$(free_port)
  local args=(serve --source sim --interval "$2" --sim-prefill 1h --listen "127.0.0.1:$PORT")
  [[ -n ${3:-} ]] && args+=(--scenario "$3")
  local t0=$SECONDS
  "$1" "${args[@]}" 2>"$work/serve.err" &
  PID=$!
  pids+=("$PID")
  until curl -sf -o /dev/null "http://127.0.0.1:$PORT/metrics"; do
    kill -0 "$PID" 2>/dev/null || { cat "$work/serve.err" >&2; exit 1; }
    sleep 1
  done
  PREFILL=$((SECONDS - t0))
}
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; }

mib() { printf '%.1f' "$(echo "$(kib "$1" "$2") / 1024" | bc -l)"; }
if part 1; then
echo "## 1. RSS with the hour of history (8 simulated GPUs, every field)"
echo "VmRSS once the prefill is done, and 20 s later (after the first periodic diagnosis); VmHWM then."
echo "| binary | interval | MALLOC_ARENA_MAX | VmRSS MiB | VmRSS +20 s | VmHWM MiB | history bytes | bytes/value | prefill s |"
echo "|---|---|---|---|---|---|---|---|---|"
for interval in 1s 100ms; do
  for arenas in "" 1; do
    for bin in ${before:+"$before"} "$build/gpulens"; do
      if [[ -n $arenas ]]; then export MALLOC_ARENA_MAX=$arenas; else unset MALLOC_ARENA_MAX; fi
      serve "$bin" "$interval"
      unset MALLOC_ARENA_MAX
      rss0=$(mib "$PID" VmRSS)
      sleep 20  # a periodic diagnosis and a few records after the prefill
      hb=$(metric "$PORT" gpulens_history_bytes)
      bps=$(metric "$PORT" gpulens_history_bytes_per_sample)
      echo "| $bin | $interval | ${arenas:-default} | $rss0 | $(mib "$PID" VmRSS) | $(mib "$PID" VmHWM) | ${hb:-—} | ${bps:-—} | $PREFILL |"
      stop
    done
  done
done
fi

if part 2; then
echo
echo "## 2. Bytes per stored value by scenario (1 s, hour prefilled)"
echo "| scenario | series | bytes/value |"
echo "|---|---|---|"
sum=0
n=0
for f in "$root"/scenarios/*.yaml; do
  s=$(basename "$f" .yaml)
  serve "$build/gpulens" 1s "$s"
  bps=$(metric "$PORT" gpulens_history_bytes_per_sample)
  series=$(metric "$PORT" gpulens_series)
  echo "| $s | $series | $bps |"
  sum=$(echo "$sum + $bps" | bc -l)
  n=$((n + 1))
  stop
done
printf '| **mean of %d** | | **%.3f** |\n' "$n" "$(echo "$sum / $n" | bc -l)"
fi

if part 3; then
echo
echo "## 3. history_bench"
"$build/gpulens" record --source sim --duration 1h --interval 1s -o "$work/sim.om" 2>/dev/null
echo "### an hour of the simulator at 1 s (default scenario)"
"$build/bench/history_bench" "$work/sim.om" --benchmark_min_time=2
python3 "$root/tests/data/recordings/gen.py" "$work/rec" >/dev/null
echo "### the diagnosis test recordings (tests/data/recordings/gen.py), side by side"
mapfile -t recs < <(find "$work/rec" -name '*.om' | sort)
"$build/bench/history_bench" "${recs[@]}" --benchmark_min_time=2
fi

if part 4; then
echo
echo "## 4. Recording size per node-minute (simulator, 8 GPUs, 10 min at 1 s)"
for ext in om om.gz; do
  "$build/gpulens" record --source sim --duration 10m --interval 1s -o "$work/ten.$ext" 2>/dev/null
  bytes=$(stat -c %s "$work/ten.$ext")
  echo "$ext: $bytes bytes for 10 minutes = $((bytes / 10)) bytes per node-minute"
done
fi

if part 5; then
echo
echo "## 5. Prometheus' TSDB on the same data (an hour of the simulator at 1 s)"
[[ -e "$work/sim.om" ]] || "$build/gpulens" record --source sim --duration 1h --interval 1s -o "$work/sim.om" 2>/dev/null
samples=$(grep -vc '^#' "$work/sim.om")
promtool tsdb create-blocks-from openmetrics "$work/sim.om" "$work/tsdb" >/dev/null
bytes=$(find "$work/tsdb" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
chunks=$(find "$work/tsdb" -path '*/chunks/*' -type f -printf '%s\n' | awk '{s += $1} END {print s}')
echo "samples $samples; blocks $bytes bytes ($(echo "scale=3; $bytes / $samples" | bc) bytes per sample), of which chunks $chunks ($(echo "scale=3; $chunks / $samples" | bc))"
fi
