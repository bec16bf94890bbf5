#!/usr/bin/env bash
# gpulens record: interrupted after 3 s (SIGINT, SIGTERM, SIGHUP) it leaves a
# file promtool loads; the virtual clock is announced; --url exports a running
# agent's history (promtool loads it too); a .gz name writes gzip, which
# diagnose --replay reads by its magic bytes whatever the name; a recording cut
# mid-timestamp is read up to its last complete line (no sample from 1970); the
# API refuses unknown parameters.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init promtool curl

for sig in INT TERM HUP; do
  "$GPULENS" record --source sim --realtime --duration 10m -o "$STACK/$sig.om" 2>"$STACK/$sig.log" &
  pid=$!
  sleep 3
  kill -"$sig" "$pid"
  wait "$pid" || stack_fail "record stopped by SIG$sig exited $?"
  [[ $(tail -n1 "$STACK/$sig.om") == "# EOF" ]] || stack_fail "SIG$sig: the file does not end in # EOF"
  grep -q "stopped by SIG$sig" "$STACK/$sig.log" || stack_fail "SIG$sig: not reported"
  promtool tsdb create-blocks-from openmetrics "$STACK/$sig.om" "$STACK/blocks-$sig" >"$STACK/promtool-$sig.log" 2>&1 ||
    stack_fail "promtool refused the recording stopped by SIG$sig: $(tail -3 "$STACK/promtool-$sig.log")"
  grep -q 'gpu_sm_active_ratio{gpu="7"' "$STACK/$sig.om" || stack_fail "SIG$sig: no GPU 7 series"
done

# The virtual clock is announced.
"$GPULENS" record --source sim --duration 30m -o "$STACK/virtual.om" 2>"$STACK/virtual.log"
grep -q "virtual clock" "$STACK/virtual.log" || stack_fail "the virtual clock is not announced"
promtool tsdb create-blocks-from openmetrics "$STACK/virtual.om" "$STACK/blocks-virtual" >/dev/null 2>&1 ||
  stack_fail "promtool refused the virtual-clock recording"

# A .gz name: gzip, its size said; replay reads it, and a copy without the
# .gz name (by magic); the same samples as the text.
"$GPULENS" record --source sim --duration 30m -o "$STACK/virtual.om.gz" 2>"$STACK/gz.log"
grep -q "bytes gzip" "$STACK/gz.log" || stack_fail "the gzip size is not said: $(cat "$STACK/gz.log")"
gzip -t "$STACK/virtual.om.gz" || stack_fail "record -o x.om.gz did not write gzip"
[[ $(gzip -dc "$STACK/virtual.om.gz" | grep -c '^gpu_') == $(grep -c '^gpu_' "$STACK/virtual.om") ]] ||
  stack_fail "the gzip recording holds another number of samples than the text one"
cp "$STACK/virtual.om.gz" "$STACK/renamed.om"
for f in virtual.om.gz renamed.om; do
  rc=0
  "$GPULENS" diagnose --replay "$STACK/$f" --format json >"$STACK/$f.json" 2>"$STACK/$f.log" || rc=$?
  ((rc == 0 || rc == 3)) || stack_fail "diagnose --replay $f exited $rc: $(cat "$STACK/$f.log")"
  grep -q '"gpus"' "$STACK/$f.json" || stack_fail "diagnose --replay $f: no report"
done
# Cut mid-timestamp, no # EOF: read up to the last complete sample, the line named.
# (a GPU sample the diagnosis reads, its timestamp cut to "17").
head -n -1 "$STACK/virtual.om" >"$STACK/cut2.om"
lines=$(($(wc -l <"$STACK/cut2.om") + 1))
last=$(grep -m1 '^gpu_utilization_ratio{' "$STACK/cut2.om")
printf '%s 17' "${last% *}" >>"$STACK/cut2.om"
rc=0
"$GPULENS" diagnose --replay "$STACK/cut2.om" --format json >"$STACK/cut.json" 2>"$STACK/cut.log" || rc=$?
((rc == 0 || rc == 3)) || stack_fail "diagnose --replay of a cut recording exited $rc: $(cat "$STACK/cut.log")"
"$GPULENS" diagnose --replay "$STACK/cut2.om" >"$STACK/cut.txt" 2>&1 || true
grep -q "cut2.om:$lines: last line cut short" "$STACK/cut.txt" || stack_fail "the cut line is not named: $(head -5 "$STACK/cut.txt")"
grep -q '"1970-' "$STACK/cut.json" && stack_fail "a sample from 1970 was read from the cut line"

