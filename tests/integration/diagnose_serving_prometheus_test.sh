#!/usr/bin/env bash
# The serving scenarios (kv-cache-pressure, overload, two-engines,
# healthy-serving) through a real Prometheus: each recorded from the
# simulator (its engines' pages read through the scrape mapping), moved
# three hours back, backfilled with `promtool tsdb create-blocks-from
# openmetrics` into one data directory (one host per scenario), served on a
# free loopback port, then diagnosed with --prometheus. Every GPU of every
# host has the same findings (cause, severity, the first evidence's detail:
# which engine, its model, its GPUs) as `diagnose --replay` of the same
# recordings, each scenario's expected cause on its GPUs, none on the
# healthy service.
#
#   diagnose_serving_prometheus_test.sh GPULENS SOURCE_DIR
#
# Exits 77 (skipped) without prometheus, promtool or curl.
set -euo pipefail
GPULENS=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/stack.sh"
stack_init prometheus promtool curl
tmp=$STACK

scenarios="kv-cache-pressure overload two-engines healthy-serving"
declare -A hosts=([kv-cache-pressure]=sim-h100-6 [overload]=sim-h100-7 [two-engines]=sim-h100-8 [healthy-serving]=sim-h100-9)
mkdir -p "$tmp/prom-data"
for s in $scenarios; do
  "$GPULENS" record --source sim --scenario "$s" --duration 20m --interval 15s -o "$tmp/$s.om" 2>"$tmp/record.log" \
    || stack_fail "record $s: $(cat "$tmp/record.log")"
  grep '^serving_engine_info{' "$tmp/$s.om" >/dev/null || stack_fail "$s: the recording names no engine's model"
  # One machine per scenario (the simulator's recording names no host, and
  # GPUs of one UUID are one GPU): its hostname on every series, its own
  # UUIDs. For Prometheus, three hours back: promtool backfills what lies
  # outside the head block.
  /usr/bin/python3 - "$tmp/$s.om" "$tmp/$s.host.om" "$tmp/$s.back.om" "${hosts[$s]}" <<'PY'
import sys
shift, host = 3 * 3600, sys.argv[4]
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as here, open(sys.argv[3], "w") as back:
    for line in f:
        if line.startswith("#") or not line.strip():
            here.write(line)
            back.write(line)
            continue
        head, ts = line.rstrip("\n").rsplit(" ", 1)
        head = head.replace('gpu_uuid="GPU-', f'gpu_uuid="GPU-{host}-')
        if "{" in head.split(" ", 1)[0]:
            head = head.replace("{", f'{{hostname="{host}",', 1)
        else:
            name, value = head.split(" ", 1)
            head = f'{name}{{hostname="{host}"}} {value}'
        here.write(f"{head} {ts}\n")
        back.write("%s %.3f\n" % (head, float(ts) - shift))
PY
  promtool tsdb create-blocks-from openmetrics "$tmp/$s.back.om" "$tmp/prom-data" > "$tmp/promtool.log" 2>&1 \
    || stack_fail "promtool refused $s: $(tail -5 "$tmp/promtool.log")"
done
# One end for all: the latest sample of the four (they were recorded one after the other).
end=$(cat "$tmp"/*.back.om | awk '!/^#/ && NF { if ($NF > t) t = $NF } END { printf "%d", t }')

port=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' > "$tmp/prometheus.yml"
start_prometheus "$port" "$tmp/prometheus.yml"

for s in $scenarios; do
  "$GPULENS" diagnose --replay "$tmp/$s.host.om" --format json --fail-on never -o "$tmp/$s.replay.json" 2>"$tmp/$s.err" \
    || stack_fail "replay $s: $(cat "$tmp/$s.err")"
done
"$GPULENS" diagnose --prometheus "http://127.0.0.1:$port" --end "$end" --range 19m --step 15s --format json \
  --fail-on never -o "$tmp/prom.json" 2>"$tmp/prom.err" || stack_fail "prometheus: $(cat "$tmp/prom.err")"

/usr/bin/python3 - "$tmp" $scenarios <<'PY' || stack_fail "the findings differ"
import json, sys
tmp, names = sys.argv[1], sys.argv[2:]
def findings(report):
    out = {}
    for h in report["hosts"]:
        for g in h["gpus"]:
            out[(h["host"], str(g["gpu"]))] = sorted(
                (f["cause"], f["severity"], (f.get("evidence") or [{}])[0].get("detail", ""))
                for f in g["findings"] if f["severity"] != "info")
    return out
prom = findings(json.load(open(f"{tmp}/prom.json")))
replay = {}
for n in names:
    replay.update(findings(json.load(open(f"{tmp}/{n}.replay.json"))))
hosts = {"kv-cache-pressure": "sim-h100-6", "overload": "sim-h100-7", "two-engines": "sim-h100-8", "healthy-serving": "sim-h100-9"}
assert set(h for h, _ in prom) == set(hosts.values()), sorted(prom)
assert prom == replay, "\n".join(f"{k}: prometheus {prom.get(k)} replay {replay.get(k)}" for k in sorted(set(prom) | set(replay)) if prom.get(k) != replay.get(k))
def causes(host, gpu):
    return [c for c, _, _ in prom[(host, str(gpu))]]
for g in range(8):
    assert "kv_cache_pressure" in causes("sim-h100-6", g), (g, prom[("sim-h100-6", str(g))])
    assert "overload" in causes("sim-h100-7", g), (g, prom[("sim-h100-7", str(g))])
    assert causes("sim-h100-9", g) == [], (g, prom[("sim-h100-9", str(g))])
    two = causes("sim-h100-8", g)
    assert ("kv_cache_pressure" in two) == (g >= 4), (g, two)
    assert "kernel_launch" not in causes("sim-h100-6", g) + causes("sim-h100-7", g) + two
# The engine, its model and its GPUs, out of Prometheus as out of the file.
detail = [d for c, _, d in prom[("sim-h100-8", "5")] if c == "kv_cache_pressure"][0]
assert detail == "engine vllm at http://127.0.0.1:8001/metrics (Qwen/Qwen2.5-32B-Instruct) pid 5001 on GPUs 4,5,6,7 (joined by pid)", detail
print("same findings on", len(prom), "GPUs")
PY
echo "PASS: the serving scenarios give the same findings through Prometheus as from their recordings"
