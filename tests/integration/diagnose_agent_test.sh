#!/usr/bin/env bash
# Where people look: `gpulens diagnose --agent URL` prints a running agent's
# findings as the text or JSON report (optionally over --range), and
# `gpulens snapshot --url` lists them under the table. The agent runs the
# simulator with a GPU that falls off the bus at once (XID 79, no duration),
# so a finding fires within a few samples; a bad --range is refused by the
# agent (exit 2) and a dead agent is exit 1.
#
#   diagnose_agent_test.sh GPULENS SOURCE_DIR
set -euo pipefail
GPULENS=$1 src=$2
source "$src/tests/integration/lib/stack.sh"
stack_init python3 curl
tmp=$STACK

cat > "$tmp/xid.yaml" <<'YAML'
name: xid-now
description: GPU 2 falls off the bus at once.
node: {hostname: sim-agent-test, gpu_model: h100-sxm, gpus: 4, cpus: 32}
phases:
  - name: steady
    duration: 1h
    workload: {kind: training, duty: 0.96, sm_efficiency: 0.9, tensor: 0.6, dram: 0.4, cpu_busy: 0.3}
faults:
  - {kind: xid, xid: 79, gpu: 2, after: 0s}
YAML
port=$(free_port)
start_agent xid "$port" --source sim --scenario "$tmp/xid.yaml" --interval 200ms
url="http://127.0.0.1:$port"
# Wait until the agent's diagnosis has the fault.
for _ in $(seq 100); do
  curl -sf "$url/api/v1/findings" | grep '"cause":"hardware_errors"' >/dev/null && break
  sleep 0.2
done

rc=0
"$GPULENS" diagnose --agent "$url" --color never > "$tmp/out.txt" 2> "$tmp/err.txt" || rc=$?
[[ $rc == 3 ]] || stack_fail "--agent text: exit $rc, want 3: $(cat "$tmp/err.txt")"
grep -q "host sim-agent-test" "$tmp/out.txt" || stack_fail "no host line: $(cat "$tmp/out.txt")"
grep -q "CRITICAL  hardware_errors (health)" "$tmp/out.txt" || stack_fail "no finding: $(cat "$tmp/out.txt")"
grep -q "XID 79" "$tmp/out.txt" || stack_fail "no action: $(cat "$tmp/out.txt")"

rc=0
"$GPULENS" diagnose --agent "$url/" --range 1m --format json > "$tmp/out.json" 2> "$tmp/err.txt" || rc=$?
[[ $rc == 3 ]] || stack_fail "--agent json: exit $rc, want 3: $(cat "$tmp/err.txt")"
python3 - "$tmp/out.json" <<'PY' || stack_fail "unexpected JSON: $(head -c 1500 "$tmp/out.json")"
import json, sys
r = json.load(open(sys.argv[1]))
g = {x["gpu"]: x for x in r["hosts"][0]["gpus"]}
f = g["2"]["findings"][0]
assert f["cause"] == "hardware_errors" and f["severity"] == "critical" and f["state"] == "firing", f
assert f["explained_by"] is None, f
# The evidence carries the series the agent judged, bounded (docs/diagnose.md#json).
s = f["evidence"][0]["series"]
assert f["evidence"][0]["signal"] == "last_xid" and 0 < len(s["t"]) == len(s["v"]) <= 600, f["evidence"]
assert s["v"][-1] == 79 and s["t"] == sorted(s["t"]), s
PY

# The HTML report over an agent plots the series its findings carry.
rc=0
"$GPULENS" diagnose --agent "$url" --format html -o "$tmp/report.html" 2> "$tmp/err.txt" || rc=$?
[[ $rc == 3 ]] || stack_fail "--agent html: exit $rc, want 3: $(cat "$tmp/err.txt")"
python3 - "$tmp/report.html" <<'PY' || stack_fail "the HTML report over the agent plots nothing"
import json, re, sys
page = open(sys.argv[1]).read()
data = json.loads(re.search(r'<script type="application/json" id="gpulens-data">(.*?)</script>', page, re.S).group(1))
plots = [e for e in data["evidence"] if e["gpu"] == "2" and e["signal"] == "last_xid"]
assert plots and plots[0]["v"] and plots[0]["v"][-1] == 79, data["evidence"][:2]
PY

rc=0
"$GPULENS" diagnose --agent "$url" --range 1000h > /dev/null 2> "$tmp/err.txt" || rc=$?
[[ $rc == 2 ]] || stack_fail "--range beyond the history: exit $rc, want 2"
grep -q "longer than the history" "$tmp/err.txt" || stack_fail "bad range message: $(cat "$tmp/err.txt")"

rc=0
"$GPULENS" diagnose --agent "http://127.0.0.1:1" > /dev/null 2> "$tmp/err.txt" || rc=$?
[[ $rc == 1 ]] || stack_fail "dead agent: exit $rc, want 1"
grep -q "agent http://127.0.0.1:1" "$tmp/err.txt" || stack_fail "dead agent message: $(cat "$tmp/err.txt")"

# The snapshot lists the findings under its table.
"$GPULENS" snapshot --url "$url" > "$tmp/snap.txt" 2> "$tmp/err.txt" || stack_fail "snapshot: $(cat "$tmp/err.txt")"
python3 - "$tmp/snap.txt" <<'PY' || stack_fail "snapshot findings: $(cat "$tmp/snap.txt")"
import sys
text = open(sys.argv[1]).read()
head, sep, tail = text.partition("\nfindings")
assert sep, "no findings section"
assert "GPU 2" in tail and "CRITICAL  hardware_errors" in tail, tail
assert "NVIDIA" in head, "the table comes first"
PY
echo "ok"