# --url: the agent's own history, not a new sampling.
port=$(free_port)
start_agent url "$port" --source sim --scenario thermal-throttle-one-gpu --interval 1s
sleep 4
"$GPULENS" record --url "127.0.0.1:$port/" --duration 1h -o "$STACK/url.om" 2>"$STACK/url.log" ||
  stack_fail "record --url failed: $(cat "$STACK/url.log")"
[[ $(tail -n1 "$STACK/url.om") == "# EOF" ]] || stack_fail "--url: no # EOF"
grep -q 'its data is simulated' "$STACK/url.log" || stack_fail "--url: the simulated agent is not said to be"
promtool tsdb create-blocks-from openmetrics "$STACK/url.om" "$STACK/blocks-url" >"$STACK/promtool-url.log" 2>&1 ||
  stack_fail "promtool refused the --url recording: $(tail -3 "$STACK/promtool-url.log")"
samples=$(grep -c '^gpu_temperature_celsius{gpu="5"' "$STACK/url.om")
((samples >= 3)) || stack_fail "--url: $samples samples of GPU 5's temperature, expected the agent's history (>= 3)"
# A counter comes back as a counter (non-decreasing).
grep '^gpu_pcie_rx_bytes_total{gpu="0"' "$STACK/url.om" | awk '{ if (NR > 1 && $2 < prev) bad=1; prev=$2 } END { exit bad }' ||
  stack_fail "--url: gpu_pcie_rx_bytes_total decreases"
"$GPULENS" diagnose --replay "$STACK/url.om" >/dev/null 2>&1 || stack_fail "diagnose --replay cannot read the --url recording"
# No agent there: a clear error, exit 1.
dead=$(free_port)
if "$GPULENS" record --url "127.0.0.1:$dead" -o "$STACK/dead.om" 2>"$STACK/dead.log"; then stack_fail "record --url of nothing succeeded"; fi
grep -q "127.0.0.1:$dead" "$STACK/dead.log" || stack_fail "the error does not name the agent: $(cat "$STACK/dead.log")"

# Query parameters are honoured or refused, naming the parameter.
base="http://127.0.0.1:$port"
code=$(curl -s -o "$STACK/q.txt" -w '%{http_code}' "$base/api/v1/findings?rnage=5m")
[[ $code == 400 ]] && grep -q '"rnage"' "$STACK/q.txt" || stack_fail "findings?rnage: $code $(cat "$STACK/q.txt")"
curl -fs "$base/api/v1/findings?range=5m" >/dev/null || stack_fail "findings?range=5m refused"
curl -fs "$base/api/v1/current?gpu=5" >"$STACK/cur.json"
# (a node series' labels may name a GPU too: {"gpu":"4"} of a process's affinity)
grep -q '{"gpu":"5","uuid"' "$STACK/cur.json" && ! grep -q '{"gpu":"4","uuid"' "$STACK/cur.json" ||
  stack_fail "current?gpu=5 is not GPU 5 alone"
code=$(curl -s -o "$STACK/q.txt" -w '%{http_code}' "$base/api/v1/current?gpu=9")
[[ $code == 400 ]] && grep -q 'gpu' "$STACK/q.txt" || stack_fail "current?gpu=9: $code"
code=$(curl -s -o "$STACK/q.txt" -w '%{http_code}' "$base/api/v1/current?gpus=1")
[[ $code == 400 ]] && grep -q '"gpus"' "$STACK/q.txt" || stack_fail "current?gpus: $code"
echo "PASS"
