#!/usr/bin/env bash
# dcgm-exporter's two generations of names, and query_range's lookback, end
# to end:
#   - the golden pages of --dcgm-names and --dcgm-names=4.9
#     (tests/data/dcgm-exporter/golden*.prom) replayed give the same findings;
#   - recordings (tests/data/recordings/gen.py) in the classic names and
#     rewritten into dcgm-exporter 4.9/4.10's names and units
#     (lib/dcgm49_names.py, lowercase hostname, an hpc_job label) are
#     backfilled into a real Prometheus; `diagnose --prometheus` over a window
#     that ends 10 minutes after the recordings end gives, for each
#     generation, exactly the findings `diagnose --replay` gives of the file
#     (cause, severity, since, time held, ongoing): nothing from the
#     5-minute lookback after the data ends.
#
#   dcgm_names_test.sh GPULENS SOURCE_DIR
set -euo pipefail
gpulens=$1 src=$2
GPULENS=$gpulens
# shellcheck source=lib/stack.sh
source "$src/tests/integration/lib/stack.sh"
stack_init prometheus promtool python3 curl

# Findings of a JSON report per GPU of host $2 (all hosts without it), host
# names left out: "gpu cause severity since held ongoing".
findings() {
  python3 - "$1" "${2:-}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for h in r["hosts"]:
    if sys.argv[2] and h["host"] != sys.argv[2]:
        continue
    for g in h["gpus"]:
        for f in g["findings"]:
            print(g["gpu"], f["cause"], f["severity"], f.get("since"), f.get("held_seconds"), f.get("ongoing"))
PY
}

diag() {  # out.json args...: a diagnosis, exit 0 or 3 (findings) accepted
  local out=$1; shift
  local rc=0
  "$gpulens" diagnose "$@" --format json > "$out" 2> "$STACK/diag.err" || rc=$?
  [[ $rc == 0 || $rc == 3 ]] || { cat "$STACK/diag.err" >&2; stack_fail "diagnose $* exited $rc"; }
}

# 1. The golden pages, replayed: one point in time, the same in both namings.
# A page without timestamps is read at its file's modification time: copies
# with one mtime, so that the two namings are compared, not two checkouts.
cp "$src/tests/data/dcgm-exporter/golden.prom" "$src/tests/data/dcgm-exporter/golden-4.9.prom" "$STACK/"
touch -d @1700000000 "$STACK/golden.prom" "$STACK/golden-4.9.prom"
diag "$STACK/g-classic.json" --replay "$STACK/golden.prom"
diag "$STACK/g-49.json" --replay "$STACK/golden-4.9.prom"
findings "$STACK/g-classic.json" > "$STACK/g-classic.txt"
findings "$STACK/g-49.json" > "$STACK/g-49.txt"
[[ -s $STACK/g-classic.txt ]] || stack_fail "golden.prom replayed: no findings (XID 79 on GPU 0 expected)"
diff "$STACK/g-classic.txt" "$STACK/g-49.txt" || stack_fail "golden pages: classic and 4.9 names disagree"

# 2. Recordings in both generations through Prometheus and through replay.
start=$(( $(date +%s) / 3600 * 3600 - 3 * 3600 ))
python3 "$src/tests/data/recordings/gen.py" "$STACK/rec" --start "$start"
mkdir -p "$STACK/prom-data"
cases=(input_pipeline_cpu_15s thermal_throttle_60s)
for rec in "${cases[@]}"; do
  host=${rec%%_[0-9]*}
  sed -e "s/node1/$host-classic/g" \
    "$STACK/rec/$rec.om" > "$STACK/$rec-classic.om"
  sed -e "s/node1/$host-new/g" \
    "$STACK/rec/$rec.om" > "$STACK/$rec-renamed.om"
  python3 "$src/tests/integration/lib/dcgm49_names.py" "$STACK/$rec-renamed.om" "$STACK/$rec-new.om"
  grep -q '^DCGM_FI_DEV_GPU_UTIL_RATIO{' "$STACK/$rec-new.om" || stack_fail "rewrite left the classic names"
  for gen in classic new; do
    promtool tsdb create-blocks-from openmetrics "$STACK/$rec-$gen.om" "$STACK/prom-data" > "$STACK/promtool.log" 2>&1 \
      || stack_fail "promtool refused $rec-$gen"
  done
done
port=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' > "$STACK/prometheus.yml"
start_prometheus "$port" "$STACK/prometheus.yml"

for rec in "${cases[@]}"; do
  host=${rec%%_[0-9]*}
  read -r first last < <(awk '!/^#/ { t = $NF + 0; if (min == "" || t < min) min = t; if (t > max) max = t }
                               END { print min, max }' "$STACK/rec/$rec.om")
  step=${rec##*_}
  end=$(( last + 600 ))  # the query ends 10 minutes after the data
  range=$(( end - first ))
  for gen in classic new; do
    diag "$STACK/$rec-$gen-replay.json" --replay "$STACK/$rec-$gen.om"
    diag "$STACK/$rec-$gen-prom.json" --prometheus "http://127.0.0.1:$port" --end "$end" --range "${range}s" \
      --step "$step"
    findings "$STACK/$rec-$gen-replay.json" "$host-$gen" > "$STACK/$rec-$gen-replay.txt"
    findings "$STACK/$rec-$gen-prom.json" "$host-$gen" > "$STACK/$rec-$gen-prom.txt"
    [[ -s $STACK/$rec-$gen-replay.txt ]] || stack_fail "$rec-$gen: replay found nothing"
    diff "$STACK/$rec-$gen-replay.txt" "$STACK/$rec-$gen-prom.txt" \
      || stack_fail "$rec-$gen: --prometheus (end 10 min after the data) differs from --replay"
  done
  diff "$STACK/$rec-classic-replay.txt" "$STACK/$rec-new-replay.txt" \
    || stack_fail "$rec: the 4.9 names give other findings than the classic ones"
done
echo "ok"
