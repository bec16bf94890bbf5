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
/usr/bin/time -f "%e %M %U %S" -o "$out/hta.time" "$py" "$here/hta_reference.py" "$@" > "$out/hta.json" 2> "$out/hta.err" \
  || { cat "$out/hta.err" >&2; exit 1; }
/usr/bin/time -f "%e %M %U %S" -o "$out/g.time" "$bin" trace --compat hta --format json "$@" > "$out/g.json"
read -r hs hk hu hy < "$out/hta.time"
read -r gs gk gu gy < "$out/g.time"
echo "input: $# file(s), $((bytes / 1000000)) MB of JSON"
awk -v hs="$hs" -v hk="$hk" -v hu="$hu" -v hy="$hy" -v gs="$gs" -v gk="$gk" -v gu="$gu" -v gy="$gy" -v b="$bytes" 'BEGIN { hc = hu + hy; gc = gu + gy
  printf "HTA:     %7.2f s wall %7.2f s CPU  %7.1f MiB peak RSS\n", hs, hc, hk / 1024
  printf "gpulens: %7.2f s wall %7.2f s CPU  %7.1f MiB peak RSS  (%.0f MB/s of JSON wall, %.0f MB/s per CPU second)\n", gs, gc, gk / 1024, (gs > 0 ? b / gs / 1e6 : 0), (gc > 0 ? b / gc / 1e6 : 0)
  printf "speed-up %.1fx wall, %.1fx CPU; memory %.2f of HTA\n", (gs > 0 ? hs / gs : 0), (gc > 0 ? hc / gc : 0), gk / hk }'
python3 "$here/compare_hta.py" "$out/g.json" "$out/hta.json" | tail -1
