#!/usr/bin/env bash
# The offline HTML reports in Debian's chromium (tests/browser/report_test.mjs),
# opened from disk with every request blocked: `diagnose --format html` on a
# recording of thermal-throttle-one-gpu (the finding on GPU 5 only, its
# evidence plotted with thresholds, waste per cause), on the two hosts of one
# job (the jobs table first, with its root) and `trace --format html`
# on the two ranks of a real DLRM trace (per rank and across ranks) and on a
# CPU-only trace of Debian's torch (its top CPU ops); and a
# trace whose kernel names are hostile HTML ("<!--<script>", "</script>",
# quotes, an onerror attribute): the report still renders, shows the name
# as text, and no script of it runs.
#   report_html_test.sh GPULENS SOURCE_DIR BUILD_DIR
set -euo pipefail
GPULENS=$1 SRC=$2 BUILD=$3
source "$(dirname "$0")/lib/stack.sh"
stack_init chromium node npm

mods=$BUILD/browser-tests
if [[ ! -f $mods/node_modules/.package-lock.json || $SRC/tests/browser/package-lock.json -nt $mods/node_modules/.package-lock.json ]]; then
  mkdir -p "$mods"
  cp "$SRC/tests/browser/package.json" "$SRC/tests/browser/package-lock.json" "$mods/"
  (cd "$mods" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error) >"$STACK/npm.log" 2>&1 ||
    stack_fail "npm ci of the browser tests: $(tail -3 "$STACK/npm.log")"
fi
cp "$SRC/tests/browser/report_test.mjs" "$mods/"

"$GPULENS" record --source sim --scenario thermal-throttle-one-gpu --duration 30m -o "$STACK/thermal.om" 2>"$STACK/record.log"
rc=0; "$GPULENS" diagnose --replay "$STACK/thermal.om" --format html -o "$STACK/diagnose.html" 2>"$STACK/diagnose.log" || rc=$?
((rc == 3)) || stack_fail "diagnose --format html exited $rc (3: findings)"
if grep -Eq '(src|href)="(https?:)?//' "$STACK/diagnose.html"; then stack_fail "the diagnose report links outside itself"; fi
node "$mods/report_test.mjs" diagnose "$STACK/diagnose.html" 5 thermal_throttle || stack_fail "diagnose report in chromium"

# One job on two hosts (docs/jobs.md): the jobs table first, rooted at GPU 4 of trn-a.
for h in a b; do
  "$GPULENS" record --source sim --scenario "two-host-lost-gpu-$h" --duration 20m -o "$STACK/$h.om" 2>"$STACK/record.log"
done
python3 "$SRC/tests/integration/merge_recordings.py" "$STACK/both.om" trn-a="$STACK/a.om" trn-b="$STACK/b.om"
"$GPULENS" diagnose --replay "$STACK/both.om" --format html -o "$STACK/jobs.html" --fail-on never 2>"$STACK/diagnose.log" ||
  stack_fail "diagnose --format html of two hosts failed"
REPORT_JOB=81234@trn-a/4 node "$mods/report_test.mjs" diagnose "$STACK/jobs.html" 4 hardware_errors ||
  stack_fail "jobs report in chromium"

"$GPULENS" trace "$SRC"/tests/data/traces/dlrm_kineto/worker*.json --format html -o "$STACK/trace.html" 2>"$STACK/trace.log" ||
  stack_fail "trace --format html failed"
node "$mods/report_test.mjs" trace "$STACK/trace.html" 2 || stack_fail "trace report in chromium"

# A CPU-only trace (Debian's CPU torch 1.13, the autograd profiler's export): its top CPU ops table.
"$GPULENS" trace "$SRC/tests/data/traces/torch1.13-cpu-train.json" --format html -o "$STACK/cpu.html" 2>"$STACK/cpu.log" ||
  stack_fail "trace --format html of a CPU-only trace failed"
node "$mods/report_test.mjs" trace "$STACK/cpu.html" cpu-ops aten::mm || stack_fail "CPU-only trace report in chromium"

# Hostile kernel names: the kernel with the most GPU time of one DLRM rank
# renamed (so it heads the rank's top-kernels table).
hostile='<!--<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">'"'"'&amp;'
HOSTILE=$hostile python3 -c '
import collections, json, os, sys
d = json.load(sys.stdin)
ev = d["traceEvents"] if isinstance(d, dict) else d
time = collections.Counter()
for e in ev:
    if e.get("cat") == "kernel": time[e.get("name")] += e.get("dur", 0)
top = time.most_common(1)[0][0]
for e in ev:
    if e.get("name") == top: e["name"] = os.environ["HOSTILE"]
json.dump(d, sys.stdout)' <"$(ls "$SRC"/tests/data/traces/dlrm_kineto/worker0*.json)" >"$STACK/hostile.json"
"$GPULENS" trace "$STACK/hostile.json" --format html -o "$STACK/hostile.html" 2>"$STACK/hostile.log" ||
  stack_fail "trace --format html on the hostile trace failed"
grep -q '<!--<script>' "$STACK/hostile.html" && stack_fail "the hostile name is in the page raw"
REPORT_SHOWS=$hostile node "$mods/report_test.mjs" trace "$STACK/hostile.html" 1 || stack_fail "hostile trace report in chromium"
