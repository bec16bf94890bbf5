#!/usr/bin/env bash
# Offline reports of simulated data say so, as the live views do: a recording
# of the simulator (it carries gpulens_simulated 1) diagnosed from the file
# and from a real Prometheus it was backfilled into gives a text report that
# opens with "SIMULATED DATA", JSON with "simulated": true on the host and the
# report, and an HTML report with the banner; a real scrape gives none of it.
#
#   diagnose_simulated_test.sh GPULENS SOURCE_DIR
#
# Exits 77 (skipped) without prometheus, promtool or curl.
set -euo pipefail
GPULENS=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/stack.sh"
stack_init prometheus promtool curl
tmp=$STACK

"$GPULENS" record --source sim --scenario thermal-throttle-one-gpu --duration 15m --interval 15s \
  -o "$tmp/sim.om" 2>"$tmp/record.log" || stack_fail "record: $(cat "$tmp/record.log")"
grep -q '^gpulens_simulated{' "$tmp/sim.om" || stack_fail "the recording has no gpulens_simulated series"

# check_reports WHAT ARGS...: text, JSON and HTML of one input say SIMULATED.
check_reports() {
  local what=$1; shift
  set +e
  "$GPULENS" diagnose "$@" --fail-on never > "$tmp/$what.txt" 2> "$tmp/$what.err"
  local rc=$?
  "$GPULENS" diagnose "$@" --fail-on never --format json -o "$tmp/$what.json" 2> "$tmp/$what-json.err"
  "$GPULENS" diagnose "$@" --fail-on never --format html -o "$tmp/$what.html" 2> "$tmp/$what-html.err"
  set -e
  [[ $rc == 0 ]] || stack_fail "$what: exit $rc: $(cat "$tmp/$what.err")"
  head -1 "$tmp/$what.txt" | grep '^SIMULATED DATA: host .* (scenario thermal-throttle-one-gpu) served gpulens_simulated 1' >/dev/null \
    || stack_fail "$what: the text report does not open with the banner: $(head -3 "$tmp/$what.txt")"
  /usr/bin/python3 - "$tmp/$what.json" <<'PY' || stack_fail "$what: JSON not marked: $(head -c 600 "$tmp/$what.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["simulated"] is True, r.get("simulated")
assert r["hosts"] and all(h["simulated"] and h["scenario"] == "thermal-throttle-one-gpu" for h in r["hosts"]), r["hosts"]
PY
  grep -q '<p class="banner" id="simulated">SIMULATED DATA: host' "$tmp/$what.html" \
    || stack_fail "$what: the HTML report has no banner"
  grep -q '^gpulens diagnose: SIMULATED DATA' "$tmp/$what-json.err" \
    || stack_fail "$what: --format json -o says nothing on stderr: $(cat "$tmp/$what-json.err")"
}

check_reports replay --replay "$tmp/sim.om"

# Real data: no banner, "simulated": false.
"$GPULENS" diagnose --replay "$src/tests/data/dcgm-exporter/golden.prom" --fail-on never > "$tmp/real.txt"
! grep -q SIMULATED "$tmp/real.txt" || stack_fail "a real scrape is reported as simulated"
"$GPULENS" diagnose --replay "$src/tests/data/dcgm-exporter/golden.prom" --fail-on never --format json \
  | grep '"simulated":false' >/dev/null || stack_fail "a real scrape's JSON lacks \"simulated\":false"

# Through Prometheus: the recording three hours back (promtool backfills
# what lies outside the head block), served on a free port.
/usr/bin/python3 - "$tmp/sim.om" "$tmp/back.om" <<'PY'
import sys
shift = 3 * 3600
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in f:
        if line.startswith("#") or not line.strip():
            out.write(line)
            continue
        head, ts = line.rstrip("\n").rsplit(" ", 1)
        out.write("%s %.3f\n" % (head, float(ts) - shift))
PY
end=$(awk '!/^#/ && NF { t = $NF } END { printf "%d", t }' "$tmp/back.om")
mkdir -p "$tmp/prom-data"
promtool tsdb create-blocks-from openmetrics "$tmp/back.om" "$tmp/prom-data" > "$tmp/promtool.log" 2>&1 \
  || stack_fail "promtool refused the recording: $(tail -5 "$tmp/promtool.log")"
port=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' > "$tmp/prometheus.yml"
start_prometheus "$port" "$tmp/prometheus.yml"
check_reports prometheus --prometheus "http://127.0.0.1:$port" --end "$end" --range 14m --step 15s
echo "PASS: replay and Prometheus reports of simulated data say SIMULATED"
