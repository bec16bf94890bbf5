#!/bin/bash
# Runs `gpulens trace --compat hta` and HolisticTraceAnalysis side by side on
# the same traces: wall time and peak memory of each whole process (load plus
# every analysis), then the numbers field by field (tolerance 0.5 %).
#
# usage: HTA_DIR=/path/to/HolisticTraceAnalysis bench/trace-vs-hta.sh GPULENS_BIN TRACE...
#   HTA_EXTRA_PATH: extra Python path (for modules HTA imports but never uses here)
#   PYTHON: the interpreter with pandas/numpy/plotly (default /usr/bin/python3)
set -euo pipefail
bin=$1; shift
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
py=${PYTHON:-/usr/bin/python3}
bytes=0
for f in "$@"; do
  case $f in *.gz) n=$(gzip -dc "$f" | wc -c) ;; *) n=$(wc -c < "$f") ;; esac
  bytes=$((bytes + n))
done
/usr/bin/time -f "%e %M" -o "$out/hta.time" "$py" "$here/hta_reference.py" "$@" > "$out/hta.json" 2> "$out/hta.err" \
  || { cat "$out/hta.err" >&2; exit 1; }
/usr/bin/time -f "%e %M" -o "$out/g.time" "$bin" trace --compat hta --format json "$@" > "$out/g.json"
read -r hs hk < "$out/hta.time"
read -r gs gk < "$out/g.time"
echo "input: $# file(s), $((bytes / 1000000)) MB of JSON"
awk -v hs="$hs" -v hk="$hk" -v gs="$gs" -v gk="$gk" -v b="$bytes" 'BEGIN {
  printf "HTA:     %7.2f s  %7.1f MiB peak RSS\n", hs, hk / 1024
  printf "gpulens: %7.2f s  %7.1f MiB peak RSS  (%.0f MB/s of JSON)\n", gs, gk / 1024, (gs > 0 ? b / gs / 1e6 : 0)
  printf "speed-up %.1fx, memory %.2f of HTA\n", (gs > 0 ? hs / gs : 0), gk / hk }'
python3 "$here/compare_hta.py" "$out/g.json" "$out/hta.json" | tail -1
